package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dpal-dev/dpal/data"
	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/groupsearch"
	"github.com/dpal-dev/dpal/outfile"
)

var searchCmd = &cobra.Command{
	Use:   "search",
	Short: "Locate the one anomaly with DP noisy binary search (Bittner, Sarwate, Wright 2018)",
	Long: `Runs the private noisy binary search of Bittner, Sarwate and Wright (2018):
an in-process oracle holds the anomaly scores and answers group queries with
differential privacy for every non-anomalous individual (anomaly-restricted
neighbours, Definition 1); the searcher sees only those answers.

The scores file has one non-negative score per line, or "index,score" lines
(indices are reported back as given). Blank lines and lines starting with #
are skipped. Every score must be at most --t-low (non-anomalous) or at least
--t-high (the anomaly), and exactly one must reach --t-high (--subsets N
searches N random disjoint subsets, for several anomalies). Thresholds must
be chosen without looking at the scores, or the guarantee is void.

Oracles: rr (randomized response, eq. 5), noisy-max (eq. 9 read by eq. 11),
binarized (Z = 1(Y > Ybar) read by eq. 24), mean (noisy group means). Each
answer costs --epsilon-answer and the whole search at most --epsilon = b;
without --epsilon, b = 100*epsilon-answer (at most 100 answers), with a
warning on stderr, and the JSON states the worst-case spend. The search
stops before b is exceeded ((T+1)eps > b), when max f > --halt-posterior,
when the log-odds exceed log(1/--halt-delta) (eq. 25), or at
Ben-Or–Hassidim's eps_par. --ledger FILE is capped at --budget-epsilon
(default b for a new file; an existing file keeps its own cap, and
without --epsilon b is that cap).

Old spellings, for one release: --budget b is --epsilon b; --epsilon
without --epsilon-answer is read as the cost of one answer (its meaning
before), with a warning.

Noise comes from a CSPRNG keyed from the OS (dp/rng.Secure) unless --seed
is given (for experiments; the seed is echoed in the output and in the
--posterior-out header).`,
	Args: cobra.NoArgs,
	RunE: runSearch,
}

// defaultBudgetAnswers sets the budget used when --epsilon is not given:
// b = defaultBudgetAnswers·ε, enough answers for n in the millions at a
// moderate threshold ratio, and a finite worst case the output states.
const defaultBudgetAnswers = 100

// searchOptions are the flags of `dpal search`. The thresholds and
// --clip are bound into Params, the halting rules into Halting; their ε
// and budget come from EpsilonAnswer, Epsilon and the deprecated Budget
// (searchEpsilons).
type searchOptions struct {
	Scores, Oracle, PosteriorOut, Ledger string
	Params                               groupsearch.Params
	Halting                              groupsearch.Halting
	EpsilonAnswer, Epsilon, Budget       float64
	Top, Subsets                         int
	Seed                                 uint64
	JSON                                 bool
}

var searchOpts searchOptions

func init() {
	f, o := searchCmd.Flags(), &searchOpts
	f.StringVar(&o.Scores, "scores", "", "scores file (required): one score per line, or index,score")
	f.Float64Var(&o.Params.TLow, "t-low", 0, "t_low: every non-anomalous score is at most this (required)")
	f.Float64Var(&o.Params.THigh, "t-high", 0, "t_high: the anomaly's score is at least this (required)")
	f.StringVar(&o.Oracle, "oracle", "noisy-max", "oracle: rr, noisy-max, binarized or mean")
	f.Float64Var(&o.EpsilonAnswer, "epsilon-answer", 0, "privacy cost ε of one answer (required)")
	f.Float64Var(&o.Epsilon, "epsilon", 0, "ε of the whole search, b > 0: it stops before spending more (default 100·epsilon-answer, i.e. at most 100 answers, with a warning)")
	f.Float64Var(&o.Budget, "budget", 0, "deprecated: use --epsilon")
	markDeprecated(f, "budget", "use --epsilon (the whole search's ε)")
	f.Float64Var(&o.Halting.Posterior, "halt-posterior", 0.5, "stop once max f > α (0 disables)")
	f.Float64Var(&o.Halting.Delta, "halt-delta", 0, "stop once max log(f/(1-f)) > log(1/δ), eq. 25 (0 disables)")
	f.BoolVar(&o.Halting.BenOrHassidim, "halt-ben-or-hassidim", false, "stop once max f > (24 ln n)^(-1/2)")
	f.IntVar(&o.Halting.MaxQueries, "max-queries", 0, "cap on the number of queries (0: only the budget caps them)")
	f.IntVar(&o.Top, "top", 4, "size |S| of the reported top set")
	f.IntVar(&o.Subsets, "subsets", 1, "search this many random disjoint subsets (several anomalies, §7)")
	f.BoolVar(&o.Params.Clip, "clip", false, "lower scores between t_low and t_high to t_low instead of rejecting them")
	f.Uint64Var(&o.Seed, "seed", 0, "seed for reproducible experiments (default: secure randomness)")
	f.StringVar(&o.PosteriorOut, "posterior-out", "", "also write the final posterior f_T as index,probability lines to this file (# header lines record the oracle, queries and seed); an existing file needs --force")
	forceFlag(f)
	f.BoolVar(&o.JSON, "json", false, "print one JSON object")
	f.StringVar(&o.Ledger, "ledger", "", "durable ledger: a FILE or postgres://…?ledger=NAME (docs/postgres.md): created with a cap of --budget-epsilon (default --epsilon) if new; later runs continue it and stop when its budget is spent (default: in memory)")
	budgetFlags(f)
	rootCmd.AddCommand(searchCmd)
}

