package pool

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/dpal-dev/dpal/data"
	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/mech"
	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/dpsgd"
	"github.com/dpal-dev/dpal/model/nn"
)

// Learner is the model the loop trains and how it selects.
type Learner struct {
	// Spec is the network (Spec.Dropout > 0 gives BALD its MC-dropout
	// passes; without dropout BALD's passes agree and it scores zero).
	Spec nn.Spec
	// Train is the DP-SGD setting (clip, optimiser, learning rate…); the
	// noise multiplier is set per phase from the plan. A new optimiser
	// state starts each phase; the network's parameters carry over
	// (θ_{i+1} = DP-SGD(θ_i, …), Fig. 2).
	Train dpsgd.Config
	// Acquisition scores the unlabelled pool (App. C).
	Acquisition Acquisition
	// NotDP selects by the exact top-k of the scores (TopKNotDP): NOT
	// differentially private, for the paper's non-private upper bounds
	// only. The plan must then give the selections nothing (ε_Sel = 0),
	// and the result says DP: false.
	NotDP bool
	// Passes is the number of MC-dropout forward passes for BALD (0: 10).
	Passes int
	// ScoreClip clips the scores (the clipping trick); 0 means
	// EntropyClip for entropy, BALDClip for BALD, no clipping
	// otherwise.
	ScoreClip float64
	// Threshold and PMin shape Poisson selection's probability
	// p_j(x) = p_max if score_j(x) ≥ Threshold, else PMin (PMin ≤ p_max):
	// a fixed public function of the score (in [0, 1], see
	// Acquisition.Score) under the last released model. Random
	// acquisition selects every record at p_max.
	Threshold float64
	PMin      float64
}

// Input is one run of the pool loop.
type Input struct {
	// Plan is the training plan (Build); its Config fixes ε, ε_Sel, δ,
	// the initial set and the query sizes.
	Plan *Plan
	// Learner is the model and acquisition.
	Learner Learner
	// Pool holds the features of every pool record (unlabelled: labels
	// come from Oracle only).
	Pool [][]float64
	// Oracle labels the records the loop chooses.
	Oracle Oracle
	// Test is a public test set for accuracy (nil: none).
	Test *data.Dataset
	// Progress, if not nil, is called after every DP-SGD step.
	Progress func()
	// ChargeKey, when set, makes every charge of the loop idempotent: it
	// carries Once = ChargeKey + the step it pays for (the run, round i's
	// phase e for group g, selection j), so a driver that re-runs a step
	// whose output never left (a crash before the release was stored)
	// charges it once. The ledger must then hold this run's charges
	// only, as a dpal serve project's does; leave it empty for a ledger
	// that several runs share.
	ChargeKey string
}

// once is the Once key of a charge for step, or "" without a ChargeKey.
func (in Input) once(step string) string {
	if in.ChargeKey == "" {
		return ""
	}
	return in.ChargeKey + "/" + step
}

// Span is the smallest and largest ε the ledger holds for a set of
// records.
type Span struct {
	Min float64 `json:"min"`
	Max float64 `json:"max"`
}

// GroupPrivacy is one set of records' privacy loss, read from the ledger
// per record, beside what the plan promised them.
type GroupPrivacy struct {
	// Group names the set: a plan group, "not-selected", or the query
	// just selected.
	Group string `json:"group"`
	// Records is the number of records in it.
	Records int `json:"records"`
	// Planned is the plan's ε for each of them.
	Planned float64 `json:"planned_epsilon"`
	// Ledger is the span of their ledger ε (records are ledger groups).
	Ledger Span `json:"ledger_epsilon"`
}

// Privacy is the per-record report at the end of a run.
type Privacy struct {
	// Epsilon and Delta are every record's target.
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
	// Trained are the labelled groups (trained records: at the target).
	Trained []GroupPrivacy `json:"trained"`
	// NotSelected are the records never selected (ε_Sel).
	NotSelected GroupPrivacy `json:"not_selected"`
	// All is the span of the ledger ε over every pool record: its Max is
	// the run's guarantee as the ledger holds it.
	All Span `json:"all_records"`
	// MaxDeviation is the largest |ledger − plan| over every record.
	MaxDeviation float64 `json:"max_deviation"`
	// Guarantee says what holds: the plan's (ε, δ) per record, or that
	// the selections were not DP.
	Guarantee string `json:"guarantee"`
}

