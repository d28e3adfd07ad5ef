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
	o, f := &poolPlanOpts, poolPlanCmd.Flags()
	c := &o.Config
	f.Float64Var(&c.Epsilon, "epsilon", 0, "total ε of every record (> 0, required)")
	f.Float64Var(&c.EpsilonSelect, "epsilon-select", 0, "ε_Sel, the budget of all selections together (0 ≤ ε_Sel < ε)")
	f.Float64Var(&c.Delta, "delta", 0, "δ (0 < δ < 1, required)")
	f.IntVar(&c.Batch, "batch", 0, "expected batch size b (required)")
	f.IntVar(&c.Epochs, "epochs", 0, "epochs per phase of the naive schedule (required)")
	f.IntVar(&c.Initial, "initial", 0, "size of the initial labelled set (≥ batch, required)")
	f.StringVar(&o.Queries, "queries", "", "sizes of the T queries, comma-separated (required)")
	f.StringVar(&o.Mode, "mode", "step-amplification", "naive, step-amplification, noise-reduction or continual")
	f.StringVar(&o.Accounting, "accounting", "basic", "how selection and training compose: basic or rdp")
	f.BoolVar(&c.ScoresLabelled, "scores-labelled", false, "the acquisition scores labelled records too (§3.5): everyone pays ε_Sel")
	f.StringVar(&o.Conversion, "conversion", "balle2020", "RDP to (ε, δ) conversion: balle2020 or classic")
	selectionFlags(f, &o.poolOptions, "topk")
	f.IntVar(&o.PoolSize, "pool-size", 0, "poisson: the number of pool records n (the initial rate is --initial/n; required)")
	f.BoolVar(&c.PaperTopK, "paper-accounting", false, "topk: calibrate σ the paper's way, training charged add/remove, to show what that plan "+
		"really costs (epsilon_replace); for comparison only, pool run refuses such a plan")
	f.BoolVar(&o.JSON, "json", false, "print one JSON object")
	poolCmd.AddCommand(poolPlanCmd)
	rootCmd.AddCommand(poolCmd)
}

// poolOptions are the plan's flags, which pool plan and pool run both
// declare: the numbers and switches bound straight into Config, the names
// that poolConfig parses into it.
type poolOptions struct {
	Config                                                    pool.Config
	Queries, Mode, Accounting, Conversion, Selection, Labeler string
}

// poolPlanOptions are pool plan's flags, bound in its init.
type poolPlanOptions struct {
	poolOptions
	// PoolSize is the pool's n (Poisson selection).
	PoolSize int
	JSON     bool
}

var poolPlanOpts poolPlanOptions

// selectionFlags are the selection scheme's flags of o, shared by pool
// plan and pool run.
func selectionFlags(f *pflag.FlagSet, o *poolOptions, def string) {
	f.StringVar(&o.Selection, "selection", def, "poisson (independent coins, the sound scheme: docs/pool.md) or topk (the paper's fixed sizes, "+
		"training charged under replace-one)")
	f.StringVar(&o.Labeler, "labeler", "trusted", "trusted (sees the selections, paper 001 §3.1) or untrusted (selections are releases: topk only)")
	f.Float64Var(&o.Config.PMax, "p-max", 0.2, "poisson: the largest probability with which a selection chooses a record")
}

func runPoolPlan(cmd *cobra.Command, _ []string) error {
	o := &poolPlanOpts
	cfg, err := poolConfig(cmd, &o.poolOptions, o.PoolSize)
	if err != nil {
		return err
	}
	p, err := pool.Build(cfg)
	if err != nil {
		return err
	}
	if o.JSON {
		return printJSON(cmd.OutOrStdout(), p)
	}
	return poolTable(cmd.OutOrStdout(), p)
}

// poolConfig is the plan o's flags give, checked; poolSize is the pool's
// n. pool run declares no --scores-labelled or --paper-accounting: its
// plans have neither.
func poolConfig(cmd *cobra.Command, o *poolOptions, poolSize int) (pool.Config, error) {
	f := cmd.Flags()
	for _, name := range []string{"epsilon", "delta", "batch", "epochs", "initial", "queries"} {
		if !f.Changed(name) {
			return pool.Config{}, fmt.Errorf("--%s is required", name)
		}
	}
	cfg := o.Config
	var err error
	if cfg.Queries, err = parseQueries(o.Queries); err != nil {
		return cfg, fmt.Errorf("--queries: %w", err)
	}
	if cfg.Mode, err = pool.ParseMode(o.Mode); err != nil {
		return cfg, fmt.Errorf("--mode: %w", err)
	}
	if cfg.Accounting, err = pool.ParseAccounting(o.Accounting); err != nil {
		return cfg, fmt.Errorf("--accounting: %w", err)
	}
	if cfg.Conversion, err = account.ParseConversion(o.Conversion); err != nil {
		return cfg, fmt.Errorf("--conversion: %w", err)
	}
	if cfg.Selection, err = pool.ParseSelection(o.Selection); err != nil {
		return cfg, fmt.Errorf("--selection: %w", err)
	}
	if cfg.Labeler, err = pool.ParseLabeler(o.Labeler); err != nil {
		return cfg, fmt.Errorf("--labeler: %w", err)
	}
	cfg.PoolSize = poolSize
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
