package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/dpal-dev/dpal/data"
	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/kanon"
	"github.com/dpal-dev/dpal/outfile"
)

// kanonCmd groups the pre-sampling + k-anonymity commands (Feyisetan et
// al. 2019 with Li, Qardaji & Su 2012).
var kanonCmd = groupCommand("kanon", "Private active learning by pre-sampling + k-anonymity (Feyisetan et al. 2019)")

var kanonAccountCmd = &cobra.Command{
	Use:   "account",
	Short: "(ε, δ) of sampling at rate β then keeping queries seen ≥ k times (Li–Qardaji–Su Thm 5)",
	Long: `Li, Qardaji & Su (2012, Thm 5): sampling each record with probability beta and then
keeping only values that occur at least k times is (epsilon, delta)-DP for every
epsilon >= -ln(1 - beta), delta being the largest binomial tail over n >= n_m.

Give any three of --beta, --k, --epsilon, --delta and the fourth is computed:
  --beta --k --epsilon    delta (and n_max, the n where the tail peaks)
  --beta --k [--delta]    the smallest epsilon (delta defaults to 1e-6)
  --beta --epsilon --delta  the smallest k
  --k --epsilon --delta   the largest beta
--table prints dpal's appendix grid: the smallest k for each (epsilon, delta, beta).`,
	Args: cobra.NoArgs,
	RunE: runKAnonAccount,
}

// kanonAccountOptions are the flags of `dpal kanon account`.
type kanonAccountOptions struct {
	Beta, Epsilon, Delta float64
	K                    int
	Table, JSON          bool
}

var kanonAccountOpts kanonAccountOptions

func init() {
	f, o := kanonAccountCmd.Flags(), &kanonAccountOpts
	f.Float64Var(&o.Beta, "beta", 0, "sampling rate β (0 < β ≤ 1)")
	f.IntVar(&o.K, "k", 0, "frequency threshold k (≥ 1)")
	f.Float64Var(&o.Epsilon, "epsilon", 0, "ε (≥ −ln(1 − β))")
	f.Float64Var(&o.Delta, "delta", 1e-6, "target δ (0 < δ < 1)")
	f.BoolVar(&o.Table, "table", false, "print the appendix grid of the smallest k per (ε, δ, β)")
	f.BoolVar(&o.JSON, "json", false, "print one JSON object")
	kanonCmd.AddCommand(kanonAccountCmd)
	rootCmd.AddCommand(kanonCmd)
}

func runKAnonAccount(cmd *cobra.Command, _ []string) error {
	f, o := cmd.Flags(), &kanonAccountOpts
	asJSON := o.JSON
	if o.Table {
		return kanonTable(cmd.OutOrStdout(), asJSON)
	}
	beta, k, eps, delta := o.Beta, o.K, o.Epsilon, o.Delta
	var (
		res kanon.Bound
		err error
	)
	switch has := f.Changed; {
	case has("beta") && has("k") && has("epsilon"):
		res, err = kanon.Delta(beta, k, eps)
	case has("beta") && has("k"):
		res, err = kanon.Epsilon(beta, k, delta)
	case has("beta") && has("epsilon"):
		res, err = kanon.SmallestK(beta, eps, delta)
	case has("k") && has("epsilon"):
		res, err = kanon.LargestBeta(k, eps, delta)
	default:
		return fmt.Errorf("give two of --beta, --k, --epsilon (with --delta for a target), or --table")
	}
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(cmd.OutOrStdout(), res)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "beta = %s, k = %d: (epsilon = %s, delta = %s)-DP; the tail peaks at n = %d (n_m = %d)\n",
		accountFloat(res.Beta), res.K, accountFloat(res.Epsilon), accountFloat(res.Delta), res.NMax, res.NMin)
	return nil
}

// kanonTableJSON is the JSON of `dpal kanon account --table`.
type kanonTableJSON struct {
	Grid  kanon.Grid   `json:"grid"`
	Cells []kanon.Cell `json:"cells"`
}