// Round is the state after one training round.
type Round struct {
	// Round is the training round i = 1…T+1.
	Round int `json:"round"`
	// Labelled is |D_i|, the records trained on in the round.
	Labelled int `json:"labelled"`
	// Steps is the round's number of DP-SGD steps (all its phases).
	Steps int `json:"steps"`
	// TestAccuracy is the model's accuracy on the public test set after
	// the round (NaN without one).
	TestAccuracy float64 `json:"test_accuracy"`
	// Selected is the query chosen after the round (rounds 1…T): its
	// records have paid for the selections so far but not yet trained
	// (j·ε_Sel/T under basic accounting), read from the ledger.
	Selected *GroupPrivacy `json:"selected,omitempty"`
	// Seconds is the wall time of the round and its selection.
	Seconds float64 `json:"seconds"`
}

// Result is what a run reports.
type Result struct {
	// Acquisition names the acquisition, "(not DP)" appended for NotDP.
	Acquisition string `json:"acquisition"`
	// DP is false when the selections were the exact top-k.
	DP bool `json:"dp"`
	// Mode and Accounting are the plan's.
	Mode       string `json:"mode"`
	Accounting string `json:"accounting"`
	// Rounds are the rounds in order.
	Rounds []Round `json:"rounds"`
	// TestAccuracy and TestRecall (per class) are the final model's on
	// Input.Test; BalancedAccuracy is the mean recall over the classes
	// present in it.
	TestAccuracy     float64   `json:"test_accuracy"`
	TestRecall       []float64 `json:"test_recall"`
	BalancedAccuracy float64   `json:"balanced_accuracy"`
	// Selection names the selection scheme; Labels is the number of
	// records the oracle was asked to label (random under Poisson
	// selection; never released).
	Selection string `json:"selection"`
	Labels    int    `json:"labels"`
	// Privacy is the per-record report read from the ledger.
	Privacy Privacy `json:"privacy"`
	// Steps and Seconds are the run's DP-SGD steps and wall time.
	Steps   int     `json:"steps"`
	Seconds float64 `json:"seconds"`
	// Labelled are the pool indices of the labelled records per group
	// (initial, query-1, …): post-processing of the selections.
	Labelled [][]int `json:"-"`
	// Net is the final model.
	Net *nn.Net `json:"-"`
}

// RecordID is pool record i's ledger group: every record is its own group,
// so the ledger holds each record's composed loss.
func RecordID(i int) string { return "record-" + strconv.Itoa(i) }

// TotalSteps is the number of DP-SGD steps of the plan.
func (p *Plan) TotalSteps() int {
	n := 0
	for _, ph := range p.Phases {
		n += ph.Steps
	}
	return n
}

// loop is a run's state.
type loop struct {
	in     Input
	led    *ledger.Ledger
	r      *rng.Rand
	net    *nn.Net
	groups [][]int // pool indices per labelled group
	rows   [][]float64
	labels []int
	where  [][]int // positions in rows per group
	free   []bool  // free[i]: pool record i is unlabelled
	res    *Result
}

// Run runs pool-based DP active learning (paper 001, Fig. 2 with the
// plan's phases): a random initial set labelled by the oracle, then per
// round the plan's DP-SGD phases, and after rounds 1…T a selection from the
// unlabelled pool labelled by the oracle; last, the test accuracy and the
// per-record privacy report, read from the ledger.
//
// Every record is its own ledger group (RecordID). Before each phase the
// plan's loss for it (Plan.PhaseLoss) is recorded for every record of
// every sampled group; dpsgd.Trainer.Run, which charges one entry per
// group name, is given a scratch ledger, whose charges are checked against
// the plan. Selections are charged through Select before they are drawn.
// The ledger must have the plan's δ and conversion; its per-record budget
// stops the run with account.ErrBudgetExceeded before any release that
// would exceed it.
func Run(led *ledger.Ledger, r *rng.Rand, in Input) (*Result, error) {
	if in.Oracle == nil {
		return nil, errors.New("pool: a ledger, a plan and an oracle are required")
	}
	l, err := newLoop(led, r, in, nil)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if err := l.chargePoisson(); err != nil {
		return nil, err
	}
	if err := l.initial(); err != nil {
		return nil, err
	}
	if err := l.rounds(); err != nil {
		return nil, err
	}
	if err := l.finish(); err != nil {
		return nil, err
	}
	l.res.Seconds = time.Since(start).Seconds()
	l.res.Labelled = l.groups
	return l.res, nil
}

