package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/dpal-dev/dpal/data"
	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/kanon"
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

func init() {
	f := kanonAccountCmd.Flags()
	f.Float64("beta", 0, "sampling rate β (0 < β ≤ 1)")
	f.Int("k", 0, "frequency threshold k (≥ 1)")
	f.Float64("epsilon", 0, "ε (≥ −ln(1 − β))")
	f.Float64("delta", 1e-6, "target δ (0 < δ < 1)")
	f.Bool("table", false, "print the appendix grid of the smallest k per (ε, δ, β)")
	f.Bool("json", false, "print one JSON object")
	kanonCmd.AddCommand(kanonAccountCmd)
	rootCmd.AddCommand(kanonCmd)
}

func runKAnonAccount(cmd *cobra.Command, _ []string) error {
	f := cmd.Flags()
	asJSON, _ := f.GetBool("json")
	if table, _ := f.GetBool("table"); table {
		return kanonTable(cmd.OutOrStdout(), asJSON)
	}
	beta, _ := f.GetFloat64("beta")
	k, _ := f.GetInt("k")
	eps, _ := f.GetFloat64("epsilon")
	delta, _ := f.GetFloat64("delta")
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

func init() {
	d := kanon.DefaultConfig()
	f := kanonRunCmd.Flags()
	f.String("log", "", "query log: a text file, slurp or clinc150 (required)")
	f.String("data-dir", data.DefaultDir, "data root holding slurp_text/ and clinc150/")
	f.Float64("beta", d.Beta, "sampling rate β (0 < β ≤ 1)")
	f.Int("k", d.K, "frequency threshold k (≥ 1)")
	f.Float64("delta", d.Delta, "δ at which the Li–Qardaji–Su ε is charged (exact threshold)")
	f.String("threshold", d.Threshold, "exact (Li–Qardaji–Su) or dp (noisy count ≥ k)")
	f.Float64("noise-epsilon", d.NoiseEpsilon, "ε' of the discrete Laplace noise (--threshold dp)")
	f.Int("labels-budget", d.LabelsBudget, "queries sent to annotators")
	f.Int("rounds", d.Rounds, "acquisition rounds the budget is split into")
	f.Int("copies", d.Copies, "annotators per chosen query (majority vote; the budget counts annotations)")
	f.Int("golden", d.Golden, "size of the labelled bootstrap set")
	f.Float64("annotator-accuracy", d.AnnotatorAccuracy, "mean annotator accuracy")
	f.String("positive", "", "binary task: labels with this prefix are positive, the rest negative")
	f.String("ranker", d.Ranker, "uncertainty ranking: mc-dropout (MLP, entropy of the mean of --passes dropout passes) or bootstrap (ensemble of linear models)")
	f.Int("passes", d.Passes, "MC-dropout passes T (--ranker mc-dropout)")
	f.Int("hidden", d.Hidden, "MLP hidden units (--ranker mc-dropout)")
	f.Float64("dropout", d.Dropout, "MLP dropout rate (--ranker mc-dropout)")
	f.Int("members", d.Members, "bootstrap ensemble size (--ranker bootstrap)")
	f.Int("epochs", d.Epochs, "training epochs per round")
	f.Bool("baseline", false, "non-private reference (no ledger charge; the paper's β = 1, k = 1)")
	f.Int("sketch-width", 0, "Count-Mean-Min width, a power of two (0: sized from a HyperLogLog estimate)")
	f.Float64("zipf-c", kanon.DefaultZipfCLINC.C, "clinc150: count of the top utterance")
	f.Float64("zipf-s", kanon.DefaultZipfCLINC.S, "clinc150: Zipf exponent")
	f.Float64("budget-epsilon", 10, "ledger ε budget of the log")
	f.Float64("budget-delta", 1e-4, "ledger δ budget of the log")
	f.String("ledger", "", "durable ledger file: created with the budget if new; later runs continue it")
	f.Uint64("seed", 0, "seed of the sample, noise, split, models and annotators (default: secure randomness)")
	f.Bool("json", false, "print one JSON object")
	kanonCmd.AddCommand(kanonRunCmd)
}

func runKAnonRun(cmd *cobra.Command, _ []string) error {
	f := cmd.Flags()
	cfg := kanon.DefaultConfig()
	cfg.Beta, _ = f.GetFloat64("beta")
	cfg.K, _ = f.GetInt("k")
	cfg.Delta, _ = f.GetFloat64("delta")
	cfg.Threshold, _ = f.GetString("threshold")
	cfg.NoiseEpsilon, _ = f.GetFloat64("noise-epsilon")
	cfg.LabelsBudget, _ = f.GetInt("labels-budget")
	cfg.Rounds, _ = f.GetInt("rounds")
	cfg.Golden, _ = f.GetInt("golden")
	cfg.Copies, _ = f.GetInt("copies")
	cfg.AnnotatorAccuracy, _ = f.GetFloat64("annotator-accuracy")
	cfg.Positive, _ = f.GetString("positive")
	cfg.Baseline, _ = f.GetBool("baseline")
	cfg.Ranker, _ = f.GetString("ranker")
	cfg.Passes, _ = f.GetInt("passes")
	cfg.Hidden, _ = f.GetInt("hidden")
	cfg.Dropout, _ = f.GetFloat64("dropout")
	cfg.Members, _ = f.GetInt("members")
	cfg.Epochs, _ = f.GetInt("epochs")
	cfg.SketchWidth, _ = f.GetInt("sketch-width")
	if err := cfg.Validate(); err != nil {
		return err
	}
	seed, err := seedFlag(cmd)
	if err != nil {
		return err
	}
	log, err := kanonLog(cmd, seed)
	if err != nil {
		return err
	}
	led, err := kanonLedger(cmd)
	if err != nil {
		return err
	}
	defer led.Close()
	res, err := kanon.Run(cfg, log, rng.New(seed), led)
	if err != nil {
		return err
	}
	if asJSON, _ := f.GetBool("json"); asJSON {
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
func kanonLog(cmd *cobra.Command, seed *uint64) ([]kanon.Query, error) {
	f := cmd.Flags()
	src, _ := f.GetString("log")
	dir, _ := f.GetString("data-dir")
	switch src {
	case "":
		return nil, fmt.Errorf("--log is required (a file, slurp or clinc150)")
	case "slurp":
		return kanon.LoadSLURP(dir)
	case "clinc150":
		z := kanon.DefaultZipfCLINC
		z.C, _ = f.GetFloat64("zipf-c")
		z.S, _ = f.GetFloat64("zipf-s")
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

// kanonLedger opens --ledger FILE, or an in-memory ledger, with the
// --budget-* budget (an existing file keeps its own; a lower one given
// holds for this run).
func kanonLedger(cmd *cobra.Command) (*ledger.Ledger, error) {
	f := cmd.Flags()
	var b account.Budget
	b.Epsilon, _ = f.GetFloat64("budget-epsilon")
	b.Delta, _ = f.GetFloat64("budget-delta")
	if err := b.Validate(); err != nil {
		return nil, err
	}
	path, _ := f.GetString("ledger")
	if path == "" {
		return ledger.New(b)
	}
	if err := checkPaths(cmd, []string{"ledger"}, []string{"log"}); err != nil {
		return nil, err
	}
	return openLedgerFlag(cmd, path, b)
}