// scoreFile is a parsed scores file: the scores, the index reported for
// each, and the line each came from.
type scoreFile struct {
	Scores []float64
	Labels []int64
	Lines  []int
}

// maxScoreLine is the longest line a scores file may have, in bytes.
const maxScoreLine = 1 << 20

// parseScores reads one score per line or "index,score" lines. It rejects
// non-numbers, NaN, ±Inf, negative scores, a mix of the two formats and
// repeated indices, naming the line.
func parseScores(r io.Reader) (*scoreFile, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), maxScoreLine)
	out := &scoreFile{}
	seen := map[int64]int{}
	withIndex := -1
	line := 1
	for ; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.Split(text, ",")
		if len(fields) > 2 {
			return nil, fmt.Errorf("line %d: want a score or index,score, got %s", line, data.Quote(text))
		}
		has := len(fields) == 2
		if withIndex == -1 {
			withIndex = map[bool]int{false: 0, true: 1}[has]
		} else if has != (withIndex == 1) {
			return nil, fmt.Errorf("line %d: mixes plain scores and index,score lines", line)
		}
		label := int64(len(out.Scores))
		if has {
			v, err := strconv.ParseInt(strings.TrimSpace(fields[0]), 10, 64)
			if err != nil || v < 0 {
				return nil, fmt.Errorf("line %d: index %s is not a non-negative integer", line, data.Quote(fields[0]))
			}
			if prev, dup := seen[v]; dup {
				return nil, fmt.Errorf("line %d: index %d repeats line %d", line, v, prev)
			}
			seen[v], label = line, v
		}
		x, err := strconv.ParseFloat(strings.TrimSpace(fields[len(fields)-1]), 64)
		switch {
		case err != nil:
			return nil, fmt.Errorf("line %d: score %s is not a number", line, data.Quote(fields[len(fields)-1]))
		case math.IsNaN(x) || math.IsInf(x, 0):
			return nil, fmt.Errorf("line %d: score %v is not finite", line, x)
		case x < 0:
			return nil, fmt.Errorf("line %d: score %v is negative (scores must be >= 0)", line, x)
		}
		out.Scores = append(out.Scores, x)
		out.Labels = append(out.Labels, label)
		out.Lines = append(out.Lines, line)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("line %d: longer than %d bytes: %w", line, maxScoreLine, err)
		}
		return nil, fmt.Errorf("line %d: %w", line, err)
	}
	if len(out.Scores) < 2 {
		return nil, fmt.Errorf("need at least 2 scores, got %d", len(out.Scores))
	}
	return out, nil
}

// foundOutput is a search's groupsearch.Result with its indices replaced by
// the labels the scores file gave them.
type foundOutput struct {
	Top          []int64   `json:"top"`
	PosteriorTop []float64 `json:"posterior_top"`
	MaxPosterior float64   `json:"max_posterior"`
	Queries      int       `json:"queries"`
	EpsilonSpent float64   `json:"epsilon_spent"`
	HaltedBy     string    `json:"halted_by"`
}