// kanonTable prints the appendix grid: for each δ a block with one row per
// β and one column per ε, holding the smallest k ("-" where ε < −ln(1−β)).
func kanonTable(w io.Writer, asJSON bool) error {
	g := kanon.AppendixGrid()
	cells, err := kanon.Table(g)
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(w, kanonTableJSON{Grid: g, Cells: cells})
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	nE, nB := len(g.Epsilons), len(g.Betas)
	for di, d := range g.Deltas {
		fmt.Fprintf(tw, "delta = %s\tbeta \\ epsilon", accountFloat(d))
		for _, e := range g.Epsilons {
			fmt.Fprintf(tw, "\t%s", accountFloat(e))
		}
		fmt.Fprintln(tw, "\t")
		for bi, b := range g.Betas {
			fmt.Fprintf(tw, "\t%s", accountFloat(b))
			for ei := range g.Epsilons {
				// Cells are δ-major, then ε, then β.
				fmt.Fprintf(tw, "\t%s", kanonCell(cells[(di*nE+ei)*nB+bi]))
			}
			fmt.Fprintln(tw, "\t")
		}
	}
	return tw.Flush()
}

func kanonCell(c kanon.Cell) string {
	if !c.Feasible {
		return "-"
	}
	return strconv.Itoa(c.K)
}

var kanonRunCmd = &cobra.Command{
	Use:   "run",
	Short: "Private active learning on a query log: sample, k-anonymise, rank by uncertainty, annotate",
	Long: `Runs the pipeline of Feyisetan et al. (2019, Algorithm 1) on a query log: sample each
occurrence with probability --beta, keep the queries seen at least --k times in the
sample (exactly: a Count-Mean-Min sketch pre-filters and an exact recount decides; or,
with --threshold dp, when the count plus discrete Laplace noise reaches k), charge the
guarantee to the ledger, then rank the released queries by MC-dropout uncertainty (the
entropy of the mean of --passes dropout passes of an MLP on hashed word and character
n-grams; --ranker bootstrap: a bootstrap ensemble of linear models instead) and send --labels-budget of them, one copy
each, to simulated annotators with accuracy ~ N(--annotator-accuracy, 0.01).
Reports test accuracy after each acquisition round.

--log is a text file (one query per line, optional tab and intent label; labels are the
simulator's ground truth), or slurp (SLURP devel+test, one occurrence per spoken event),
or clinc150 (in-scope CLINC150 with a Zipf frequency imposed, see --zipf-c, --zipf-s).`,
	Args: cobra.NoArgs,
	RunE: runKAnonRun,
}

// kanonRunOptions are the flags of `dpal kanon run`: the learner's are
// bound into Config (its fields that no flag sets keep
// kanon.DefaultConfig's values), the Zipf frequency of clinc150 into
// Zipf. The ledger flags are read by openLedger.
type kanonRunOptions struct {
	Config                 kanon.Config
	Zipf                   kanon.ZipfCLINC
	Log, DataDir, Ledger   string
	ReleasedOut, StageFrom string
	Seed                   uint64
	JSON                   bool
}

var kanonRunOpts = kanonRunOptions{Config: kanon.DefaultConfig(), Zipf: kanon.DefaultZipfCLINC}

