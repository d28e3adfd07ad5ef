package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/dpal-dev/dpal/active/pool"
	"github.com/dpal-dev/dpal/data"
	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/dpsgd"
	"github.com/dpal-dev/dpal/progress"
)

var poolRunCmd = &cobra.Command{
	Use:   "run",
	Short: "Run pool-based DP active learning: plan, DP-SGD rounds, private selections, label oracle",
	Long: `Runs pool-based DP active learning (Schwethelm et al. 2024) on a dataset's
training part as the unlabelled pool: a random initial set of --initial records,
then T = len(--queries) rounds of DP-SGD training per the plan (--mode, default
step amplification) each followed by a private selection (--acquisition scored by
the model, Laplace top-k at ε_Sel/T per record), a last round of training, and the
test accuracy. Labels come from the dataset (a simulation) or, with
--labels-from FILE|-, from a person: one answer per line (class name or index),
prompted on stderr for "-".

Every pool record is its own ledger group: the report reads each record's ε from
the ledger (trained records at --epsilon, never-selected ones at ε_Sel). --not-dp
selects by the exact top-k: NOT differentially private, an upper bound for
comparison only, planned with ε_Sel = 0 and labelled "not DP" in the output.`,
	Args: cobra.NoArgs,
	RunE: runPoolRun,
}

func init() {
	o, f := &poolRunOpts, poolRunCmd.Flags()
	c := &o.plan.Config
	dataModelFlags(f, &o.presetOptions, "pool file (the pool is the dataset's training part)")
	f.IntVar(&o.PoolSize, "pool-size", 0, "use a uniform random subset of this many training records as the pool (0: all; "+
		"default 50000 for kdd99-5class, 20000 for mnist and fashion-mnist, all for csv and libsvm: the scaled setting of docs/repro-pool.md)")
	f.StringVar(&o.Acquisition, "acquisition", "entropy", "random|lc|margin|entropy|bald")
	f.BoolVar(&o.NotDP, "not-dp", false, "select by the exact top-k: NOT differentially private (upper bound only)")
	f.IntVar(&o.Passes, "passes", 10, "bald: MC-dropout forward passes")
	f.Float64Var(&c.Epsilon, "epsilon", 0, "total ε of every record, selection and training (required)")
	f.Float64Var(&c.EpsilonSelect, "epsilon-select", 0, "ε_Sel of all selections together (required > 0 unless --acquisition random or --not-dp)")
	f.Float64Var(&c.Delta, "delta", 0, "δ (default min(1e-5, 1/(10 n)) for a pool of n records: the guarantee covers every pool record)")
	f.IntVar(&c.Initial, "initial", 2000, "size of the initial labelled set (poisson: its expected size)")
	f.StringVar(&o.plan.Queries, "queries", "2000,600,200,200", "sizes of the T selections, comma-separated (poisson: their expected sizes, which set the plan's rates)")
	f.IntVar(&c.Batch, "batch", 0, "expected batch size b (default: the dataset's dpal train batch, at most 2/5 of --initial, as App. B's 4096 of 10 000)")
	f.IntVar(&c.Epochs, "epochs", 0, "epochs per phase of the naive schedule (default 10, as docs/repro-pool.md)")
	f.StringVar(&o.plan.Mode, "mode", "step-amplification", "naive, step-amplification, noise-reduction or continual")
	f.StringVar(&o.plan.Accounting, "accounting", "basic", "how selection and training compose: basic or rdp")
	f.StringVar(&o.plan.Conversion, "conversion", "balle2020", "RDP to (ε, δ) conversion: balle2020 or classic")
	optimizerFlags(f, &o.presetOptions)
	f.String("ledger", "", "durable ledger: a FILE or postgres://…?ledger=NAME (docs/postgres.md): the run's ε is charged to it; a new one gets --budget-epsilon/--budget-delta, later runs keep its budget")
	budgetFlags(f)
	f.StringVar(&o.LabelsFrom, "labels-from", "", "ask labels from FILE, or - for stdin (default: the dataset's labels)")
	f.Uint64("seed", 0, "seed for reproducible sampling, noise and selection (experiments only; default: secure randomness)")
	selectionFlags(f, &o.plan, "poisson")
	f.Float64Var(&o.Threshold, "threshold", 0.25, "poisson: the acquisition score (in [0, 1]) from which a record is chosen with probability --p-max")
	f.Float64Var(&o.PMin, "p-min", 0, "poisson: the probability of choosing a record scored below --threshold")
	f.BoolVar(&o.JSON, "json", false, "print one JSON object")
	f.Bool("no-progress", false, "draw no progress bar")
	poolCmd.AddCommand(poolRunCmd)
}