func foundOf(sf *scoreFile, res groupsearch.Result) foundOutput {
	return foundOutput{Top: labelsOf(sf, res.Top), PosteriorTop: res.PosteriorTop, MaxPosterior: res.MaxPosterior,
		Queries: res.Queries, EpsilonSpent: res.EpsilonSpent, HaltedBy: res.HaltedBy}
}

// searchOutput is the JSON the search prints.
type searchOutput struct {
	foundOutput
	BudgetError string `json:"budget_error,omitempty"`
	// Budget is the ledger's ε budget b per individual; BudgetDefault is
	// set when --epsilon was not given and b = defaultBudgetAnswers·ε_answer.
	Budget        float64 `json:"budget"`
	BudgetDefault bool    `json:"budget_default,omitempty"`
	// WorstCaseEpsilon is the most this run could have spent on any one
	// individual: the ledger refuses answers beyond b (with --subsets,
	// each individual is in one subset: parallel composition).
	WorstCaseEpsilon float64          `json:"worst_case_epsilon"`
	Subsets          []subsetOutput   `json:"subsets,omitempty"`
	Oracle           string           `json:"oracle"`
	N                int              `json:"n"`
	Params           searchParamsJSON `json:"params"`
	Ledger           *ledger.Report   `json:"ledger"`
	Privacy          string           `json:"privacy"`
	Seed             *uint64          `json:"seed,omitempty"`
}

type searchParamsJSON struct {
	groupsearch.Params
	groupsearch.Halting
	Top int `json:"top"`
}

type subsetOutput struct {
	Members int `json:"members"`
	foundOutput
}

func runSearch(cmd *cobra.Command, _ []string) error {
	f, o := cmd.Flags(), &searchOpts
	path := o.Scores
	if path == "" {
		return errors.New("--scores is required")
	}
	for _, name := range []string{"t-low", "t-high"} {
		if !f.Changed(name) {
			return fmt.Errorf("--%s is required", name)
		}
	}
	p, h := o.Params, o.Halting // copies: a run sets their ε and budget
	budgetDefault, err := searchEpsilons(cmd, o, &p.Epsilon, &h.Budget)
	if err != nil {
		return err
	}
	if err := p.Validate(); err != nil {
		return err
	}
	kind, err := groupsearch.ParseKind(o.Oracle)
	if err != nil {
		return err
	}
	if budgetDefault {
		h.Budget = defaultBudgetAnswers * p.Epsilon
	}
	if err := h.Validate(); err != nil {
		return err
	}
	top, subsets := o.Top, o.Subsets
	if top < 1 || subsets < 1 {
		return fmt.Errorf("--top and --subsets must be >= 1, got %d and %d", top, subsets)
	}
	seed := givenSeed(cmd, o.Seed)
	// Before anything runs: no output may clobber an input, and each
	// must be writable.
	paths := pathFlags(cmd, "posterior-out", "ledger", "scores")
	outs := []outfile.Path{paths["posterior-out"], paths["ledger"]}
	if err := outfile.CheckDistinct(outs, []outfile.Path{paths["scores"]}); err != nil {
		return err
	}
	if err := probeOutputs(cmd, outs); err != nil {
		return err
	}
	file, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("--scores: %w", err)
	}
	sf, err := parseScores(file)
	file.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := checkSearchScores(path, sf, p, subsets); err != nil {
		return err
	}
	led, err := searchLedger(cmd, o.Ledger, &h.Budget, &budgetDefault)
	if err != nil {
		return err
	}
	defer led.Close()
	if budgetDefault {
		slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil)).Warn("search: no --epsilon (the whole search's ε; --budget before) given; using the default",
			"budget", h.Budget, "max_answers", defaultBudgetAnswers, "worst_case_epsilon", h.Budget)
	}
	r := rng.New(seed)
	out := searchOutput{Oracle: string(kind), N: len(sf.Scores), Seed: seed,
		Budget: h.Budget, BudgetDefault: budgetDefault, WorstCaseEpsilon: h.Budget,
		Params: searchParamsJSON{Params: p, Halting: h, Top: top}, Privacy: privacyNote(kind)}
	postPath := o.PosteriorOut
	if subsets == 1 {
		err = searchOne(&out, sf, kind, p, h, top, led, r, postPath)
	} else {
		if postPath != "" {
			return errors.New("--posterior-out needs --subsets 1")
		}
		err = searchSplit(&out, sf, kind, p, h, top, subsets, led, r)
	}
	if err != nil {
		return err
	}
	if out.Ledger, err = led.Report(""); err != nil {
		return err
	}
	if o.JSON {
		return printJSON(cmd.OutOrStdout(), out)
	}
	printSearchText(cmd.OutOrStdout(), &out)
	return nil
}