// newLoop checks in and starts a loop on net (nil: a new network drawn
// from r).
func newLoop(led *ledger.Ledger, r *rng.Rand, in Input, net *nn.Net) (*loop, error) {
	if err := checkInput(led, in); err != nil {
		return nil, err
	}
	if net == nil {
		var err error
		if net, err = nn.New(in.Learner.Spec, r.Split()); err != nil {
			return nil, fmt.Errorf("pool: %w", err)
		}
	} else if fmt.Sprint(net.Spec()) != fmt.Sprint(in.Learner.Spec) {
		return nil, errors.New("pool: the network's spec is not the learner's")
	}
	cfg := in.Plan.Config
	l := &loop{in: in, led: led, r: r, net: net, free: make([]bool, len(in.Pool)),
		res: &Result{Acquisition: in.Learner.Acquisition.String(), DP: !in.Learner.NotDP,
			Mode: cfg.Mode.String(), Accounting: cfg.Accounting.String(), Selection: cfg.Selection.String(), Net: net}}
	if in.Learner.NotDP {
		l.res.Acquisition += " (not DP)"
	}
	for i := range l.free {
		l.free[i] = true
	}
	return l, nil
}

// checkInput refuses inputs whose ledger would not read what the plan
// says, before anything is drawn.
func checkInput(led *ledger.Ledger, in Input) error {
	if led == nil || in.Plan == nil {
		return errors.New("pool: a ledger and a plan are required")
	}
	cfg := in.Plan.Config
	meta := led.Meta()
	switch {
	case meta.Budget.Delta != cfg.Delta:
		return fmt.Errorf("pool: the ledger's δ %v is not the plan's δ %v", meta.Budget.Delta, cfg.Delta)
	case meta.Conversion != cfg.Conversion:
		return fmt.Errorf("pool: the ledger converts RDP by %v, the plan by %v", meta.Conversion, cfg.Conversion)
	case cfg.ScoresLabelled:
		return errors.New("pool: the uncertainty acquisitions score only the unlabelled pool; plan without ScoresLabelled")
	case cfg.PaperTopK:
		return errors.New("pool: a plan made the paper's way (top-k training charged add/remove) under-charges; it is for comparison only")
	}
	if err := CheckLearner(cfg, in.Learner); err != nil {
		return err
	}
	switch {
	case cfg.Selection == Poisson && len(in.Pool) != cfg.PoolSize:
		return fmt.Errorf("pool: the pool has %d records, the plan's initial rate is set for %d", len(in.Pool), cfg.PoolSize)
	}
	need := cfg.Initial
	for _, q := range cfg.Queries {
		need += q
	}
	if len(in.Pool) < need {
		return fmt.Errorf("pool: the pool has %d records, the plan labels %d", len(in.Pool), need)
	}
	s := in.Learner.Spec
	for i, x := range in.Pool {
		if len(x) != s.Inputs {
			return fmt.Errorf("pool: record %d has %d features, the model takes %d", i, len(x), s.Inputs)
		}
		for j, v := range x {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("pool: record %d, feature %d is %v", i, j, v)
			}
		}
	}
	if in.Test != nil && in.Test.Len() > 0 && in.Test.Dim() != s.Inputs {
		return fmt.Errorf("pool: test rows have %d features, the model takes %d", in.Test.Dim(), s.Inputs)
	}
	return nil
}