// poolRunOptions are pool run's flags, bound in its init: the dataset,
// model and optimiser (as train's), the plan (as pool plan's), and the
// loop's own. poolSizeDefault and poolRunDefaults set the defaults that
// depend on the dataset through the flags, so that they count as given.
type poolRunOptions struct {
	presetOptions
	plan poolOptions
	// PoolSize is the size of the random subset used as the pool (0:
	// the whole training part).
	PoolSize    int
	Acquisition string
	// NotDP selects by the exact top-k (not private).
	NotDP      bool
	Passes     int
	Threshold  float64
	PMin       float64
	LabelsFrom string
	JSON       bool
}

var poolRunOpts poolRunOptions

// poolRunOutput is what `dpal pool run` prints.
type poolRunOutput struct {
	Dataset string  `json:"dataset"`
	Model   string  `json:"model"`
	Pool    int     `json:"pool"`
	Labels  string  `json:"label_source"`
	Seed    *uint64 `json:"seed,omitempty"`
	// featureInfo is absent for raw features, as before --features.
	featureInfo
	// Epsilon … Epochs are the plan's settings (Plan omits its Config).
	Epsilon       float64      `json:"epsilon"`
	EpsilonSelect float64      `json:"epsilon_select"`
	Delta         float64      `json:"delta"`
	Batch         int          `json:"batch"`
	Epochs        int          `json:"epochs"`
	Plan          *pool.Plan   `json:"plan"`
	Result        *pool.Result `json:"result"`
	Classes       []string     `json:"class_names"`
	// The summary a script reads first (copied from Result): the final
	// model's accuracies, the labels asked, the selection scheme, and the
	// largest and smallest ε over every pool record read from the ledger.
	TestAccuracy     float64 `json:"test_accuracy"`
	BalancedAccuracy float64 `json:"balanced_accuracy"`
	LabelsAsked      int     `json:"labels"`
	Selection        string  `json:"selection"`
	EpsilonMax       float64 `json:"epsilon_max"`
	EpsilonMin       float64 `json:"epsilon_min"`
}

func runPoolRun(cmd *cobra.Command, _ []string) error {
	o := &poolRunOpts
	name := o.Data
	if err := checkTrainData(name); err != nil {
		return err
	}
	if err := checkFeatures(o.Features, name); err != nil {
		return err
	}
	inputs := []string{"file", "test-file"}
	if o.LabelsFrom != "-" {
		inputs = append(inputs, "labels-from")
	}
	if err := checkPaths(cmd, []string{"ledger"}, inputs); err != nil {
		return err
	}
	seed, err := seedFlag(cmd)
	if err != nil {
		return err
	}
	train, test, image, err := loadTrainData(o.Source, name)
	if err != nil {
		return err
	}
	r := rng.New(seed)
	if err := poolSizeDefault(cmd, name); err != nil {
		return err
	}
	// The features of the whole training part, before the pool is drawn
	// from it: one cache file serves every seed and pool size.
	train, test, image, finfo, err := o.applyFeatures(train, test, image, false)
	if err != nil {
		return err
	}
	if train, err = poolSubset(o.PoolSize, r.Split(), train); err != nil {
		return err
	}
	in, err := poolRunInput(cmd, name, train, test, image)
	if err != nil {
		return err
	}
	cfg := in.Plan.Config
	led, err := poolLedger(cmd, cfg)
	if err != nil {
		return err
	}
	defer led.Close()
	out := &poolRunOutput{Dataset: name, Model: in.Learner.Spec.String(), Pool: train.Len(), Labels: "dataset",
		Seed: seed, Plan: in.Plan, Classes: train.ClassNames, Epsilon: cfg.Epsilon, EpsilonSelect: cfg.EpsilonSelect,
		Delta: cfg.Delta, Batch: cfg.Batch, Epochs: cfg.Epochs, featureInfo: finfo.recorded()}
	if in.Oracle, out.Labels, err = poolOracle(cmd, o.LabelsFrom, train); err != nil {
		return err
	}
	bar := progress.New(progressOut(cmd), in.Plan.TotalSteps(), "DP-AL steps")
	in.Progress = func() { bar.Add(1) }
	out.Result, err = pool.Run(led, r, in)
	bar.Finish()
	if err != nil {
		return err
	}
	res := out.Result
	out.TestAccuracy, out.BalancedAccuracy, out.LabelsAsked, out.Selection = res.TestAccuracy, res.BalancedAccuracy, res.Labels, res.Selection
	out.EpsilonMax, out.EpsilonMin = res.Privacy.All.Max, res.Privacy.All.Min
	if o.JSON {
		return printJSON(cmd.OutOrStdout(), out)
	}
	return printPoolRun(cmd.OutOrStdout(), out)
}