func init() {
	f, o := kanonRunCmd.Flags(), &kanonRunOpts
	c := &o.Config
	f.StringVar(&o.Log, "log", "", "query log: a text file, slurp or clinc150 (required)")
	f.StringVar(&o.DataDir, "data-dir", data.DefaultDir, "data root holding slurp_text/ and clinc150/")
	f.Float64Var(&c.Beta, "beta", c.Beta, "sampling rate β (0 < β ≤ 1)")
	f.IntVar(&c.K, "k", c.K, "frequency threshold k (≥ 1)")
	f.Float64Var(&c.Delta, "delta", c.Delta, "δ at which the Li–Qardaji–Su ε is charged (exact threshold)")
	f.StringVar(&c.Threshold, "threshold", c.Threshold, "exact (Li–Qardaji–Su) or dp (noisy count ≥ k)")
	f.Float64Var(&c.NoiseEpsilon, "epsilon-noise", c.NoiseEpsilon, "ε' of the discrete Laplace noise (--threshold dp)")
	deprecate(f, "noise-epsilon", "epsilon-noise")
	f.IntVar(&c.LabelsBudget, "labels-budget", c.LabelsBudget, "queries sent to annotators")
	f.IntVar(&c.Rounds, "rounds", c.Rounds, "acquisition rounds the budget is split into")
	f.IntVar(&c.Copies, "copies", c.Copies, "annotators per chosen query (majority vote; the budget counts annotations)")
	f.IntVar(&c.Golden, "golden", c.Golden, "size of the labelled bootstrap set")
	f.Float64Var(&c.AnnotatorAccuracy, "annotator-accuracy", c.AnnotatorAccuracy, "mean annotator accuracy")
	f.StringVar(&c.Positive, "positive", "", "binary task: labels with this prefix are positive, the rest negative")
	f.StringVar(&c.Ranker, "ranker", c.Ranker, "uncertainty ranking: mc-dropout (MLP, entropy of the mean of --passes dropout passes) or bootstrap (ensemble of linear models)")
	f.IntVar(&c.Passes, "passes", c.Passes, "MC-dropout passes T (--ranker mc-dropout)")
	f.IntVar(&c.Hidden, "hidden", c.Hidden, "MLP hidden units (--ranker mc-dropout)")
	f.Float64Var(&c.Dropout, "dropout", c.Dropout, "MLP dropout rate (--ranker mc-dropout)")
	f.IntVar(&c.Members, "members", c.Members, "bootstrap ensemble size (--ranker bootstrap)")
	f.IntVar(&c.Epochs, "epochs", c.Epochs, "training epochs per round")
	f.BoolVar(&c.Baseline, "baseline", false, "non-private reference (no ledger charge; the paper's β = 1, k = 1)")
	f.IntVar(&c.SketchWidth, "sketch-width", 0, "Count-Mean-Min width, a power of two (0: sized from a HyperLogLog estimate)")
	f.Float64Var(&o.Zipf.C, "zipf-c", o.Zipf.C, "clinc150: count of the top utterance")
	f.Float64Var(&o.Zipf.S, "zipf-s", o.Zipf.S, "clinc150: Zipf exponent")
	f.Float64Var(&c.TestFraction, "test-fraction", c.TestFraction, "share of the distinct queries held out for evaluation (each query's own keyed coin)")
	budgetFlags(f)
	f.StringVar(&o.Ledger, "ledger", "", "durable ledger: a FILE or postgres://…?ledger=NAME (docs/postgres.md): created with the budget if new; later runs continue it")
	f.StringVar(&o.ReleasedOut, "released-out", "", "write the released query set here: one query per line, sorted, UTF-8 (the format of dpal-beam --output)")
	f.StringVar(&o.StageFrom, "stage-from", "", "continue from a dpal-beam run: its --output file (or a directory holding released.txt), charged by that run; same --seed, β, k and holdout flags")
	f.Uint64Var(&o.Seed, "seed", 0, "seed of the sample, noise, split, models and annotators (default: secure randomness)")
	f.BoolVar(&o.JSON, "json", false, "print one JSON object")
	kanonCmd.AddCommand(kanonRunCmd)
}

