package kanon

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/mech"
	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/sketch"
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
	case c.Threshold != ThresholdExact && c.Threshold != ThresholdDP:
		return fmt.Errorf("threshold must be %q or %q, got %q", ThresholdExact, ThresholdDP, c.Threshold)
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
// used. The log's labels are the simulator's ground truth.
func Run(cfg Config, log []Query, r *rng.Rand, led *ledger.Ledger) (*Result, error) {
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
	test, golden, pool := split(log, cfg, r)
	res := &Result{Config: cfg, Classes: len(labels)}
	if seed, ok := r.Seed(); ok {
		res.Seed = seed
	}
	released, err := release(cfg, pool, r, led, res)
	if err != nil {
		return nil, err
	}
	res.Released = len(released)
	toEx := func(texts []string, labelOf map[string]string) []example {
		out := make([]example, len(texts))
		for i, t := range texts {
			out[i] = example{text: t, x: Featurize(t), class: classOf[labelOf[t]]}
		}
		return out
	}
	labelOf := map[string]string{}
	for _, q := range log {
		labelOf[q.Text] = q.Label
	}
	gold, testEx := toEx(golden, labelOf), toEx(test, labelOf)
	res.Majority = majority(gold, testEx, len(labels))
	if err := learn(cfg, gold, toEx(released, labelOf), testEx, len(labels), r, res); err != nil {
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

// split holds out TestFraction of the distinct queries for evaluation and
// Golden more as the labelled bootstrap set; the pool is every occurrence
// of the remaining queries (the log the privacy mechanism sees).
func split(log []Query, cfg Config, r *rng.Rand) (test, golden []string, pool []string) {
	var distinct []string
	seen := map[string]bool{}
	for _, q := range log {
		if !seen[q.Text] {
			seen[q.Text] = true
			distinct = append(distinct, q.Text)
		}
	}
	slices.Sort(distinct)
	r.Shuffle(len(distinct), func(i, j int) { distinct[i], distinct[j] = distinct[j], distinct[i] })
	nTest := int(math.Round(cfg.TestFraction * float64(len(distinct))))
	nGold := min(cfg.Golden, len(distinct)-nTest)
	test, golden = distinct[:nTest], distinct[nTest:nTest+nGold]
	held := map[string]bool{}
	for _, t := range distinct[:nTest+nGold] {
		held[t] = true
	}
	for _, q := range log {
		if !held[q.Text] {
			pool = append(pool, q.Text)
		}
	}
	return test, golden, pool
}

// release samples the pool at rate β, applies the threshold and charges
// the ledger before returning the released distinct queries (sorted). The
// sample, sketch and counts stay here.
func release(cfg Config, pool []string, r *rng.Rand, led *ledger.Ledger, res *Result) ([]string, error) {
	var sample []string
	for _, q := range pool {
		if cfg.Beta == 1 || mech.BernoulliFloat(r, cfg.Beta) {
			sample = append(sample, q)
		}
	}
	var (
		loss account.Loss
		keep func() ([]string, error)
	)
	switch {
	case cfg.Baseline:
		keep = func() ([]string, error) { return exactKeep(cfg, sample) }
	case cfg.Threshold == ThresholdDP:
		m, err := NewNoisyThreshold(cfg.NoiseEpsilon, cfg.K, cfg.Beta)
		if err != nil {
			return nil, err
		}
		loss = m.Loss()
		keep = func() ([]string, error) { return m.Apply(r, countAll(sample)) }
	default:
		g, err := Epsilon(cfg.Beta, cfg.K, cfg.Delta)
		if err != nil {
			return nil, fmt.Errorf("beta = %v, k = %d: %w (use the baseline for a non-private reference)", cfg.Beta, cfg.K, err)
		}
		loss, res.NMax = g.Loss(), g.NMax
		keep = func() ([]string, error) { return exactKeep(cfg, sample) }
	}
	if cfg.Baseline {
		out, err := keep()
		slices.Sort(out)
		return out, err
	}
	if led == nil {
		return nil, errors.New("a private run needs a ledger")
	}
	res.Private, res.Epsilon, res.Delta = true, loss.Epsilon, loss.Delta
	out, err := ledger.ReleaseCharge(led, ledger.Charge{Groups: []string{Group}, Loss: loss,
		Note: fmt.Sprintf("kanon %s threshold, beta=%v k=%d", cfg.Threshold, cfg.Beta, cfg.K)}, keep)
	slices.Sort(out)
	return out, err
}

// exactKeep is the Li–Qardaji–Su filter: a Count-Mean-Min sketch of the
// sample pre-filters and an exact recount of its candidates decides
// (sketch.Survivors), so the kept set is exactly {q : count ≥ k}.
func exactKeep(cfg Config, sample []string) ([]string, error) {
	width := cfg.SketchWidth
	if width == 0 {
		h, err := sketch.NewHLL(14)
		if err != nil {
			return nil, err
		}
		for _, q := range sample {
			h.Insert(q)
		}
		width = sketch.WidthFor(h.Estimate())
	}
	s, err := sketch.NewCMM(cfg.SketchRows, width, SketchSeed, true)
	if err != nil {
		return nil, err
	}
	for _, q := range sample {
		s.Add(q)
	}
	var out []string
	for q := range sketch.Survivors(s, uint64(cfg.K), slices.Values(sample)) {
		out = append(out, q)
	}
	return out, nil
}

// countAll counts every sampled query exactly. The DP threshold needs the
// true counts (a sketch's collisions would change many keys' counts at
// once), so this mode does not use the sketch.
func countAll(sample []string) map[string]uint64 {
	c := map[string]uint64{}
	for _, q := range sample {
		c[q]++
	}
	return c
}