// checkSearchScores applies the model's bounds (eq. 1) and names the line
// of an offending score.
func checkSearchScores(path string, sf *scoreFile, p groupsearch.Params, subsets int) error {
	_, anomalies, err := groupsearch.CheckScores(sf.Scores, p)
	var se *groupsearch.ScoreError
	if errors.As(err, &se) {
		return fmt.Errorf("%s line %d: %w", path, sf.Lines[se.Index], err)
	}
	if err != nil {
		return err
	}
	switch {
	case len(anomalies) == 0:
		return fmt.Errorf("%s: %w", path, groupsearch.ErrNoAnomaly)
	case len(anomalies) > 1 && subsets == 1:
		lines := make([]string, 0, 5)
		for _, i := range anomalies[:min(5, len(anomalies))] {
			lines = append(lines, strconv.Itoa(sf.Lines[i]))
		}
		return fmt.Errorf("%s: %d scores reach t_high (lines %s...): the search assumes one anomaly; use --subsets for several",
			path, len(anomalies), strings.Join(lines, ", "))
	}
	return nil
}

func searchOne(out *searchOutput, sf *scoreFile, kind groupsearch.Kind, p groupsearch.Params, h groupsearch.Halting,
	top int, led *ledger.Ledger, r *rng.Rand, postPath string) error {
	o, err := groupsearch.NewOracle(kind, sf.Scores, p, led, "search", r)
	if err != nil {
		return err
	}
	lik, err := p.Likelihood(kind)
	if err != nil {
		return err
	}
	s, err := groupsearch.NewSearcher(len(sf.Scores), lik, r)
	if err != nil {
		return err
	}
	res, err := s.Run(o, h, top)
	if err != nil && (!errors.Is(err, account.ErrBudgetExceeded) || res.Queries == 0) {
		// Not one answer could be paid for: the "top set" would be noise
		// of the searcher's own making, so say so instead of printing it,
		// with what the failed run spent.
		return fmt.Errorf("search failed after %d answers (the ledger records epsilon %g spent): %w", res.Queries, res.EpsilonSpent, err)
	}
	if err != nil {
		out.BudgetError = err.Error()
	}
	out.foundOutput = foundOf(sf, res)
	out.EpsilonSpent, _ = led.Spent("search")
	if postPath != "" {
		return writePosterior(postPath, sf, s.Posterior(), out)
	}
	return nil
}

// writePosterior writes f_T, one "index,probability" line per individual,
// after "#" header lines (which parsers of the scores format skip) naming
// the oracle, the queries, the spend and the seed (or secure randomness).
func writePosterior(path string, sf *scoreFile, f []float64, out *searchOutput) error {
	err := outfile.WriteFile(path, 0o644, func(file io.Writer) error {
		w := bufio.NewWriter(file)
		fmt.Fprintf(w, "# dpal search posterior f_T (index,probability): oracle %s, queries %d, epsilon_spent %g\n",
			out.Oracle, out.Queries, out.EpsilonSpent)
		if out.Seed != nil {
			fmt.Fprintf(w, "# seed %d\n", *out.Seed)
		} else {
			fmt.Fprintln(w, "# seed none (secure randomness, dp/rng.Secure)")
		}
		for i, v := range f {
			fmt.Fprintf(w, "%d,%s\n", sf.Labels[i], strconv.FormatFloat(v, 'g', -1, 64))
		}
		return w.Flush()
	})
	if err != nil {
		return fmt.Errorf("--posterior-out: %w", err)
	}
	return nil
}

func searchSplit(out *searchOutput, sf *scoreFile, kind groupsearch.Kind, p groupsearch.Params, h groupsearch.Halting,
	top, subsets int, led *ledger.Ledger, r *rng.Rand) error {
	res, err := groupsearch.SearchSplit(sf.Scores, kind, p, subsets, h, top, led, "search", r)
	if err != nil {
		return fmt.Errorf("search failed (the ledger records epsilon %g spent per individual): %w", res.Epsilon, err)
	}
	for _, s := range res.Subsets {
		out.Subsets = append(out.Subsets, subsetOutput{Members: s.Members, foundOutput: foundOf(sf, s.Result)})
		out.Queries += s.Queries
		if len(s.Top) > 0 {
			out.Top = append(out.Top, sf.Labels[s.Top[0]])
			out.PosteriorTop = append(out.PosteriorTop, s.PosteriorTop[0])
		}
	}
	out.EpsilonSpent, out.HaltedBy = res.Epsilon, "subsets"
	return nil
}