// CheckLearner refuses a learner that cannot run plan cfg: an unknown
// acquisition, a selection charged other than the plan says (random and
// not-DP selections are charged nothing, private top-k needs ε_Sel > 0),
// or a Poisson rule outside 0 ≤ p_min ≤ p_max and a threshold in [0, 1].
func CheckLearner(cfg Config, lr Learner) error {
	a := lr.Acquisition
	switch {
	case a < Random || a > BALD:
		return fmt.Errorf("pool: unknown acquisition %d", int(a))
	case a == Random && lr.NotDP:
		return errors.New("pool: random selection reads no record; it is DP as it is")
	case (a == Random || lr.NotDP) && cfg.EpsilonSelect != 0:
		return fmt.Errorf("pool: %s selection is charged nothing, so plan it with ε_Sel = 0 (got %v)", a, cfg.EpsilonSelect)
	case cfg.Selection == Poisson && lr.NotDP:
		return errors.New("pool: not-DP selection is the exact top-k; Poisson selection is private as it is")
	case cfg.Selection == Poisson && !(lr.PMin >= 0 && lr.PMin <= cfg.PMax):
		return fmt.Errorf("pool: p-min must satisfy 0 <= p_min <= p_max = %v, got %v", cfg.PMax, lr.PMin)
	case cfg.Selection == Poisson && !(lr.Threshold >= 0 && lr.Threshold <= 1):
		return fmt.Errorf("pool: the selection threshold is a score in [0, 1], got %v", lr.Threshold)
	case cfg.Selection == TopK && a != Random && !lr.NotDP && cfg.EpsilonSelect == 0:
		return fmt.Errorf("pool: private %s selection needs ε_Sel > 0", a)
	}
	return nil
}

// initial draws D_1 and labels it.
func (l *loop) initial() error {
	idx, err := l.drawInitial()
	if err != nil {
		return err
	}
	return l.label(idx)
}

// drawInitial draws D_1 from the pool (reading no record): Initial
// records uniformly under top-k selection, each record by its own coin at
// β = Initial/PoolSize under Poisson selection.
func (l *loop) drawInitial() ([]int, error) {
	cfg := l.in.Plan.Config
	if cfg.Selection == Poisson {
		beta := cfg.InitialRate()
		var idx []int
		for i := range l.in.Pool {
			if mech.BernoulliFloat(l.r, beta) {
				idx = append(idx, i)
			}
		}
		return idx, nil
	}
	idx, err := RandomSubset(l.r, cfg.Initial, len(l.in.Pool))
	if err != nil {
		return nil, fmt.Errorf("pool: initial set: %w", err)
	}
	return idx, nil
}

// chargePoisson commits, under Poisson selection, the plan's per-record
// loss (PoissonPrivacy.Loss, docs/pool.md Theorem 1) to every pool record
// before anything is drawn or released: it covers the whole run, every
// released model included, whether or not the record is ever labelled.
func (l *loop) chargePoisson() error {
	p := l.in.Plan
	if p.Config.Selection != Poisson {
		return nil
	}
	if p.Poisson == nil {
		return errors.New("pool: a Poisson plan without its guarantee (build it with Build)")
	}
	ids := make([]string, len(l.in.Pool))
	for i := range ids {
		ids[i] = RecordID(i)
	}
	note := fmt.Sprintf("Poisson active learning: %d rounds, worst entry %s amplified at η = %.9g (β = %.9g, p_max = %v)",
		len(p.Config.Queries)+1, p.Poisson.WorstEntry, p.Poisson.EntryRate, p.Poisson.InitialRate, p.Poisson.PMax)
	if _, err := l.led.Record(ledger.Charge{Groups: ids, Loss: p.Poisson.Loss, Note: note, Once: l.in.once("run")}); err != nil {
		return fmt.Errorf("pool: %w", err)
	}
	return nil
}

// RandomSubset draws k of the indices 0…n−1 uniformly without replacement
// (mech's random acquisition: it reads no record, so it costs nothing),
// in draw order.
func RandomSubset(r *rng.Rand, k, n int) ([]int, error) {
	a, err := NewAcquire(Random, 0, k, 2, 0)
	if err != nil {
		return nil, err
	}
	return a.Select(r, make([]float64, n))
}

// label asks the oracle for idx's classes and adds them as a new group.
func (l *loop) label(idx []int) error {
	classes, err := l.in.Oracle.Label(idx)
	if err != nil {
		return fmt.Errorf("pool: %w", err)
	}
	return l.add(idx, classes)
}

