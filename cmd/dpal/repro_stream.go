package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/dpal-dev/dpal/data"
	"github.com/dpal-dev/dpal/outfile"
	"github.com/dpal-dev/dpal/repro/streamrepro"
)

var reproStreamCmd = &cobra.Command{
	Use:   "stream",
	Short: "Reproduce Ghassemi et al. (2016) §5, Figs. 2-5: private stream active learning on KDD 99 and MNIST 0/9",
	Long: `Runs the private stream-based active learner (FLSW and FLMB, Bernoulli and
exponential selection, eps_s = eps_g = 1, b = 0.2, tau = e^-0.2, window 5) over
random permutations of the training stream, with eta and lambda chosen by
cross-validation on a held-out part of the training split, and the non-private
batch SVM as a reference line. Writes <out>/<dataset>/fig*.png and .csv and
<out>/summary.json (settings, seeds, grid and choice, per-run results).

Datasets: kdd99 (10% training file, corrected test file), mnist09 (digits 0 vs
9, 4×4 pixel blocks: 49 dimensions), demo (the bundled KDD sample); with --detector also
fashion79, fashion57, fashion24 (Fashion-MNIST pairs, the same blocks), where it also
writes detector_window.csv, the check that fixed the detector's batch rule. --quick runs a small
smoke configuration (2 permutations, short horizons, the demo data unless
--datasets is given).`,
	Args: cobra.NoArgs,
	RunE: runReproStream,
}

// reproStreamOptions are the flags of `dpal repro stream`; they override
// the defaults of streamrepro.DefaultOptions or, under --quick,
// QuickOptions.
type reproStreamOptions struct {
	DataDir, Out                                          string
	Perms                                                 int
	Seed                                                  uint64
	Datasets                                              []string
	Figures                                               []int
	Quick, KDDPaperEncoding, NoProgress, Centre, Detector bool
	Radius, EpsilonSelect, EpsilonGrad                    float64
}

var reproStreamOpts reproStreamOptions

func init() {
	f, fl := reproStreamCmd.Flags(), &reproStreamOpts
	f.StringVar(&fl.DataDir, "data-dir", data.DefaultDir, "data root holding kddcup99/ and mnist/")
	f.StringVar(&fl.Out, "out", "repro-stream", "output directory")
	f.IntVar(&fl.Perms, "perms", 0, "number of stream permutations (default 10, or 2 with --quick)")
	f.Uint64Var(&fl.Seed, "seed", 0, "seed of every permutation, split and learner (default: drawn at random and reported)")
	f.StringSliceVar(&fl.Datasets, "datasets", nil, "datasets: kdd99, mnist09, demo, and with --detector fashion79, fashion57, fashion24 (Fashion-MNIST pairs, the batch rule's check) (default kdd99,mnist09; demo with --quick)")
	f.IntSliceVar(&fl.Figures, "figures", []int{2, 3, 4, 5}, "figures to make (2, 3, 4, 5)")
	f.BoolVar(&fl.Quick, "quick", false, "small smoke run (about a minute)")
	f.BoolVar(&fl.KDDPaperEncoding, "kdd-paper-encoding", false, "KDD: one-hot the binary fields and take vocabularies from train+test (the paper's 120 dimensions)")
	f.BoolVar(&fl.NoProgress, "no-progress", false, "do not draw the progress bar")
	f.BoolVar(&fl.Centre, "centre", false, "subtract the training mean from all rows and re-project onto the unit ball (not in the paper)")
	f.Float64Var(&fl.Radius, "radius", 1, "radius of the ball the iterates are projected onto (paper: 1)")
	f.Float64Var(&fl.EpsilonSelect, "epsilon-select", 1, "eps_s of the selection (paper: 1); other values are what-if runs")
	f.Float64Var(&fl.EpsilonGrad, "epsilon-grad", 1, "eps_g of each update (paper: 1); other values are what-if runs")
	deprecate(f, "eps-select", "epsilon-select")
	deprecate(f, "eps-grad", "epsilon-grad")
	f.BoolVar(&fl.Detector, "detector", false, "instead of the paper's figures, compare the update mechanisms (gamma, gaussian, the noiseless twin) over eps_g in {0.25, 0.5, 1, 2, 4} and 200-2000 labels")
	reproCmd.AddCommand(reproStreamCmd)
}

func runReproStream(cmd *cobra.Command, _ []string) error {
	fl := &reproStreamOpts
	quick := fl.Quick
	opt := streamrepro.DefaultOptions()
	if quick {
		opt = streamrepro.QuickOptions()
	}
	opt.OutDir = fl.Out
	if err := outfile.ProbeDir(opt.OutDir); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	if len(fl.Figures) > 0 {
		opt.Figures = append([]int(nil), fl.Figures...) // the run's own copy
	}
	opt.EpsSelect, opt.EpsGrad, opt.Centre, opt.Radius = fl.EpsilonSelect, fl.EpsilonGrad, fl.Centre, fl.Radius
	if cmd.Flags().Changed("perms") {
		opt.Perms = fl.Perms
	}
	opt.Seed = drawSeed(cmd, "repro stream", givenSeed(cmd, fl.Seed))
	opt.Progress = progressTo(cmd, fl.NoProgress)
	names := fl.Datasets
	if len(names) == 0 {
		names = []string{"kdd99", "mnist09"}
		if quick {
			names = []string{"demo"}
		}
	}
	var sets []streamrepro.Dataset
	for _, name := range names {
		set, err := loadReproStreamSet(name, fl.DataDir, fl.KDDPaperEncoding, quick)
		if err != nil {
			return err
		}
		sets = append(sets, set)
	}
	if fl.Detector {
		return runReproDetector(cmd, opt, sets, quick)
	}
	sum, err := streamrepro.Run(opt, sets)
	if err != nil {
		return err
	}
	printReproStream(cmd.OutOrStdout(), sum, opt.OutDir)
	return nil
}

