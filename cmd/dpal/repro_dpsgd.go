package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/dpal-dev/dpal/outfile"
	"github.com/dpal-dev/dpal/repro/dpsgdrepro"
)

var reproDPSGDCmd = &cobra.Command{
	Use:   "dpsgd",
	Short: "DP-SGD accuracy vs ε with the shipped per-dataset defaults (issue 10's accuracy table)",
	Long: `Trains each --data set with dpal train's defaults at every --epsilons value
(δ = --delta) for --seeds seeds, and writes <out>/rows.csv (one row per run),
<out>/summary.json (settings, seed, rows, mean ± std per ε) and
<out>/<data>-accuracy.png/.csv (test accuracy vs ε, mean with a ±1 std band).
--non-private (default on) also trains the same model without clipping or
noise for each seed: a reference drawn as a horizontal line and written as
rows with private=false. Those rows are NOT differentially private.
--model overrides the dataset's default model (its defaults follow it).
--epochs-scale shortens every run (σ is calibrated for the epochs run), for
smoke tests and slow machines; the docs must say when it was below 1.
--features scatter trains on Tramèr & Boneh's ScatterNet features (mnist,
fashion-mnist; dpal train --features scatter's defaults, cached in
--cache-dir); --beside FILE,… draws the curves of earlier runs' summary.json
(e.g. the end-to-end CNN's) in the same figures.`,
	Args: cobra.NoArgs,
	RunE: runReproDPSGD,
}

func init() {
	o, f := &reproDPSGDOpts, reproDPSGDCmd.Flags()
	d := dpsgdrepro.DefaultOptions()
	eps := make([]string, len(d.Epsilons))
	for i, e := range d.Epsilons {
		eps[i] = strconv.FormatFloat(e, 'g', -1, 64)
	}
	f.StringVar(&o.Data, "data", strings.Join(d.Datasets, ","), "comma-separated: mnist, fashion-mnist, kdd99-5class, csv, libsvm")
	dataSourceFlags(f, &o.Run.Source, "training file", "test file (default: 20 % of --file)")
	f.StringVar(&o.Epsilons, "epsilons", strings.Join(eps, ","), "comma-separated target ε values")
	f.Float64Var(&o.Run.Delta, "delta", d.Delta, "target δ")
	f.IntVar(&o.Run.Seeds, "seeds", d.Seeds, "runs per (data, ε)")
	f.StringVar(&o.Run.Model, "model", "", "logreg|mlp:W1[,W2[,W3]]|cnn (default per dataset)")
	f.BoolVar(&o.Run.NonPrivate, "non-private", d.NonPrivate, "also train the non-private reference (NOT DP) of the same shape, one run per seed")
	f.Float64Var(&o.Run.EpochsScale, "epochs-scale", d.EpochsScale, "multiply every default epoch count by this (≤ 1 for quick runs)")
	f.StringVar(&o.Run.Features, "features", dpsgdrepro.Raw, "raw|scatter (as dpal train --features)")
	f.StringVar(&o.CacheDir, "cache-dir", "", "--features scatter: the features' cache (default: the user cache dir's dpal/scatter; none: no cache)")
	f.StringVar(&o.Beside, "beside", "", "comma-separated summary.json files of earlier runs whose curves the figures also draw")
	f.StringVar(&o.Out, "out", "repro-dpsgd", "output directory")
	f.Uint64("seed", 0, "base seed; run k uses seed+k (default: drawn at random and reported)")
	f.Bool("no-progress", false, "do not draw the progress bar")
	reproCmd.AddCommand(reproDPSGDCmd)
}

// reproDPSGDOptions are repro dpsgd's flags, bound in its init: Run's
// fields straight, its datasets and ε values as the comma lists Data and
// Epsilons (--seed is experimentSeed's).
type reproDPSGDOptions struct {
	Run            dpsgdrepro.Options
	Data, Epsilons string
	// CacheDir is --cache-dir (scatterCacheDir), Beside --beside.
	CacheDir, Beside string
	// Out is the output directory.
	Out string
}

var reproDPSGDOpts reproDPSGDOptions

func runReproDPSGD(cmd *cobra.Command, _ []string) error {
	o, err := reproDPSGDOpts.options()
	if err != nil {
		return err
	}
	out := reproDPSGDOpts.Out
	if err := outfile.ProbeDir(out); err != nil { // before hours of training, as the other repro commands
		return fmt.Errorf("--out: %w", err)
	}
	beside, err := readSummaries(reproDPSGDOpts.Beside)
	if err != nil {
		return fmt.Errorf("--beside: %w", err)
	}
	if o.Seed, err = experimentSeed(cmd, "repro dpsgd"); err != nil {
		return err
	}
	sum, err := dpsgdrepro.Run(o, progressOut(cmd))
	if err != nil {
		return dataFlagError(err)
	}
	if err := dpsgdrepro.Write(out, sum, beside...); err != nil {
		return err
	}
	printReproDPSGD(cmd.OutOrStdout(), &sum, out)
	return nil
}

// options are the reproduction's options the flags give, checked.
func (r *reproDPSGDOptions) options() (dpsgdrepro.Options, error) {
	o := r.Run
	o.Datasets = strings.Split(r.Data, ",")
	for _, name := range o.Datasets {
		if err := checkTrainData(name); err != nil {
			return o, err
		}
	}
	o.CacheDir = scatterCacheDir(r.CacheDir)
	var err error
	if o.Epsilons, err = parseFloats(r.Epsilons); err != nil {
		return o, fmt.Errorf("--epsilons: %w", err)
	}
	return o, o.Validate()
}

func printReproDPSGD(w io.Writer, sum *dpsgdrepro.Summary, out string) {
	fmt.Fprintf(w, "repro dpsgd: seed %d, δ=%v, epochs × %v\n", sum.Seed, sum.Delta, sum.EpochsScale)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "data\tε\truns\ttest accuracy")
	for _, p := range sum.Points {
		eps := strconv.FormatFloat(p.Epsilon, 'g', -1, 64)
		if !p.Private {
			eps = "non-private (NOT DP)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.4f ± %.4f\n", p.Dataset, eps, p.Runs, p.Mean, p.Std)
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "files in %s\n", out)
}

// readSummaries reads the comma-separated summary.json files of list
// (empty: none).
func readSummaries(list string) ([]dpsgdrepro.Summary, error) {
	if list == "" {
		return nil, nil
	}
	var out []dpsgdrepro.Summary
	for _, path := range strings.Split(list, ",") {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		var s dpsgdrepro.Summary
		if err := json.Unmarshal(b, &s); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, s)
	}
	return out, nil
}
