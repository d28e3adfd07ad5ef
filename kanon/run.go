package kanon

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/rng"
)

// Threshold modes.
const (
	// ThresholdExact keeps queries whose sampled count is ≥ k (Li–Qardaji–Su;
	// the sketch pre-filters, an exact recount decides: sketch.Survivors).
	ThresholdExact = "exact"
	// ThresholdDP keeps queries whose sampled count plus discrete Laplace
	// noise is ≥ k (NoisyThreshold).
	ThresholdDP = "dp"
)

// checkThreshold accepts ThresholdExact and ThresholdDP.
func checkThreshold(t string) error {
	if t != ThresholdExact && t != ThresholdDP {
		return fmt.Errorf("threshold must be %q or %q, got %q", ThresholdExact, ThresholdDP, t)
	}
	return nil
}

// Group is the ledger group the pipeline charges: every query occurrence
// belongs to the one log.
const Group = "query-log"

// Config is one pipeline run (Feyisetan et al. 2019, Algorithm 1).
type Config struct {
	// Beta is the sampling rate β ∈ (0, 1]; K the frequency threshold ≥ 1.
	Beta float64 `json:"beta"`
	K    int     `json:"k"`
	// Delta is the δ at which the Li–Qardaji–Su ε is charged (exact mode).
	Delta float64 `json:"delta"`
	// Threshold is ThresholdExact or ThresholdDP; NoiseEpsilon is the
	// noisy threshold's ε' (dp mode).
	Threshold    string  `json:"threshold"`
	NoiseEpsilon float64 `json:"noise_epsilon,omitempty"`
	// Baseline marks the paper's non-private reference (β = 1, k = 1):
	// nothing is charged and the result says Private = false.
	Baseline bool `json:"baseline,omitempty"`
	// LabelsBudget is the number of queries sent to annotators; Rounds
	// splits it into acquisition rounds (retraining after each).
	LabelsBudget int `json:"labels_budget"`
	Rounds       int `json:"rounds"`
	// Copies is how many annotators label each chosen query (majority
	// vote); the paper sends one copy. LabelsBudget counts annotations, so
	// Copies > 1 labels fewer queries, each more reliably.
	Copies int `json:"copies"`
	// Golden is the size of the labelled bootstrap set.
	Golden int `json:"golden"`
	// AnnotatorAccuracy and AnnotatorSD give each of Annotators annotators
	// an accuracy drawn from N(AnnotatorAccuracy, AnnotatorSD²).
	AnnotatorAccuracy float64 `json:"annotator_accuracy"`
	AnnotatorSD       float64 `json:"annotator_sd"`
	Annotators        int     `json:"annotators"`
	// Ranker is RankMCDropout (the paper's: entropy of the mean of Passes
	// dropout passes of an MLP with Hidden units and dropout rate Dropout)
	// or RankBootstrap (a bootstrap ensemble of Members linear models).
	// Epochs is either model's training length.
	Ranker  string  `json:"ranker"`
	Passes  int     `json:"passes,omitempty"`
	Hidden  int     `json:"hidden,omitempty"`
	Dropout float64 `json:"dropout,omitempty"`
	Members int     `json:"members,omitempty"`
	Epochs  int     `json:"epochs"`
	// TestFraction of the distinct queries is held out for evaluation.
	TestFraction float64 `json:"test_fraction"`
	// Positive, when set, makes the task binary: labels starting with one
	// of its comma-separated prefixes are "positive", the rest "negative".
	Positive string `json:"positive,omitempty"`
	// SketchRows × SketchWidth size the Count-Mean-Min sketch; width 0
	// sizes it from a HyperLogLog estimate of the sample's distinct
	// queries (sketch.WidthFor). The kept set is exact either way; the
	// width only sets how many false candidates the recount checks.
	SketchRows  int `json:"sketch_rows"`
	SketchWidth int `json:"sketch_width"`
}

// DefaultConfig returns the paper's settings where it gives them (annotator
// accuracy N(0.65, 0.01)) and dpal's elsewhere.
func DefaultConfig() Config {
	return Config{Beta: 0.3, K: 20, Delta: 1e-6, Threshold: ThresholdExact, NoiseEpsilon: 1,
		LabelsBudget: 500, Rounds: 5, Copies: 1, Golden: 100, AnnotatorAccuracy: 0.65, AnnotatorSD: 0.01,
		Annotators: 10, Ranker: RankMCDropout, Passes: 10, Hidden: 64, Dropout: 0.5, Members: 3, Epochs: 5,
		TestFraction: 0.2, SketchRows: 4}
}