// add adds the records idx with their classes as the next group.
func (l *loop) add(idx, classes []int) error {
	if len(classes) != len(idx) {
		return fmt.Errorf("pool: the oracle answered %d labels for %d records", len(classes), len(idx))
	}
	pos := make([]int, len(idx))
	for i, j := range idx {
		if j < 0 || j >= len(l.in.Pool) || !l.free[j] {
			return fmt.Errorf("pool: record %d is not an unlabelled pool record", j)
		}
		if c := classes[i]; c < 0 || c >= l.in.Learner.Spec.Classes {
			return fmt.Errorf("pool: record %d: label %d is not a class (0..%d)", j, c, l.in.Learner.Spec.Classes-1)
		}
		pos[i] = len(l.rows)
		l.rows = append(l.rows, l.in.Pool[j])
		l.labels = append(l.labels, classes[i])
		l.free[j] = false
	}
	l.groups = append(l.groups, idx)
	l.where = append(l.where, pos)
	l.res.Labels += len(idx)
	return nil
}

// rounds runs every round of the plan, selecting and labelling after
// each round ≤ T.
func (l *loop) rounds() error {
	p := l.in.Plan
	T := len(p.Config.Queries)
	for round := 1; round <= T+1; round++ {
		start := time.Now()
		rd, err := l.train(context.Background(), round)
		if err != nil {
			return err
		}
		if round <= T {
			chosen, planned, err := l.selection(round)
			if err != nil {
				return err
			}
			if err := l.label(chosen); err != nil {
				return err
			}
			g := l.span("query-"+strconv.Itoa(round), chosen, planned)
			rd.Selected = &g
		}
		rd.Seconds = time.Since(start).Seconds()
		l.res.Rounds = append(l.res.Rounds, rd)
	}
	l.res.Steps = p.TotalSteps()
	return nil
}

// train runs the plan's phases of training round i (1…T+1) on the groups
// labelled so far and evaluates the model; ctx stops it between steps.
func (l *loop) train(ctx context.Context, round int) (Round, error) {
	steps := 0
	for e, ph := range l.in.Plan.Phases {
		if ph.Round != round {
			continue
		}
		if err := l.phase(ctx, e, ph); err != nil {
			return Round{}, err
		}
		steps += ph.Steps
	}
	acc, _, _, err := l.evaluate()
	if err != nil {
		return Round{}, err
	}
	return Round{Round: round, Labelled: len(l.rows), Steps: steps, TestAccuracy: acc}, nil
}

// phase charges phase entry e's loss to every record of its sampled groups
// and then runs its DP-SGD steps.
func (l *loop) phase(ctx context.Context, e int, ph Phase) error {
	var groups []dpsgd.Group
	planned := map[string]account.Loss{}
	for g, gr := range ph.Groups {
		loss, ok, err := l.in.Plan.PhaseLoss(e, g)
		if err != nil {
			return fmt.Errorf("pool: %w", err)
		}
		if !ok || ph.Steps == 0 {
			continue
		}
		// An empty group still takes its steps: under Poisson selection a
		// group may be empty, and the phase's noise must not depend on it.
		groups = append(groups, dpsgd.Group{Name: gr.Group, Records: l.where[g], Rate: gr.SampleRate})
		if len(l.groups[g]) > 0 { // dpsgd charges only groups with records
			planned[gr.Group] = loss
		}
		if l.in.Plan.Config.Selection == Poisson {
			continue // charged once for the whole run (chargePoisson)
		}
		loss.Mechanism = "dp-sgd"
		ids := make([]string, len(l.groups[g]))
		for i, j := range l.groups[g] {
			ids[i] = RecordID(j)
		}
		note := fmt.Sprintf("round %d: %d DP-SGD steps, σ %.9g, %s sampled at %.9g", ph.Round, ph.Steps, ph.NoiseMultiplier, gr.Group, gr.SampleRate)
		once := l.in.once(fmt.Sprintf("round-%d/phase-%d/%s", ph.Round, e, gr.Group))
		if _, err := l.led.Record(ledger.Charge{Groups: ids, Loss: loss, Note: note, Once: once}); err != nil {
			return fmt.Errorf("pool: round %d, group %s: %w", ph.Round, gr.Group, err)
		}
	}
	if len(groups) == 0 {
		return nil
	}
	cfg := l.in.Learner.Train
	cfg.NoiseMultiplier = ph.NoiseMultiplier
	cfg.ReplaceOne = l.in.Plan.Config.replaceOne()
	if l.in.Plan.Config.Selection == Poisson {
		cfg.Divisor = ph.ExpectedBatch // the plan's, from expected sizes: the realised sizes are private
	}
	tr, err := dpsgd.New(l.net, cfg)
	if err != nil {
		return fmt.Errorf("pool: %w", err)
	}
	scratch, err := ledger.New(account.Budget{Epsilon: math.MaxFloat64, Delta: l.in.Plan.Config.Delta}, ledger.WithConversion(l.in.Plan.Config.Conversion))
	if err != nil {
		return fmt.Errorf("pool: %w", err)
	}
	after := func(int) error {
		if l.in.Progress != nil {
			l.in.Progress()
		}
		return ctx.Err()
	}
	res, err := tr.Run(scratch, l.r.Split(), dpsgd.Data{X: l.rows, Labels: l.labels}, groups, ph.Steps, after)
	if err != nil {
		return fmt.Errorf("pool: round %d: %w", ph.Round, err)
	}
	return l.checkCharges(res.Charges, planned)
}