func labelsOf(sf *scoreFile, idx []int) []int64 {
	out := make([]int64, len(idx))
	for j, i := range idx {
		out[j] = sf.Labels[i]
	}
	return out
}

// privacyNote states the guarantee of the released output.
func privacyNote(kind groupsearch.Kind) string {
	base := "anomaly-restricted neighbours (Bittner et al. 2018, Def. 1): each answer is epsilon-DP for every non-anomalous individual, T answers are T*epsilon-DP (Prop. 2), valid only if t_low and t_high were fixed without looking at the scores"
	if kind == groupsearch.RR {
		base += "; randomized response depends on the data only through the anomaly's index, so epsilon (Prop. 1) protects that index and is a conservative charge for everyone else"
	}
	return base
}

func printSearchText(w io.Writer, out *searchOutput) {
	fmt.Fprintf(w, "top %v (posterior %v)\n", out.Top, out.PosteriorTop)
	fmt.Fprintf(w, "queries %d, epsilon spent %g, halted by %s\n", out.Queries, out.EpsilonSpent, out.HaltedBy)
	if out.BudgetDefault {
		fmt.Fprintf(w, "budget %g (default %d·epsilon; worst case epsilon %g)\n", out.Budget, defaultBudgetAnswers, out.WorstCaseEpsilon)
	}
	if out.BudgetError != "" {
		fmt.Fprintf(w, "budget: %s\n", out.BudgetError)
	}
	if out.Seed != nil {
		fmt.Fprintf(w, "seed %d\n", *out.Seed)
	}
}

// searchEpsilons reads the search's two ε: one answer's (*answer) and
// the whole search's (*total), which stays unset (and default is true)
// when not given. The spellings before the flag vocabulary still work for
// one release: --budget for --epsilon, and --epsilon without
// --epsilon-answer as one answer's cost (with a warning).
func searchEpsilons(cmd *cobra.Command, o *searchOptions, answer, total *float64) (isDefault bool, err error) {
	f := cmd.Flags()
	totalFlag := ""
	switch {
	case f.Changed("epsilon-answer"):
		*answer = o.EpsilonAnswer
		if f.Changed("epsilon") && f.Changed("budget") {
			return false, errors.New("--budget (deprecated) and --epsilon are both given: give only --epsilon, the whole search's ε")
		}
		totalFlag = map[bool]string{true: "epsilon", false: "budget"}[f.Changed("epsilon")]
	case f.Changed("epsilon"):
		*answer = o.Epsilon
		fmt.Fprintln(cmd.ErrOrStderr(), "dpal search: --epsilon without --epsilon-answer is read as the cost of one answer, its meaning before this release; "+
			"from the next release --epsilon is the whole search's ε: give --epsilon-answer for one answer and --epsilon for the search")
		totalFlag = "budget"
	default:
		return false, errors.New("--epsilon-answer is required (the privacy cost of one answer)")
	}
	if !f.Changed(totalFlag) {
		return true, nil
	}
	if o.Ledger != "" && totalFlag == "budget" && !f.Changed("budget-epsilon") {
		// The old --budget was the --ledger file's cap too.
		if err := f.Set("budget-epsilon", f.Lookup("budget").Value.String()); err != nil {
			return false, err
		}
	}
	*total = o.Epsilon
	if totalFlag == "budget" {
		*total = o.Budget
	}
	if !(*total > 0) {
		return false, fmt.Errorf("--%s must be > 0, got %v (omit it for the default %d·epsilon-answer)", totalFlag, *total, defaultBudgetAnswers)
	}
	return false, nil
}

// searchLedger opens the search's ledger (openLedger): the search charges
// every individual at most *b. An existing file (--ledger path) keeps its
// own cap: without --epsilon (*isDefault), *b becomes it and *isDefault
// false.
func searchLedger(cmd *cobra.Command, path string, b *float64, isDefault *bool) (*ledger.Ledger, error) {
	led, err := openLedger(cmd, runLedger{Charge: account.Budget{Epsilon: *b}})
	if err != nil {
		return nil, err
	}
	if path != "" && *isDefault {
		*b, *isDefault = led.Budget().Epsilon, false
	}
	return led, nil
}
