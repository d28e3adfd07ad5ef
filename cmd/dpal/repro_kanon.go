package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/dpal-dev/dpal/data"
	"github.com/dpal-dev/dpal/outfile"
	"github.com/dpal-dev/dpal/progress"
	"github.com/dpal-dev/dpal/repro/kanonrepro"
)

var reproKAnonCmd = &cobra.Command{
	Use:   "kanon",
	Short: "Reproduce Feyisetan et al. (2019) Figs. 2-4 and the appendix table on SLURP and Zipf-CLINC150",
	Long: `Runs the pre-sampling + k-anonymity active learner (dpal kanon run) over the paper's
grid beta in {0.1, 0.3, 0.6, 0.9} x k in {1, 20, 100, 200, 500} (SLURP, whose most
frequent sentence occurs 50 times, uses k in {1, 2, 3, 5, 10}), plus the baseline
beta = 1, k = 1, on binary and multi-class intent tasks. Each cell is charged its
Li-Qardaji-Su epsilon at --delta; a cell with no guarantee at that delta (beta^k > delta)
runs as a non-private what-if and is marked so. Writes <out>/fig{2,3,4}_<data>_<task>
.png and .csv, rows.csv, appendix.csv (dpal's (epsilon, delta) -> k grid) and
summary.json. Each private cell is followed by dpal's alternative at the same (epsilon,
delta): no sampling, a discrete-Laplace noisy threshold with the smallest k it allows
(method dp-threshold). Queries are ranked by MC-dropout entropy of an MLP (--ranker
bootstrap: the bootstrap ensemble of linear models). On the binary task the baseline and
every private cell are rerun with each query labelled by --vote-copies annotators and a
majority vote (method suffix -vote; 0 or 1 turns this off). --quick runs SLURP binary on
a small grid (about 20 s).`,
	Args: cobra.NoArgs,
	RunE: runReproKAnon,
}

// reproKAnonOptions are the flags of `dpal repro kanon`; they override
// the defaults of kanonrepro.DefaultOptions or, under --quick,
// QuickOptions.
type reproKAnonOptions struct {
	DataDir, Out, Ranker     string
	Seed                     uint64
	Quick, NoProgress        bool
	Datasets, Tasks          []string
	LabelsBudget, VoteCopies int
	Delta                    float64
}

var reproKAnonOpts reproKAnonOptions

func init() {
	f, fl := reproKAnonCmd.Flags(), &reproKAnonOpts
	f.StringVar(&fl.DataDir, "data-dir", data.DefaultDir, "data root holding slurp_text/ and clinc150/")
	f.StringVar(&fl.Out, "out", "repro-kanon", "output directory")
	f.Uint64Var(&fl.Seed, "seed", 1, "seed of every split, sample, model and annotator")
	f.BoolVar(&fl.Quick, "quick", false, "small smoke run")
	f.StringSliceVar(&fl.Datasets, "datasets", nil, "datasets: slurp, clinc150 (default both)")
	f.StringSliceVar(&fl.Tasks, "tasks", nil, "tasks: binary, multiclass (default both)")
	f.IntVar(&fl.LabelsBudget, "labels-budget", 0, "annotation cap per cell (default 1000, 200 with --quick)")
	f.Float64Var(&fl.Delta, "delta", 1e-6, "delta at which each cell's epsilon is charged")
	f.StringVar(&fl.Ranker, "ranker", "", "mc-dropout or bootstrap (default mc-dropout)")
	f.IntVar(&fl.VoteCopies, "vote-copies", 0, "binary task: annotators per query in the -vote rerun (default 5)")
	f.BoolVar(&fl.NoProgress, "no-progress", false, "do not draw the progress bar")
	reproCmd.AddCommand(reproKAnonCmd)
}

func runReproKAnon(cmd *cobra.Command, _ []string) error {
	f, fl := cmd.Flags(), &reproKAnonOpts
	o := kanonrepro.DefaultOptions()
	if fl.Quick {
		o = kanonrepro.QuickOptions()
	}
	o.DataDir, o.Seed, o.Delta = fl.DataDir, fl.Seed, fl.Delta
	if len(fl.Datasets) > 0 {
		o.Datasets = append([]string(nil), fl.Datasets...) // the run's own copy
	}
	if len(fl.Tasks) > 0 {
		o.Tasks = append([]string(nil), fl.Tasks...)
	}
	if f.Changed("ranker") {
		o.Run.Ranker = fl.Ranker
	}
	if f.Changed("vote-copies") {
		o.VoteCopies = fl.VoteCopies
	}
	if f.Changed("labels-budget") {
		o.Run.LabelsBudget = fl.LabelsBudget
	}
	if err := o.Run.Validate(); err != nil {
		return err
	}
	out := fl.Out
	if err := outfile.ProbeDir(out); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	start := time.Now()
	var bar *progress.Bar
	sum, err := kanonrepro.Reproduce(o, func(done, total int) {
		if bar == nil {
			bar = progress.New(progressTo(cmd, fl.NoProgress), total, "kanon cells")
		}
		bar.Add(1)
	})
	if bar != nil {
		bar.Finish()
	}
	if err != nil {
		return err
	}
	if err := kanonrepro.Write(out, sum); err != nil {
		return err
	}
	printReproKAnon(cmd.OutOrStdout(), sum, out, time.Since(start))
	return nil
}

func printReproKAnon(w io.Writer, s kanonrepro.Summary, out string, took time.Duration) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "dataset\ttask\tmethod\tbeta\tk\tprivate\tepsilon\treleased\tlabels\taccuracy\tmajority\t")
	for _, r := range s.Rows {
		eps := "-"
		if r.Guaranteed {
			eps = fmt.Sprintf("%.3g", r.Epsilon)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%g\t%d\t%v\t%s\t%d\t%d\t%.4f\t%.4f\t\n", r.Dataset, r.Task, r.Method, r.Beta, r.K, r.Guaranteed, eps, r.Released, r.LabelsUsed, r.Accuracy, r.Majority)
	}
	tw.Flush()
	fmt.Fprintf(w, "seed %d, delta %g, %.0f s; figures, rows.csv, appendix.csv and summary.json in %s\n", s.Options.Seed, s.Options.Delta, took.Seconds(), out)
}