// checkCharges compares what dpsgd charged its scratch ledger with what
// the loop charged the records: a mismatch is a bug, reported loudly.
func (l *loop) checkCharges(got []dpsgd.Charge, planned map[string]account.Loss) error {
	cfg := l.in.Plan.Config
	if len(got) != len(planned) {
		return fmt.Errorf("pool: dpsgd charged %d groups, the plan %d", len(got), len(planned))
	}
	for _, c := range got {
		a, err1 := c.Loss.EpsilonAt(cfg.Delta, cfg.Conversion)
		b, err2 := planned[c.Group].EpsilonAt(cfg.Delta, cfg.Conversion)
		if err := errors.Join(err1, err2); err != nil {
			return fmt.Errorf("pool: %w", err)
		}
		if math.Abs(a-b) > 1e-9*max(1, b) {
			return fmt.Errorf("pool: group %s: dpsgd charged ε %v, the plan %v", c.Group, a, b)
		}
	}
	return nil
}

// selection runs selection j on the unlabelled pool and returns the
// chosen records (not yet labelled) and the ε the plan gives each of them
// once selected.
func (l *loop) selection(j int) ([]int, float64, error) {
	cfg := l.in.Plan.Config
	if cfg.Selection == Poisson {
		return l.poissonSelection(j)
	}
	lr := l.in.Learner
	k := cfg.Queries[j-1]
	free := l.unlabelled()
	clip := lr.ScoreClip
	if clip == 0 {
		clip = map[Acquisition]float64{Entropy: EntropyClip, BALD: BALDClip}[lr.Acquisition]
	}
	a, err := NewAcquire(lr.Acquisition, cfg.EpsilonSelect/float64(len(cfg.Queries)), k, lr.Spec.Classes, clip)
	if lr.NotDP && err != nil { // ε = 0 is refused, and not used: build the scorer at any ε
		a, err = NewAcquire(lr.Acquisition, 1, k, lr.Spec.Classes, clip)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("pool: selection %d: %w", j, err)
	}
	var passes [][][]float64
	if lr.Acquisition != Random {
		if passes, err = l.score(free); err != nil {
			return nil, 0, fmt.Errorf("pool: selection %d: %w", j, err)
		}
	}
	chosen, err := l.choose(a, j, k, free, passes)
	if err != nil {
		return nil, 0, err
	}
	planned, err := l.in.Plan.SelectedEpsilon(j)
	if err != nil {
		return nil, 0, err
	}
	return chosen, planned, nil
}

// unlabelled returns the pool indices not yet labelled, in order.
func (l *loop) unlabelled() []int {
	var free []int
	for i, f := range l.free {
		if f {
			free = append(free, i)
		}
	}
	return free
}

