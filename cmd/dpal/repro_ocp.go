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

// reproOCPOptions are the flags of `dpal repro ocp`; they override the
// defaults of ocprepro.DefaultOptions or, under --quick, QuickOptions.
type reproOCPOptions struct {
	DataDir, Out                    string
	Seed                            uint64
	Figures                         []string
	SynthT, BeijingT, KDDT, Repeats int
	RegretT                         []int
	IGDAlpha, IGDRadius             float64
	Quick, NoProgress               bool
}

var reproOCPOpts reproOCPOptions

func init() {
	f, fl := reproOCPCmd.Flags(), &reproOCPOpts
	f.StringVar(&fl.DataDir, "data-dir", data.DefaultDir, "data root holding beijing_air_quality/ and kddcup99/")
	f.StringVar(&fl.Out, "out", "repro-ocp", "output directory")
	f.Uint64Var(&fl.Seed, "seed", 0, "seed of the data order and every run's noise (default: drawn at random and reported)")
	f.StringSliceVar(&fl.Figures, "figures", []string{"2a", "2b", "2c", "regret"}, "figures to make: 2a, 2b, 2c, regret")
	f.IntVar(&fl.SynthT, "synth-t", 0, "Fig. 2(a) horizon T (default 100000, the paper's)")
	f.IntVar(&fl.BeijingT, "beijing-t", 0, "Fig. 2(b) horizon T (default: the whole training part, 344,115)")
	f.IntVar(&fl.KDDT, "kdd-t", 0, "Fig. 2(c) training records (default: all 494,021)")
	f.IntVar(&fl.Repeats, "repeats", 0, "Fig. 2(c) shuffles per row (default 10, the paper's)")
	f.IntSliceVar(&fl.RegretT, "regret-t", nil, "horizons of the regret-vs-T figure (default 1e3,3e3,1e4,3e4,1e5)")
	f.Float64Var(&fl.IGDAlpha, "igd-alpha", 0.01, "PIGD's regulariser alpha (the paper gives none)")
	f.Float64Var(&fl.IGDRadius, "igd-radius", 10, "PIGD's ball radius (the paper gives none)")
	f.BoolVar(&fl.Quick, "quick", false, "small smoke run (seconds)")
	f.BoolVar(&fl.NoProgress, "no-progress", false, "do not draw the progress bars")
	reproCmd.AddCommand(reproOCPCmd)
}

func runReproOCP(cmd *cobra.Command, _ []string) error {
	f, fl := cmd.Flags(), &reproOCPOpts
	opt := ocprepro.DefaultOptions()
	if fl.Quick {
		opt = ocprepro.QuickOptions()
	}
	opt.OutDir = fl.Out
	if err := outfile.ProbeDir(opt.OutDir); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	opt.DataDir = fl.DataDir
	opt.Figures = append([]string{}, fl.Figures...) // the run's own copy
	opt.IGDAlpha, opt.IGDRadius = fl.IGDAlpha, fl.IGDRadius
	for _, h := range []struct {
		flag  string
		dst   *int
		given int
	}{{"synth-t", &opt.SynthT, fl.SynthT}, {"beijing-t", &opt.BeijingT, fl.BeijingT}, {"kdd-t", &opt.KDDT, fl.KDDT}, {"repeats", &opt.Repeats, fl.Repeats}} {
		if f.Changed(h.flag) {
			if *h.dst = h.given; h.given < 0 {
				return fmt.Errorf("--%s must be >= 0", h.flag)
			}
		}
	}
	if opt.Repeats < 1 {
		return fmt.Errorf("--repeats must be >= 1")
	}
	if len(fl.RegretT) > 0 {
		opt.RegretTs = append([]int(nil), fl.RegretT...)
	}
	seed := drawSeed(cmd, "repro ocp", givenSeed(cmd, fl.Seed))
	opt.Seed = seed
	opt.Progress = progressTo(cmd, fl.NoProgress)
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