// Validate checks c.
func (c Config) Validate() error {
	if err := ValidateSampling(c.Beta, c.K); err != nil {
		return err
	}
	switch {
	case checkThreshold(c.Threshold) != nil:
		return checkThreshold(c.Threshold)
	case c.LabelsBudget < 0:
		return fmt.Errorf("labels budget must be >= 0, got %d", c.LabelsBudget)
	case c.Rounds < 1 || c.Golden < 1 || c.Annotators < 1 || c.Epochs < 1 || c.Copies < 1:
		return errors.New("rounds, golden, annotators, copies and epochs must be >= 1")
	case c.Ranker == RankMCDropout && (c.Passes < 1 || c.Hidden < 1 || !(c.Dropout > 0 && c.Dropout < 1)):
		return fmt.Errorf("ranker %s needs passes >= 1, hidden >= 1 and dropout in (0, 1), got %d, %d, %v", RankMCDropout, c.Passes, c.Hidden, c.Dropout)
	case c.Ranker == RankBootstrap && c.Members < 1:
		return fmt.Errorf("ranker %s needs members >= 1, got %d", RankBootstrap, c.Members)
	case c.Ranker != RankMCDropout && c.Ranker != RankBootstrap:
		return fmt.Errorf("ranker must be %q or %q, got %q", RankMCDropout, RankBootstrap, c.Ranker)
	case !(c.AnnotatorAccuracy >= 0 && c.AnnotatorAccuracy <= 1) || !(c.AnnotatorSD >= 0):
		return fmt.Errorf("annotator accuracy must be in [0, 1] and its sd >= 0, got %v, %v", c.AnnotatorAccuracy, c.AnnotatorSD)
	case !(c.TestFraction > 0 && c.TestFraction < 1):
		return fmt.Errorf("test fraction must be in (0, 1), got %v", c.TestFraction)
	case c.SketchWidth != 0 && (c.SketchWidth < 2 || c.SketchWidth&(c.SketchWidth-1) != 0):
		return fmt.Errorf("sketch width must be 0 (sized by HyperLogLog) or a power of two >= 2, got %d", c.SketchWidth)
	}
	return nil
}

// Point is the test accuracy after Labels annotations.
type Point struct {
	Labels   int     `json:"labels"`
	Accuracy float64 `json:"accuracy"`
}

// Result is one run's outcome. Released is the size of the set that left
// the trusted side; Curve is the learning curve on the held-out queries.
type Result struct {
	Config   Config  `json:"config"`
	Seed     uint64  `json:"seed"`
	Private  bool    `json:"private"`
	Epsilon  float64 `json:"epsilon"`
	Delta    float64 `json:"delta"`
	NMax     int     `json:"n_max,omitempty"`
	Released int     `json:"released"`
	// Queries is the released set itself, sorted (`dpal kanon run
	// --released-out`); it is not part of the JSON result.
	Queries []string `json:"-"`
	// LabelsUsed is the annotation budget spent: Copies annotations for
	// each of min(LabelsBudget/Copies, Released) queries.
	LabelsUsed int     `json:"labels_used"`
	Curve      []Point `json:"curve"`
	Accuracy   float64 `json:"accuracy"`
	// AnnotationAccuracy is the share of annotator labels that were right.
	AnnotationAccuracy float64 `json:"annotation_accuracy"`
	// Classes is the number of labels.
	Classes int `json:"classes"`
	// Majority is the test accuracy of the trivial model that always
	// answers the golden set's most common class: a private model no better
	// than it has learned nothing.
	Majority float64 `json:"majority"`
}

// example is a distinct query with its features and true class.
type example struct {
	text  string
	x     Features
	class int
}

// Run executes the pipeline on log with randomness from r, charging led
// (which may be nil only for a Baseline run) before the released set is
// used. The log's labels are the simulator's ground truth. The release
// stage's coins are CoinsFor(r): its seed's, or secure.
func Run(cfg Config, log []Query, r *rng.Rand, led *ledger.Ledger) (*Result, error) {
	return run(cfg, log, r, func(st *Stage, texts []string, res *Result) (Split, error) {
		loss, nmax, err := cfg.guarantee() // refuse a (β, k) without a guarantee before the stage runs
		if err != nil {
			return Split{}, err
		}
		sp, err := st.Release(texts)
		if err != nil {
			return Split{}, err
		}
		sp.Released, err = release(cfg, loss, nmax, sp.Released, led, res)
		return sp, err
	})
}