// poissonSelection is selection j under Poisson selection: every
// unlabelled record is scored by the last released model and chosen by
// its own coin with probability p_j(x) = p_max if its score reaches the
// threshold, else p_min (random acquisition: Config.randomRate for every
// record, capped at p_max). The
// coins are exact (mech.BernoulliFloat). Nothing is charged: the run's
// loss was committed by chargePoisson, and the choice is shown only to
// the trusted labeler.
func (l *loop) poissonSelection(j int) ([]int, float64, error) {
	lr, pmax := l.in.Learner, l.in.Plan.Config.PMax
	if lr.Acquisition == Random {
		pmax = min(pmax, l.in.Plan.Config.randomRate(j))
	}
	free := l.unlabelled()
	var passes [][][]float64
	if lr.Acquisition != Random {
		var err error
		if passes, err = l.score(free); err != nil {
			return nil, 0, fmt.Errorf("pool: selection %d: %w", j, err)
		}
	}
	var chosen []int
	for i, x := range free {
		p := pmax
		if passes != nil {
			s, err := lr.Acquisition.Score(passes[i])
			if err != nil {
				return nil, 0, fmt.Errorf("pool: selection %d, record %d: %w", j, x, err)
			}
			if s < lr.Threshold {
				p = lr.PMin
			}
		}
		if mech.BernoulliFloat(l.r, p) {
			chosen = append(chosen, x)
		}
	}
	return chosen, l.in.Plan.Poisson.Epsilon, nil
}

// choose draws the k records of selection j: privately through Select
// (charged first), or by the exact top-k for NotDP.
func (l *loop) choose(a *Acquire, j, k int, free []int, passes [][][]float64) ([]int, error) {
	if l.in.Learner.NotDP {
		scores, err := a.Scores(passes)
		if err != nil {
			return nil, fmt.Errorf("pool: selection %d: %w", j, err)
		}
		top, err := TopKNotDP(scores, k)
		if err != nil {
			return nil, fmt.Errorf("pool: selection %d: %w", j, err)
		}
		out := make([]int, len(top))
		for i, t := range top {
			out[i] = free[t]
		}
		return out, nil
	}
	ids := make([]string, len(free))
	index := make(map[string]int, len(free))
	for i, f := range free {
		ids[i] = RecordID(f)
		index[ids[i]] = f
	}
	sel, err := selectOnce(l.led, l.r, a, l.in.Plan.Config.Accounting, ids, passes,
		ledger.Charge{Note: fmt.Sprintf("selection %d of %d", j, len(l.in.Plan.Config.Queries)), Once: l.in.once(fmt.Sprintf("selection-%d", j))})
	if err != nil {
		return nil, fmt.Errorf("pool: selection %d: %w", j, err)
	}
	out := make([]int, len(sel))
	for i, id := range sel {
		out[i] = index[id]
	}
	return out, nil
}

// score returns the class probabilities of the pool records idx, one
// vector per pass: one plain pass, or Learner.Passes MC-dropout passes for
// BALD. Post-processing of the released model.
func (l *loop) score(idx []int) ([][][]float64, error) {
	rows := make([][]float64, len(idx))
	for i, j := range idx {
		rows[i] = l.in.Pool[j]
	}
	passes := 1
	if l.in.Learner.Acquisition == BALD {
		passes = l.in.Learner.Passes
		if passes == 0 {
			passes = 10
		}
	}
	out := make([][][]float64, len(idx))
	for i := range out {
		out[i] = make([][]float64, 0, passes)
	}
	dropR := l.r.Split()
	for range passes {
		var probs [][]float64
		var err error
		if passes == 1 {
			probs, err = l.net.Predict(rows)
		} else {
			probs, err = l.net.PredictDropout(rows, 1, dropR) // one MC-dropout sample
		}
		if err != nil {
			return nil, err
		}
		for i, p := range probs {
			out[i] = append(out[i], p)
		}
	}
	return out, nil
}

// span reads the ledger ε of the records idx.
func (l *loop) span(name string, idx []int, planned float64) GroupPrivacy {
	return spanOf(l.led, name, idx, planned)
}

// spanOf reads the ledger ε of the pool records idx from led.
func spanOf(led *ledger.Ledger, name string, idx []int, planned float64) GroupPrivacy {
	g := GroupPrivacy{Group: name, Records: len(idx), Planned: planned, Ledger: Span{Min: math.Inf(1), Max: math.Inf(-1)}}
	for _, j := range idx {
		eps, _ := led.Spent(RecordID(j))
		g.Ledger.Min, g.Ledger.Max = min(g.Ledger.Min, eps), max(g.Ledger.Max, eps)
	}
	if len(idx) == 0 {
		g.Ledger = Span{}
	}
	return g
}

