package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/dpal-dev/dpal/data"
	"github.com/dpal-dev/dpal/outfile"
	"github.com/dpal-dev/dpal/progress"
	"github.com/dpal-dev/dpal/repro/poolrepro"
)

var reproPoolCmd = &cobra.Command{
	Use:   "pool",
	Short: "Reproduce Schwethelm et al. (2024) Tables 1, 2, 4 and Fig. 7 (pool DP-AL) on MNIST, Fashion-MNIST, KDD'99",
	Long: `Runs dpal pool run's loop over the paper's comparisons with App. B's schedule scaled
by 1/5 (initial 2 000, queries 2 000, 600, 200, 200, batch 800, B = 5 000, δ = 1/B,
T = 4) on a pool of 20 000 training records, logistic regression (BALD: an MLP with
MC dropout), 10 epochs per phase:

  table1      Random (DP-SGD on a random B), random AL naive and step-amplified,
              lc/margin/entropy/bald with exact (not DP) and private selection,
              ε = 8, ε_Sel = 2
  table2      ε ∈ {3, 5, 8, 16} with ε_Sel {1, 1, 2, 4}
  fig7        ε_Sel ∈ {0.5, 1, 2, 3, 4, 6} at ε = 8 (entropy)
  table4      continual learning vs noise reduction vs step amplification
  accounting  basic vs joint-RDP accounting of selection and training
  poisson     dpal's Poisson active learning at ε 1, 3, 8 against random Poisson
              selection with the same plan (same expected labels, steps and σ);
              δ = min(1e-5, 1/(10·pool)), p_max 0.2, threshold 0.25 (fixed a priori)
  efficiency  the same two at budgets 10–100 % of B: labels needed to reach random's
              full-budget accuracy (summary.json's label_efficiency)
  headline    the poisson experiment's two ε = 8 rows alone (with --cnn: the CNN)
  topk        the paper's top-k rows (random AL, entropy and margin with DP selection)
              with σ calibrated to their true, replace-one ε

Writes <out>/rows.csv (every run), points.csv (mean ± std), summary.json (options,
seeds, majority-class baselines, rows) and <data>-table2/-fig7 .png/.csv. Every private
run checks each pool record's ledger ε against the plan. --quick is a seconds-long
smoke run (tiny budget, table 1, one run).`,
	Args: cobra.NoArgs,
	RunE: runReproPool,
}

func init() {
	r, f := &reproPoolOpts, reproPoolCmd.Flags()
	f.StringVar(&r.Data, "data", "kdd99-5class,mnist,fashion-mnist", "comma-separated: kdd99-5class, mnist, fashion-mnist, csv, libsvm")
	dataSourceFlags(f, &r.Source, "training file", "test file (default: 20 % of --file)")
	f.StringVar(&r.Experiments, "experiments", "table1,table2,fig7,table4,accounting", "comma-separated experiments")
	f.IntVar(&r.Runs, "runs", 0, "runs per configuration in every experiment (default: 5 for table1, 3 for the others)")
	f.BoolVar(&r.Quick, "quick", false, "smoke run: tiny budget, table 1, one run")
	f.BoolVar(&r.CNN, "cnn", false, "train the Tramèr–Boneh CNN on mnist and fashion-mnist instead of logistic regression")
	f.StringVar(&r.Out, "out", "repro-pool", "output directory")
	f.Uint64Var(&r.Seed, "seed", 1, "base seed (run k of dataset d uses seed + 1000·d + k)")
	f.Bool("no-progress", false, "do not draw the progress bar")
	reproCmd.AddCommand(reproPoolCmd)
}

// reproPoolOptions are repro pool's flags, bound in its init. They
// adjust poolrepro's default (or, with Quick, quick) options: the
// experiments only when given.
type reproPoolOptions struct {
	// Data and Experiments are comma lists.
	Data, Experiments string
	Source            data.Source
	// Runs, when not 0, is every experiment's number of runs.
	Runs       int
	Quick, CNN bool
	// Out is the output directory.
	Out  string
	Seed uint64
}

var reproPoolOpts reproPoolOptions

func runReproPool(cmd *cobra.Command, _ []string) error {
	r := &reproPoolOpts
	o := poolrepro.DefaultOptions()
	if r.Quick {
		o = poolrepro.QuickOptions()
	}
	if r.CNN {
		o = o.WithCNN()
	}
	o.Seed = r.Seed
	o.Datasets = splitList(r.Data)
	if cmd.Flags().Changed("experiments") {
		o.Experiments = splitList(r.Experiments)
	}
	if r.Runs != 0 {
		for e := range o.Runs {
			o.Runs[e] = r.Runs
		}
	}
	for _, d := range o.Datasets {
		if _, ok := o.Settings[d]; !ok {
			if checkTrainData(d) != nil {
				return fmt.Errorf("--data %q: want kdd99-5class, mnist, fashion-mnist, csv or libsvm", d)
			}
			o.Settings[d] = o.Settings["kdd99-5class"]
		}
	}
	if err := o.Validate(); err != nil {
		return err
	}
	out := r.Out
	if err := outfile.ProbeDir(out); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	sets := map[string]poolrepro.Data{}
	for _, d := range o.Datasets {
		train, test, image, err := loadTrainData(r.Source, d)
		if err != nil {
			return err
		}
		sets[d] = poolrepro.Data{Train: train, Test: test, Image: image}
	}
	bar := progress.New(progressOut(cmd), o.Total(), "repro pool runs")
	sum, err := poolrepro.Reproduce(o, sets, func() { bar.Add(1) })
	bar.Finish()
	if err != nil {
		return err
	}
	if err := poolrepro.Write(out, sum); err != nil {
		return err
	}
	printReproPool(cmd.OutOrStdout(), sum, out)
	return nil
}

// splitList splits a comma list, dropping blanks.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func printReproPool(w io.Writer, s poolrepro.Summary, out string) {
	for _, t := range s.Trivial {
		fmt.Fprintf(w, "%s: majority class %q scores accuracy %.4f, balanced accuracy %.4f\n", t.Dataset, t.Class, t.Accuracy, t.Balanced)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "experiment\tdataset\tmethod\tε\tε_Sel\tscale\tlabels\taccuracy\tbalanced accuracy\truns\t")
	for _, p := range s.Points {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%g\t%g\t%g\t%.0f\t%.4f ± %.4f\t%.4f ± %.4f\t%d\t\n", p.Experiment, p.Dataset, p.Method, p.Epsilon, p.EpsSelect,
			p.Scale, p.Labels, p.Accuracy, p.AccuracyStd, p.Balanced, p.BalancedStd, p.Runs)
	}
	tw.Flush()
	for _, e := range s.Efficiency {
		if e.Reached {
			fmt.Fprintf(w, "%s: %s reaches %.4f (random Poisson at the full budget) with %.0f labels (%.0f at the full budget)\n", e.Dataset, e.Method, e.Reference, e.Labels, e.FullBudget)
		} else {
			fmt.Fprintf(w, "%s: %s does not reach %.4f (random Poisson at the full budget) at any budget (%.0f labels at the full budget)\n", e.Dataset, e.Method, e.Reference, e.FullBudget)
		}
	}
	fmt.Fprintf(w, "seed %d, %.0f s; rows.csv, points.csv, summary.json and figures in %s\n", s.Options.Seed, s.Seconds, out)
}
