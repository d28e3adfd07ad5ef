package main

import (
	"fmt"
	"path/filepath"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/dpal-dev/dpal/data"
	"github.com/dpal-dev/dpal/outfile"
	"github.com/dpal-dev/dpal/repro/ocprepro"
)

var reproOCPCmd = &cobra.Command{
	Use:   "ocp",
	Short: "Reproduce Jain, Kothari & Thakurta (2012) App. G, Fig. 2: private FTL regret, private IGD accuracy",
	Long: `Fig. 2(a): average regret against t of FTL and private FTL (tree sums) on
synthetic regression, d = 10, T = 10^5, eps in {10, 1, 0.1, 0.01}, delta = 0.01,
with the paper's sigma and with the exact calibration. Fig. 2(b): the same on
Beijing air quality (the stand-in for YearPredictionMSD). Fig. 2(c) analogue:
test accuracy of private IGD logistic regression on KDD Cup 99 (the stand-in
for CoverType) at eps in {20, 10, 1, 0.1}, beside non-private IGD and the
online-to-batch learner POL at the same eps. Regret against T on log-log axes
with fitted slopes, and every run's nominal, exact and charged eps.
Writes <out>/fig2a.png/.csv, fig2b.*, fig2c.*, regret_vs_T.*, epsilons.csv and
summary.json. --quick is a small smoke run.`,
	Args: cobra.NoArgs,
	RunE: runReproOCP,
}

func init() {
	f := reproOCPCmd.Flags()
	f.String("data-dir", data.DefaultDir, "data root holding beijing_air_quality/ and kddcup99/")
	f.String("out", "repro-ocp", "output directory")
	f.Uint64("seed", 0, "seed of the data order and every run's noise (default: drawn at random and reported)")
	f.StringSlice("figures", []string{"2a", "2b", "2c", "regret"}, "figures to make: 2a, 2b, 2c, regret")
	f.Int("synth-t", 0, "Fig. 2(a) horizon T (default 100000, the paper's)")
	f.Int("beijing-t", 0, "Fig. 2(b) horizon T (default: the whole training part, 344,115)")
	f.Int("kdd-t", 0, "Fig. 2(c) training records (default: all 494,021)")
	f.Int("repeats", 0, "Fig. 2(c) shuffles per row (default 10, the paper's)")
	f.IntSlice("regret-t", nil, "horizons of the regret-vs-T figure (default 1e3,3e3,1e4,3e4,1e5)")
	f.Float64("igd-alpha", 0.01, "PIGD's regulariser alpha (the paper gives none)")
	f.Float64("igd-radius", 10, "PIGD's ball radius (the paper gives none)")
	f.Bool("quick", false, "small smoke run (seconds)")
	f.Bool("no-progress", false, "do not draw the progress bars")
	reproCmd.AddCommand(reproOCPCmd)
}

func runReproOCP(cmd *cobra.Command, _ []string) error {
	f := cmd.Flags()
	opt := ocprepro.DefaultOptions()
	if q, _ := f.GetBool("quick"); q {
		opt = ocprepro.QuickOptions()
	}
	opt.OutDir, _ = f.GetString("out")
	if err := outfile.ProbeDir(opt.OutDir); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	opt.DataDir, _ = f.GetString("data-dir")
	opt.Figures, _ = f.GetStringSlice("figures")
	opt.IGDAlpha, _ = f.GetFloat64("igd-alpha")
	opt.IGDRadius, _ = f.GetFloat64("igd-radius")
	for flag, dst := range map[string]*int{"synth-t": &opt.SynthT, "beijing-t": &opt.BeijingT, "kdd-t": &opt.KDDT, "repeats": &opt.Repeats} {
		if f.Changed(flag) {
			*dst, _ = f.GetInt(flag)
			if *dst < 0 {
				return fmt.Errorf("--%s must be >= 0", flag)
			}
		}
	}
	if opt.Repeats < 1 {
		return fmt.Errorf("--repeats must be >= 1")
	}
	if ts, _ := f.GetIntSlice("regret-t"); len(ts) > 0 {
		opt.RegretTs = ts
	}
	seed, err := experimentSeed(cmd, "repro ocp")
	if err != nil {
		return err
	}
	opt.Seed = seed
	opt.Progress = progressOut(cmd)
	sum, err := ocprepro.Reproduce(opt)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "figure\trun\tT\tfinal\texact ε\tcharged ε\tseconds\n")
	for _, r := range sum.Runs {
		if r.Repeat > 0 {
			continue
		}
		exact, charged := "-", "-"
		if r.Privacy != nil {
			exact, charged = fmt.Sprintf("%.4g", r.Privacy.ExactEpsilon), fmt.Sprintf("%.4g", r.Privacy.ChargedEpsilon)
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%.4g\t%s\t%s\t%.1f\n", r.Figure, r.Name, r.Spec.Steps, r.Final, exact, charged, r.Seconds)
	}
	for _, s := range sum.Slopes {
		fmt.Fprintf(w, "slope\t%s\t\t%.3f\t(theory: %s)\t\t\n", s.Name, s.Slope, s.Theory)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "seed %d; outputs in %s\n", seed, filepath.Clean(opt.OutDir))
	return nil
}