// evaluate returns the accuracy, per-class recall and balanced accuracy on
// the public test set (NaN and nil without one).
func (l *loop) evaluate() (acc float64, recall []float64, balanced float64, err error) {
	t := l.in.Test
	if t == nil || t.Len() == 0 {
		return math.NaN(), nil, math.NaN(), nil
	}
	pred, err := l.net.Classify(t.X)
	if err != nil {
		return 0, nil, 0, fmt.Errorf("pool: test set: %w", err)
	}
	acc, recall, balanced = Scores(pred, t.Class, l.in.Learner.Spec.Classes)
	return acc, recall, balanced, nil
}

// Scores returns the accuracy of pred against labels, each class's recall
// (0 for a class absent from labels) and the balanced accuracy (mean
// recall over the classes present).
func Scores(pred, labels []int, classes int) (acc float64, recall []float64, balanced float64) {
	hit, seen := make([]float64, classes), make([]float64, classes)
	right := 0.0
	for i, c := range labels {
		seen[c]++
		if pred[i] == c {
			hit[c]++
			right++
		}
	}
	recall = make([]float64, classes)
	present := 0.0
	for c := range recall {
		if seen[c] > 0 {
			recall[c] = hit[c] / seen[c]
			balanced += recall[c]
			present++
		}
	}
	return right / max(1, float64(len(labels))), recall, balanced / max(1, present)
}

// finish fills the final accuracy and the privacy report from the ledger.
func (l *loop) finish() error {
	var err error
	if l.res.TestAccuracy, l.res.TestRecall, l.res.BalancedAccuracy, err = l.evaluate(); err != nil {
		return err
	}
	l.res.Privacy, err = PrivacyOf(l.led, l.in.Plan, l.groups, len(l.in.Pool), l.in.Learner.NotDP)
	return err
}

// PrivacyOf is the per-record report of a run on a pool of n records
// whose labelled groups (initial, query-1, …) hold the pool indices
// groups, read from led beside what plan p promised them; notDP marks a
// run whose selections were the exact top-k.
func PrivacyOf(led *ledger.Ledger, p *Plan, groups [][]int, n int, notDP bool) (Privacy, error) {
	pr := Privacy{Epsilon: p.Config.Epsilon, Delta: p.Config.Delta,
		Guarantee: fmt.Sprintf("(ε = %v, δ = %v)-DP for every record of the pool (add/remove one record; "+
			"training charged under replace-one, since fixed-size selection substitutes records), ledger per record", p.Config.Epsilon, p.Config.Delta)}
	if notDP {
		pr.Guarantee = "none: the selections released exact top-k rankings (not DP); only the DP-SGD training is accounted"
	}
	unselected, err := p.UnselectedEpsilon()
	if err != nil {
		return pr, err
	}
	planned := func(g int) float64 { return p.Groups[g].EpsilonTotal }
	if p.Poisson != nil {
		pr.Epsilon = p.Poisson.Epsilon
		pr.Guarantee = fmt.Sprintf("(ε = %.6g, δ = %v)-DP for every record of the pool (add/remove one record; "+
			"released: the models; the selections are seen only by the trusted labeler), ledger per record", p.Poisson.Epsilon, p.Config.Delta)
		unselected = p.Poisson.Epsilon
		planned = func(int) float64 { return p.Poisson.Epsilon }
	}
	labelled := make([]bool, n)
	for g, members := range groups {
		gp := spanOf(led, p.Groups[g].Group, members, planned(g))
		pr.Trained = append(pr.Trained, gp)
		pr.MaxDeviation = max(pr.MaxDeviation, deviation(gp))
		for _, i := range members {
			labelled[i] = true
		}
	}
	var rest, all []int
	for i := range n {
		all = append(all, i)
		if !labelled[i] {
			rest = append(rest, i)
		}
	}
	pr.NotSelected = spanOf(led, "not-selected", rest, unselected)
	pr.All = spanOf(led, "all", all, 0).Ledger
	pr.MaxDeviation = max(pr.MaxDeviation, deviation(pr.NotSelected))
	return pr, nil
}

// deviation is the largest |ledger − plan| of a set of records.
func deviation(g GroupPrivacy) float64 {
	if g.Records == 0 {
		return 0
	}
	return max(math.Abs(g.Ledger.Min-g.Planned), math.Abs(g.Ledger.Max-g.Planned))
}
