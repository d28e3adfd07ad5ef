package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dpal-dev/dpal/active/pool"
	"github.com/dpal-dev/dpal/dp/account"
)

// poolCmd groups the pool-based active learning commands.
var poolCmd = groupCommand("pool", "Pool-based DP active learning (Schwethelm et al. 2024): the training plan")

var poolPlanCmd = &cobra.Command{
	Use:   "plan",
	Short: "Plan DP-AL training: per-phase steps, noise and per-group sampling rates",
	Long: `Plans the training phases of pool-based DP active learning before any data is
seen (so the plan costs no privacy): naive DP-AL (Fig. 2), step amplification
(Fig. 5), or App. D.1's noise reduction and continual learning. Each labelled group
(the initial set, then each query) gets its Poisson sampling rate per phase; the
selection losses of eq. 6 are included (query j has paid j·ε_Sel/T before it trains;
with --scores-labelled every record pays ε_Sel). --accounting rdp composes the
selections' RDP with DP-SGD's and converts once instead of adding ε's.`,
	Args: cobra.NoArgs,
	RunE: runPoolPlan,
}

func init() {
	f := poolPlanCmd.Flags()
	f.Float64("epsilon", 0, "total ε of every record (> 0, required)")
	f.Float64("epsilon-select", 0, "ε_Sel, the budget of all selections together (0 ≤ ε_Sel < ε)")
	f.Float64("delta", 0, "δ (0 < δ < 1, required)")
	f.Int("batch", 0, "expected batch size b (required)")
	f.Int("epochs", 0, "epochs per phase of the naive schedule (required)")
	f.Int("initial", 0, "size of the initial labelled set (≥ batch, required)")
	f.String("queries", "", "sizes of the T queries, comma-separated (required)")
	f.String("mode", "step-amplification", "naive, step-amplification, noise-reduction or continual")
	f.String("accounting", "basic", "how selection and training compose: basic or rdp")
	f.Bool("scores-labelled", false, "the acquisition scores labelled records too (§3.5): everyone pays ε_Sel")
	f.String("conversion", "balle2020", "RDP to (ε, δ) conversion: balle2020 or classic")
	selectionFlags(f, "topk")
	f.Int("pool-size", 0, "poisson: the number of pool records n (the initial rate is --initial/n; required)")
	f.Bool("paper-accounting", false, "topk: calibrate σ the paper's way, training charged add/remove, to show what that plan "+
		"really costs (epsilon_replace); for comparison only, pool run refuses such a plan")
	f.Bool("json", false, "print one JSON object")
	poolCmd.AddCommand(poolPlanCmd)
	rootCmd.AddCommand(poolCmd)
}

// selectionFlags are the selection scheme's flags, shared by pool plan and
// pool run.
func selectionFlags(f *pflag.FlagSet, def string) {
	f.String("selection", def, "poisson (independent coins, the sound scheme: docs/pool.md) or topk (the paper's fixed sizes, "+
		"training charged under replace-one)")
	f.String("labeler", "trusted", "trusted (sees the selections, paper 001 §3.1) or untrusted (selections are releases: topk only)")
	f.Float64("p-max", 0.2, "poisson: the largest probability with which a selection chooses a record")
}

func runPoolPlan(cmd *cobra.Command, _ []string) error {
	n, _ := cmd.Flags().GetInt("pool-size")
	cfg, err := poolConfig(cmd, n)
	if err != nil {
		return err
	}
	p, err := pool.Build(cfg)
	if err != nil {
		return err
	}
	if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
		return printJSON(cmd.OutOrStdout(), p)
	}
	return poolTable(cmd.OutOrStdout(), p)
}