// RunReleased continues a run from a set released elsewhere and charged
// there (dpal-beam's --output, with its ledger file): the holdout is drawn
// as Run draws it, released queries that fall in it are dropped (so test
// and golden stay unseen; with the same seed there are none), and the rest
// are ranked, annotated and learned from. Nothing is charged here; the
// result reports the (ε, δ) that cfg's stage costs. A released query
// absent from log is an error: the simulator has no label for it.
func RunReleased(cfg Config, log []Query, released []string, r *rng.Rand) (*Result, error) {
	return run(cfg, log, r, func(st *Stage, texts []string, res *Result) (Split, error) {
		loss, nmax, err := cfg.guarantee()
		if err != nil {
			return Split{}, err
		}
		res.Private, res.Epsilon, res.Delta, res.NMax = !cfg.Baseline, loss.Epsilon, loss.Delta, nmax
		var sp Split
		sp.Test, sp.Golden = st.Holdout(texts)
		inLog, held := map[string]bool{}, map[string]bool{}
		for _, q := range texts {
			inLog[q] = true
		}
		for _, q := range slices.Concat(sp.Test, sp.Golden) {
			held[q] = true
		}
		for _, q := range released {
			if !inLog[q] {
				return Split{}, fmt.Errorf("released query %q is not in the log", q)
			}
			if !held[q] {
				sp.Released = append(sp.Released, q)
			}
		}
		return sp, nil
	})
}

// run is Run and RunReleased: validate, build the stage, let stage produce
// the split and released set, then learn.
func run(cfg Config, log []Query, r *rng.Rand, stage func(*Stage, []string, *Result) (Split, error)) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(log) == 0 {
		return nil, errors.New("log is empty")
	}
	log = relabel(log, cfg.Positive)
	labels := Labels(log)
	if len(labels) < 2 {
		return nil, fmt.Errorf("need at least 2 labels in the log, got %d (unlabelled lines cannot be simulated)", len(labels))
	}
	classOf := make(map[string]int, len(labels))
	for i, l := range labels {
		classOf[l] = i
	}
	res := &Result{Config: cfg, Classes: len(labels)}
	if seed, ok := r.Seed(); ok {
		res.Seed = seed
	}
	coins, err := CoinsFor(r)
	if err != nil {
		return nil, err
	}
	st, err := NewStage(cfg, coins)
	if err != nil {
		return nil, err
	}
	texts := make([]string, len(log))
	labelOf := map[string]string{}
	for i, q := range log {
		texts[i] = q.Text
		labelOf[q.Text] = q.Label
	}
	sp, err := stage(st, texts, res)
	if err != nil {
		return nil, err
	}
	res.Released, res.Queries = len(sp.Released), sp.Released
	toEx := func(texts []string) []example {
		out := make([]example, len(texts))
		for i, t := range texts {
			out[i] = example{text: t, x: Featurize(t), class: classOf[labelOf[t]]}
		}
		return out
	}
	gold, testEx := toEx(sp.Golden), toEx(sp.Test)
	res.Majority = majority(gold, testEx, len(labels))
	if err := learn(cfg, gold, toEx(sp.Released), testEx, len(labels), r, res); err != nil {
		return nil, err
	}
	return res, nil
}

// majority is the test accuracy of always answering the golden set's most
// common class.
func majority(golden, test []example, classes int) float64 {
	count := make([]int, classes)
	for _, e := range golden {
		count[e.class]++
	}
	best := 0
	for c, n := range count {
		if n > count[best] {
			best = c
		}
	}
	right := 0
	for _, e := range test {
		if e.class == best {
			right++
		}
	}
	return float64(right) / float64(max(len(test), 1))
}

// relabel maps labels to positive/negative when positive (comma-separated
// prefixes) is set.
func relabel(log []Query, positive string) []Query {
	if positive == "" {
		return log
	}
	prefixes := strings.Split(positive, ",")
	out := make([]Query, len(log))
	for i, q := range log {
		out[i] = Query{Text: q.Text, Label: "negative"}
		for _, p := range prefixes {
			if p != "" && strings.HasPrefix(q.Label, p) {
				out[i].Label = "positive"
			}
		}
	}
	return out
}

// release charges loss (cfg.guarantee's) to the ledger for the stage's
// kept set (trusted-side until then) and returns it. A baseline run
// charges nothing.
func release(cfg Config, loss account.Loss, nmax int, kept []string, led *ledger.Ledger, res *Result) ([]string, error) {
	if cfg.Baseline {
		return kept, nil
	}
	if led == nil {
		return nil, errors.New("a private run needs a ledger")
	}
	res.Private, res.Epsilon, res.Delta, res.NMax = true, loss.Epsilon, loss.Delta, nmax
	return ledger.ReleaseCharge(led, cfg.charge(loss, ""), func() ([]string, error) { return kept, nil })
}