// poolRunInput resolves the flags into the loop's input (without oracle).
func poolRunInput(cmd *cobra.Command, name string, train, test *data.Dataset, image [3]int) (pool.Input, error) {
	o := &poolRunOpts
	if !cmd.Flags().Changed("epsilon") {
		return pool.Input{}, fmt.Errorf("--epsilon is required")
	}
	if err := poolRunDefaults(cmd, name, train.Len()); err != nil {
		return pool.Input{}, err
	}
	s, err := o.settings(cmd, o.plan.Config.Epsilon, name, train, image)
	if err != nil {
		return pool.Input{}, err
	}
	cfg, err := poolConfig(cmd, &o.plan, train.Len())
	if err != nil {
		return pool.Input{}, err
	}
	acq, err := pool.ParseAcquisition(o.Acquisition)
	if err != nil {
		return pool.Input{}, fmt.Errorf("--acquisition: %w", err)
	}
	if acq == pool.BALD && s.Model.Dropout == 0 {
		return pool.Input{}, fmt.Errorf("--acquisition bald needs a model with dropout: BALD scores the disagreement of MC-dropout passes, " +
			"which is 0 for every record without it; use --model mlp:W --dropout 0.5 (or another acquisition)")
	}
	lr := pool.Learner{Spec: s.Model, Train: s.Config, Acquisition: acq, NotDP: o.NotDP, Passes: o.Passes, Threshold: o.Threshold, PMin: o.PMin}
	if lr.Passes < 1 || lr.Passes > 1000 {
		return pool.Input{}, fmt.Errorf("--passes must be in [1, 1000], got %d", lr.Passes)
	}
	plan, err := pool.Build(cfg)
	if err != nil {
		return pool.Input{}, err
	}
	return pool.Input{Plan: plan, Learner: lr, Pool: train.X, Test: test}, nil
}

// poolSizeDefault sets --pool-size to the dataset's scaled setting of
// docs/repro-pool.md when not given: 50 000 KDD'99 records (so that its
// rare classes occur at all), 20 000 MNIST or Fashion-MNIST images.
func poolSizeDefault(cmd *cobra.Command, name string) error {
	f := cmd.Flags()
	def := map[string]string{"kdd99-5class": "50000", "mnist": "20000", "fashion-mnist": "20000"}[name]
	if f.Changed("pool-size") || def == "" {
		return nil
	}
	return f.Set("pool-size", def)
}

// poolRunDefaults fills --delta (from the pool's n records), --batch and
// --epochs from the labelling budget and the dataset when not given, so
// that poolConfig reads them (setting a flag sets its bound field).
func poolRunDefaults(cmd *cobra.Command, name string, n int) error {
	f := cmd.Flags()
	for _, flag := range []string{"initial", "queries"} { // the scaled setting: poolConfig reads them as given
		if !f.Changed(flag) {
			if err := f.Set(flag, f.Lookup(flag).DefValue); err != nil {
				return err
			}
		}
	}
	if _, err := parseQueries(poolRunOpts.plan.Queries); err != nil {
		return fmt.Errorf("--queries: %w", err)
	}
	initial := poolRunOpts.plan.Config.Initial
	def, err := dpsgd.Preset(name, "", dpsgd.LowEpsilon) // the default model's batch at ε ≥ 2, whatever --model and --epsilon
	if err != nil {
		return err
	}
	set := map[string]string{
		"delta":  strconv.FormatFloat(account.DefaultDelta(n), 'g', -1, 64),
		"batch":  strconv.Itoa(pool.DefaultBatch(def.Batch, initial)),
		"epochs": strconv.Itoa(pool.DefaultEpochs),
	}
	for flag, v := range set {
		if !f.Changed(flag) {
			if err := f.Set(flag, v); err != nil {
				return err
			}
		}
	}
	return nil
}