// loadReproStreamSet loads a dataset with the paper's plot horizons (Fig. 2
// updates, Figs. 3/5 labels, Fig. 4 labels), shortened under --quick.
func loadReproStreamSet(name, dir string, paperEnc, quick bool) (streamrepro.Dataset, error) {
	set := streamrepro.Dataset{Name: name}
	kddOpt := data.KDDOptions{OneHotBinary: paperEnc, VocabFromTest: paperEnc}
	var err error
	switch name {
	case "kdd99":
		set.Train, set.Test, err = data.LoadKDD(dir, kddOpt)
		set.Updates, set.Labels, set.Fig4Labels = 300, 2000, 200
	case "mnist09":
		sub := filepath.Join(dir, "mnist")
		if _, serr := os.Stat(filepath.Join(sub, data.IDXTrainImages)); serr == nil {
			dir = sub
		}
		set.Train, set.Test, err = data.LoadIDXPair(dir, 0, 9, data.IDXPairBlock)
		set.Updates, set.Labels, set.Fig4Labels = 500, 200, 100
	case "fashion79", "fashion57", "fashion24":
		// Fashion-MNIST pairs (4×4 blocks, as mnist09): the data the
		// detector's batch rule was fixed on (stream.GradSignalRatio).
		sub := filepath.Join(dir, "fashion_mnist")
		a, b := int(name[7]-'0'), int(name[8]-'0')
		set.Train, set.Test, err = data.LoadIDXPair(sub, a, b, data.IDXPairBlock)
		set.Updates, set.Labels, set.Fig4Labels = 500, 200, 100
	case "demo":
		set.Train, set.Test, err = data.DemoOptions(kddOpt)
		set.Updates, set.Labels, set.Fig4Labels = 300, 1000, 200
	default:
		return set, fmt.Errorf("--datasets: unknown dataset %q (want kdd99, mnist09, demo or fashion79/57/24)", name)
	}
	if err != nil {
		return set, fmt.Errorf("loading %s: %w", name, err)
	}
	if quick {
		set.Updates, set.Labels, set.Fig4Labels = min(set.Updates, 60), min(set.Labels, 200), min(set.Fig4Labels, 100)
	}
	return set, nil
}

func printReproStream(w io.Writer, sum *streamrepro.Summary, out string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, d := range sum.Datasets {
		fmt.Fprintf(tw, "%s (d=%d, %d train, test error on %d of %d rows)\n", d.Name, d.Dim, d.TrainRows, d.TestEvalRows, d.TestRows)
		fmt.Fprintf(tw, "  method\terr@%d labels\terr@%d labels\tlabels\tobserved\tupdates\teps/record\n", d.Horizons.Fig4Labels, d.Horizons.Labels)
		for _, m := range d.Methods {
			eps := "not private"
			if m.EpsilonPerRecord != nil {
				eps = fmt.Sprintf("%.4g", *m.EpsilonPerRecord)
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%.0f\t%.0f\t%.0f\t%s\n", m.Method, pct(m.ErrorAtFig4Labels), pct(m.ErrorAtLabels),
				m.Labels.Mean, m.Observed.Mean, m.Updates.Mean, eps)
		}
		fmt.Fprintf(tw, "  NonPrivate-Batch (lambda %g)\t%.2f%%\t(whole test set %.2f%%)\n", d.BatchSVM.Lambda, 100*d.BatchSVM.TestErrorEval, 100*d.BatchSVM.TestError)
		var chosen []string
		for p, h := range d.CV.Chosen {
			chosen = append(chosen, fmt.Sprintf("%s eta=%g lambda=%g", p, h.Eta, h.Lambda))
		}
		slices.Sort(chosen)
		fmt.Fprintf(tw, "  cross-validated: %s\n", strings.Join(chosen, "; "))
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "seed %d, %d permutations, %.0f s; figures and summary.json in %s\n", sum.Seed, len(sum.PermSeeds), sum.Seconds, out)
}

func pct(s streamrepro.Stat) string { return fmt.Sprintf("%.2f ± %.2f%%", 100*s.Mean, 100*s.Std) }

// runReproDetector runs streamrepro.RunDetector with the paper run's seed,
// permutations, output directory and test subsample, and prints its table.
func runReproDetector(cmd *cobra.Command, opt streamrepro.Options, sets []streamrepro.Dataset, quick bool) error {
	d := streamrepro.DefaultDetectorOptions()
	d.Perms, d.Seed, d.OutDir, d.TestRows, d.EpsSelect = opt.Perms, opt.Seed, opt.OutDir, opt.TestRows, opt.EpsSelect
	if quick {
		d.EpsGrads, d.LabelGrid = []float64{1}, []int{200, 1000}
	}
	rows, err := streamrepro.RunDetector(d, sets)
	if err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "dpal repro stream --detector: seed %d, %d permutations, eps_s = %v (mean ± std test error)\n", d.Seed, d.Perms, d.EpsSelect)
	for _, r := range rows {
		eps := "noiseless"
		switch {
		case r.Update == "batch-svm" || r.Update == "constant":
			eps = "non-private reference"
		case !math.IsInf(r.EpsGrad, 1):
			eps = fmt.Sprintf("eps_g %-4v  record eps %.4f", r.EpsGrad, r.EpsilonPerRecord)
		}
		fmt.Fprintf(w, "  %-8s %-19s window %-3d %-32s %5d labels  %s\n", r.Dataset, r.Update, r.Window, eps, r.Labels,
			pct(streamrepro.Stat{Mean: r.Mean, Std: r.Std}))
	}
	return nil
}