func runKAnonRun(cmd *cobra.Command, _ []string) error {
	o := &kanonRunOpts
	cfg := o.Config
	if err := cfg.Validate(); err != nil {
		return err
	}
	if err := checkPaths(cmd, []string{"ledger", "released-out"}, []string{"log", "stage-from"}); err != nil {
		return err
	}
	if o.ReleasedOut != "" {
		if err := outfile.ProbeReplace(o.ReleasedOut); err != nil {
			return fmt.Errorf("--released-out: %w", err)
		}
	}
	seed := givenSeed(cmd, o.Seed)
	log, err := kanonLog(o, seed)
	if err != nil {
		return err
	}
	res, err := kanonResult(cmd, o, log, rng.New(seed))
	if err != nil {
		return err
	}
	if o.ReleasedOut != "" {
		if err := outfile.WriteFile(o.ReleasedOut, 0o600, func(w io.Writer) error { return kanon.WriteReleased(w, res.Queries) }); err != nil {
			return fmt.Errorf("--released-out: %w", err)
		}
	}
	if o.JSON {
		return printJSON(cmd.OutOrStdout(), res)
	}
	w := cmd.OutOrStdout()
	if res.Private {
		fmt.Fprintf(w, "released %d queries at (epsilon = %s, delta = %s)\n", res.Released, accountFloat(res.Epsilon), accountFloat(res.Delta))
	} else {
		fmt.Fprintf(w, "baseline (not private): %d queries\n", res.Released)
	}
	for _, p := range res.Curve {
		fmt.Fprintf(w, "labels %6d  accuracy %.4f\n", p.Labels, p.Accuracy)
	}
	if seed != nil {
		fmt.Fprintf(w, "seed %d\n", *seed)
	}
	return nil
}

// kanonLog reads --log: a file, or the slurp or clinc150 data sets.
func kanonLog(o *kanonRunOptions, seed *uint64) ([]kanon.Query, error) {
	src, dir := o.Log, o.DataDir
	switch src {
	case "":
		return nil, fmt.Errorf("--log is required (a file, slurp or clinc150)")
	case "slurp":
		return kanon.LoadSLURP(dir)
	case "clinc150":
		z := o.Zipf
		if !(z.C >= 1) || !(z.S >= 0) || math.IsInf(z.C, 0) || math.IsInf(z.S, 0) {
			return nil, fmt.Errorf("--zipf-c must be >= 1 and --zipf-s >= 0, got %v, %v", z.C, z.S)
		}
		var order uint64
		if seed != nil {
			order = *seed
		}
		return kanon.LoadCLINC(dir, z, order)
	}
	return kanon.ReadLogFile(src)
}

// kanonResult runs the pipeline, or with --stage-from continues from a
// dpal-beam run's released set (charged by that run: no ledger here).
func kanonResult(cmd *cobra.Command, o *kanonRunOptions, log []kanon.Query, r *rng.Rand) (*kanon.Result, error) {
	if o.StageFrom != "" {
		if o.Ledger != "" || changed(cmd.Flags(), "budget-epsilon") || changed(cmd.Flags(), "budget-delta") {
			return nil, fmt.Errorf("--stage-from continues a run that dpal-beam charged to its own ledger: --ledger and the budget flags do not apply")
		}
		released, err := readStage(o.StageFrom)
		if err != nil {
			return nil, err
		}
		return kanon.RunReleased(o.Config, log, released, r)
	}
	led, err := kanonLedger(cmd, o)
	if err != nil {
		return nil, err
	}
	if led != nil {
		defer led.Close()
	}
	return kanon.Run(o.Config, log, r, led)
}

// readStage reads dpal-beam's released set: the file path, or
// path/released.txt when path is a directory.
func readStage(path string) ([]string, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, "released.txt")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--stage-from: %w", err)
	}
	defer f.Close()
	qs, err := kanon.ReadReleased(f)
	if err != nil {
		return nil, fmt.Errorf("--stage-from %s: %w", path, err)
	}
	return qs, nil
}

// kanonLedger opens the run's ledger with the shared opener: an in-memory
// ledger holding exactly what the run charges (Config.Loss), or --ledger
// FILE with --budget-* (default: that charge). The baseline charges
// nothing and takes no ledger.
func kanonLedger(cmd *cobra.Command, o *kanonRunOptions) (*ledger.Ledger, error) {
	if o.Config.Baseline {
		return openLedger(cmd, runLedger{NonPrivate: true})
	}
	loss, err := o.Config.Loss()
	if err != nil {
		return nil, err
	}
	return openLedger(cmd, runLedger{Charge: account.Budget{Epsilon: loss.Epsilon, Delta: loss.Delta}})
}