// poolSubset draws n (--pool-size) training records uniformly (reading
// none of them, so it costs nothing), or returns train when n is 0 or at
// least its size.
func poolSubset(n int, r *rng.Rand, train *data.Dataset) (*data.Dataset, error) {
	switch {
	case n < 0:
		return nil, fmt.Errorf("--pool-size must be >= 0, got %d", n)
	case n == 0 || n >= train.Len():
		return train, nil
	}
	idx, err := pool.RandomSubset(r, n, train.Len())
	if err != nil {
		return nil, fmt.Errorf("--pool-size: %w", err)
	}
	slices.Sort(idx)
	return train.Subset(idx), nil
}

// poolLedger opens the run's ledger (openLedger): the plan charges every
// pool record at most its (ε, δ), in the plan's conversion.
func poolLedger(cmd *cobra.Command, cfg pool.Config) (*ledger.Ledger, error) {
	return openLedger(cmd, runLedger{Charge: account.Budget{Epsilon: cfg.Epsilon, Delta: cfg.Delta},
		Options: []ledger.Option{ledger.WithConversion(cfg.Conversion)}})
}

// poolOracle returns the label oracle: the dataset's labels, or answers
// read from --labels-from path, a FILE or stdin ("-", prompted on
// stderr).
func poolOracle(cmd *cobra.Command, path string, train *data.Dataset) (pool.Oracle, string, error) {
	switch path {
	case "":
		return pool.DatasetOracle{Classes: train.Class}, "dataset", nil
	case "-":
		return pool.NewReaderOracle(cmd.InOrStdin(), cmd.ErrOrStderr(), train.ClassNames), "stdin", nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("--labels-from: %w", err)
	}
	return pool.NewReaderOracle(strings.NewReader(string(b)), nil, train.ClassNames), path, nil
}

// printPoolRun prints the rounds, the final accuracy and the per-record
// privacy report.
func printPoolRun(w io.Writer, o *poolRunOutput) error {
	r := o.Result
	cfg := o.Plan.Config
	fmt.Fprintf(w, "pool DP-AL on %s (%d records), %s, acquisition %s, %s plan, %s accounting: ε = %v, ε_Sel = %v, δ = %v\n",
		o.Dataset, o.Pool, o.Model, r.Acquisition, r.Mode, r.Accounting, cfg.Epsilon, cfg.EpsilonSelect, cfg.Delta)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "round\tlabelled\tsteps\ttest accuracy\tnext query\tits ε before training (ledger)\tseconds\t")
	for _, rd := range r.Rounds {
		q, e := "-", "-"
		if rd.Selected != nil {
			q, e = fmt.Sprintf("%d", rd.Selected.Records), fmt.Sprintf("%.6f", rd.Selected.Ledger.Max)
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%.4f\t%s\t%s\t%.1f\t\n", rd.Round, rd.Labelled, rd.Steps, rd.TestAccuracy, q, e, rd.Seconds)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\ntest accuracy %.4f, balanced accuracy %.4f\n", r.TestAccuracy, r.BalancedAccuracy)
	for c, rec := range r.TestRecall {
		fmt.Fprintf(w, "  recall %-12s %.4f\n", o.Classes[c], rec)
	}
	fmt.Fprintf(w, "\nprivacy per record, read from the ledger (%s):\n", r.Privacy.Guarantee)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "records\tcount\tplanned ε\tledger ε min\tledger ε max\t")
	for _, g := range append(r.Privacy.Trained, r.Privacy.NotSelected) {
		fmt.Fprintf(tw, "%s\t%d\t%.9f\t%.9f\t%.9f\t\n", g.Group, g.Records, g.Planned, g.Ledger.Min, g.Ledger.Max)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "largest |ledger − plan| over all records: %.3g\n", r.Privacy.MaxDeviation)
	return nil
}