// poolConfig reads the plan's flags; poolSize is the pool's n.
func poolConfig(cmd *cobra.Command, poolSize int) (pool.Config, error) {
	f := cmd.Flags()
	for _, name := range []string{"epsilon", "delta", "batch", "epochs", "initial", "queries"} {
		if !f.Changed(name) {
			return pool.Config{}, fmt.Errorf("--%s is required", name)
		}
	}
	var cfg pool.Config
	cfg.Epsilon, _ = f.GetFloat64("epsilon")
	cfg.EpsilonSelect, _ = f.GetFloat64("epsilon-select")
	cfg.Delta, _ = f.GetFloat64("delta")
	cfg.Batch, _ = f.GetInt("batch")
	cfg.Epochs, _ = f.GetInt("epochs")
	cfg.Initial, _ = f.GetInt("initial")
	cfg.ScoresLabelled, _ = f.GetBool("scores-labelled")
	var err error
	s, _ := f.GetString("queries")
	if cfg.Queries, err = parseQueries(s); err != nil {
		return cfg, fmt.Errorf("--queries: %w", err)
	}
	s, _ = f.GetString("mode")
	if cfg.Mode, err = pool.ParseMode(s); err != nil {
		return cfg, fmt.Errorf("--mode: %w", err)
	}
	s, _ = f.GetString("accounting")
	if cfg.Accounting, err = pool.ParseAccounting(s); err != nil {
		return cfg, fmt.Errorf("--accounting: %w", err)
	}
	s, _ = f.GetString("conversion")
	if cfg.Conversion, err = account.ParseConversion(s); err != nil {
		return cfg, fmt.Errorf("--conversion: %w", err)
	}
	s, _ = f.GetString("selection")
	if cfg.Selection, err = pool.ParseSelection(s); err != nil {
		return cfg, fmt.Errorf("--selection: %w", err)
	}
	s, _ = f.GetString("labeler")
	if cfg.Labeler, err = pool.ParseLabeler(s); err != nil {
		return cfg, fmt.Errorf("--labeler: %w", err)
	}
	cfg.PMax, _ = f.GetFloat64("p-max")
	cfg.PoolSize = poolSize
	if f.Lookup("paper-accounting") != nil {
		cfg.PaperTopK, _ = f.GetBool("paper-accounting")
	}
	return cfg, cfg.Validate()
}

// maxQueries bounds the number of selection phases.
const maxQueries = 10000

// parseQueries parses "Q1,Q2,…": positive integers, at most maxQueries.
func parseQueries(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("no query sizes")
	}
	items := strings.Split(s, ",")
	if len(items) > maxQueries {
		return nil, fmt.Errorf("%d queries, at most %d", len(items), maxQueries)
	}
	out := make([]int, 0, len(items))
	for i, item := range items {
		v, err := strconv.Atoi(strings.TrimSpace(item))
		if err != nil || v < 1 {
			return nil, fmt.Errorf("query %d: %q is not a positive integer", i+1, strings.TrimSpace(item))
		}
		out = append(out, v)
	}
	return out, nil
}

// poolTable prints the plan as two tables: phases and groups.
func poolTable(w io.Writer, p *pool.Plan) error {
	cfg := p.Config
	fmt.Fprintf(w, "%s plan, %s accounting: ε = %v (ε_Sel = %v over %d selections), δ = %v, batch %d\n\n",
		cfg.Mode, cfg.Accounting, cfg.Epsilon, cfg.EpsilonSelect, len(cfg.Queries), cfg.Delta, cfg.Batch)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	names := pool.GroupNames(len(cfg.Queries))
	fmt.Fprint(tw, "round\tsteps\tσ\tbatch\t")
	for _, n := range names {
		fmt.Fprintf(tw, "q %s\t", n)
	}
	fmt.Fprintln(tw)
	for _, ph := range p.Phases {
		fmt.Fprintf(tw, "%d\t%d\t%.6f\t%.2f\t", ph.Round, ph.Steps, ph.NoiseMultiplier, ph.ExpectedBatch)
		for g := range names {
			if g < len(ph.Groups) {
				fmt.Fprintf(tw, "%.6f\t", ph.Groups[g].SampleRate)
			} else {
				fmt.Fprint(tw, "-\t")
			}
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	other := pool.RDP
	if cfg.Accounting == pool.RDP {
		other = pool.Basic
	}
	topk := cfg.Selection == pool.TopK
	fmt.Fprintf(tw, "group\tsize\tε training\tε selection\tε total\tε total (%s)\t", other)
	if topk {
		fmt.Fprint(tw, "ε add/remove (paper)\tε replace-one (true)\t")
	}
	fmt.Fprintln(tw)
	for i, g := range p.Groups {
		alt, err := p.EpsilonUnder(other, i)
		if err != nil {
			return err
		}
		fmt.Fprintf(tw, "%s\t%d\t%.6f\t%.6f\t%.9f\t%.6f\t", g.Group, g.Size, g.EpsilonTraining, g.EpsilonSelection, g.EpsilonTotal, alt)
		if topk {
			fmt.Fprintf(tw, "%.6f\t%.6f\t", g.EpsilonAddRemove, g.EpsilonReplace)
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if pp := p.Poisson; pp != nil {
		fmt.Fprintf(w, "\nPoisson selection (β = %.6g, p_max = %v, η = %.6f): every pool record is charged ε = %.9f, "+
			"the worst entry (%s, training ε %.6f) amplified once (docs/pool.md, Theorem 1)\n",
			pp.InitialRate, pp.PMax, pp.EntryRate, pp.Epsilon, pp.WorstEntry, pp.EpsilonTraining)
		return nil
	}
	u, err := p.UnselectedEpsilon()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\nrecords never selected: ε = %.6f (selections only)\n", u)
	return nil
}
