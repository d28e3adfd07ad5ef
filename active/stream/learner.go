package stream

import (
	cryptorand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/floats"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/mech"
	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/model"
	"github.com/dpal-dev/dpal/vec"
)

// Ledger groups the learner charges. Records are observed once, so a
// group's ε is each of its records' ε (Theorems 1–3): every observed record
// pays ε_s for its selection decision, and a record whose label entered a
// released update pays ε_g on top.
const (
	// GroupObserved holds records that went through the selector only.
	GroupObserved = "stream/observed"
	// GroupBatched holds records that also entered a mini-batch update.
	GroupBatched = "stream/batched"
)

// ErrUnknownRequest is returned (wrapped) by Label for an id that is not a
// pending label request.
var ErrUnknownRequest = errors.New("no pending label request with this id")

// ErrInvalidEvent is wrapped by the errors of Observe and
// SelectionProbability for an event that breaks the declared bounds (wrong
// dimension, NaN or Inf, ‖x‖ > M in Reject mode): the input's fault, as
// opposed to a budget or state error, which stops the stream.
var ErrInvalidEvent = errors.New("invalid event")

// ErrSeedMismatch is wrapped by Restore's error when a seeded state is
// restored with a random source seeded differently: the saved stream would
// continue under a seed that no output records.
var ErrSeedMismatch = errors.New("seed differs from the saved state's")

// Decision is the selector's answer for one observed event.
type Decision struct {
	// ID names the event: its 1-based position in the stream. Label takes it.
	ID uint64 `json:"id"`
	// Request says whether the learner asks the oracle for the event's label.
	Request bool `json:"request"`
}

// Release is one published model: the pair (T_i, w_{T_i}) of §2, the only
// public output besides the label requests.
type Release struct {
	// Observation is T_i, the number of events observed when w was published.
	Observation int `json:"observation"`
	// Update is i, the 1-based count of updates so far.
	Update int `json:"update"`
	// W is the published model. It is shared with the learner: read only.
	W []float64 `json:"w"`
}

// Stats summarises a learner's progress and privacy spend.
type Stats struct {
	Observed  int `json:"observed"`  // events accepted by Observe
	Requested int `json:"requested"` // label requests made
	Labelled  int `json:"labelled"`  // labels received
	Pending   int `json:"pending"`   // requests still waiting for a label
	Buffered  int `json:"buffered"`  // labelled points waiting for the next update
	Updates   int `json:"updates"`   // model updates released
	// EpsSelect is the true ε_s of one selection decision (for the
	// exponential selector it can exceed Config.EpsSelect: see Calibration).
	EpsSelect float64 `json:"eps_select"`
	// EpsGrad is ε_g of one update.
	EpsGrad float64 `json:"eps_grad"`
	// MaxEpsilonPerRecord is the largest ε any record has spent so far:
	// ε_s once a record was screened, ε_s + ε_g once one entered an update.
	// +Inf for the non-private baseline (as are EpsSelect and EpsGrad
	// there; encoding/json cannot encode them, so check NonPrivate first).
	MaxEpsilonPerRecord float64 `json:"max_epsilon_per_record"`
	// BudgetReached says the label budget is used up: no more selections.
	BudgetReached bool `json:"budget_reached"`
}

// point is one buffered event: a request awaiting its label or a labelled
// member of the next batch. x is the learner's own (clipped) copy.
type point struct {
	id uint64
	x  []float64
	y  float64
}

// updateNoise is the noise of a mini-batch update: mech.GammaVector (eq. 8)
// or mech.GaussianVector; its Loss is the per-record charge.
type updateNoise interface {
	account.Mechanism
	AddTo(r *rng.Rand, v []float64) error
}

// Learner is the private stream-based active learner: a pure state
// machine with no I/O. Observe screens one event, Label supplies a
// requested label (at any later time), and updates happen on the policy's
// schedule. A Learner is not safe for concurrent use.
type Learner struct {
	cfg   Config
	loss  model.Loss
	sel   selector
	noise updateNoise // nil for the non-private baseline
	sigma float64     // the Gaussian update's per-coordinate σ (0 otherwise)
	// The tree update (DP-FTRL): tree is nil for the non-private baseline,
	// prefix the last (noisy) prefix sum of clipped gradients, treeN the
	// number of records in it.
	tree   *mech.Tree
	prefix []float64
	treeN  int

	r      *rng.Rand
	src    *rand.ChaCha8 // the learner's own stream when seeded, for SaveState
	seed   uint64        // the seed src was keyed from, when seeded
	ledger *ledger.Ledger
	owned  bool   // ledger created by New; saved with the state
	run    string // names this learner's charges in the ledger (see runKey)

	w         []float64
	wNorm     float64
	grad      []float64
	fixedSlab float64 // ln(1/τ) of the fixed slab, computed once
	insideSq  float64 // ‖x‖² below this is inside the ball by any rounding

	observed, requested, labelled, updates int
	nextClose                              int // FLSW: observation count that ends the window
	// selPaid and updPaid cache "the ledger holds this learner's selection
	// (update) charge" so the per-event path need not ask it; they are
	// never saved, and Restore reads them back from the ledger.
	selPaid, updPaid bool
	updCharge        ledger.Charge // built by updateCharge

	pending []point // requested, sorted by id
	batch   []point // labelled, waiting for the update
	free    [][]float64
	// kept holds every labelled point for the final model (FinalShare >
	// 0 only); finalDone says it was released, which happens once.
	kept      []point
	finalDone bool
	rhoFinal  float64              // the final model's ρ (gaussianRhos)
	finalG    *mech.GaussianVector // finalNoise's last noise, for finalN records
	finalN    int

	releases []Release
	relStore []float64 // backing store of recent releases' W

	streamInfo json.RawMessage // caller's description of the stream, saved with the state
}

// New returns a learner starting from w = 0. r supplies all randomness:
// use rng.Secure() in production; a seeded r makes the run reproducible
// (and SaveState records its position). ledger receives the spends; nil
// makes a private ledger whose per-record budget is exactly ε_s + ε_g,
// returned by Ledger. The non-private baseline needs a nil ledger.
func New(cfg Config, r *rng.Rand, led *ledger.Ledger) (*Learner, error) {
	l, err := build(cfg, r, led)
	if err != nil {
		return nil, err
	}
	if l.run, err = newRunID(); err != nil {
		return nil, err
	}
	l.setRand(r)
	return l, nil
}

// newRunID returns a fresh random name for a learner's charges. It comes
// from crypto/rand, not from the learner's stream, so seeded runs draw the
// same noise with or without it.
func newRunID() (string, error) {
	var b [8]byte
	if _, err := cryptorand.Read(b[:]); err != nil {
		return "", fmt.Errorf("stream: run id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// runKey is the ledger's Once key of one of this learner's charges. The
// selection rule screens each record once, and each record enters at most
// one update, so each is paid once per learner (parallel composition over
// the records); a resumed learner keeps its run id and does not pay again,
// while another learner on the same ledger does.
func (l *Learner) runKey(what string) string { return "stream/" + l.run + "/" + what }

// build validates cfg and allocates a learner at w = 0, without touching r.
func build(cfg Config, r *rng.Rand, led *ledger.Ledger) (*Learner, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if r == nil {
		return nil, errors.New("stream: nil random source (use rng.Secure())")
	}
	sel, err := newSelector(cfg)
	if err != nil {
		return nil, err
	}
	loss, _ := model.LossByName(cfg.Loss)
	l := &Learner{
		cfg: cfg, loss: loss, sel: sel, ledger: led,
		w: make([]float64, cfg.Dim), grad: make([]float64, cfg.Dim),
		nextClose: cfg.Window, fixedSlab: -math.Log(cfg.Tau),
		insideSq: math.Min(cfg.M*cfg.M*(1-insideMargin), math.MaxFloat64),
	}
	if cfg.NonPrivate {
		if led != nil {
			return nil, errors.New("stream: the non-private baseline spends no budget; pass a nil ledger")
		}
		return l, nil
	}
	if err := l.buildNoise(led); err != nil {
		return nil, err
	}
	if led == nil {
		l.ledger, err = ledger.New(account.Budget{Epsilon: sel.eps + cfg.EpsGrad, Delta: cfg.LedgerDelta()})
		if err != nil {
			return nil, fmt.Errorf("stream: ledger: %w", err)
		}
		l.owned = true
	}
	return l, nil
}

// buildNoise makes the update noise. Gamma (Lemma 3): replacing one (x, y)
// moves Σ ℓ'·y·x by at most 2M, hence the density ∝ exp(−(ε_g/2M)‖z‖) of
// eq. 8. Gaussian: the clipped sum moves by at most 2C, and ρ is
// calibrated at the ledger's δ and conversion, so the ledger reports
// exactly ε_g for it.
func (l *Learner) buildNoise(led *ledger.Ledger) error {
	cfg := l.cfg
	var err error
	conv := account.Balle2020
	if cfg.GaussianNoise() && led != nil {
		conv = led.Meta().Conversion
		if d := led.Budget().Delta; d != cfg.Delta {
			return fmt.Errorf("stream: the ledger's delta %v differs from the %v update's %v", d, cfg.Update, cfg.Delta)
		}
	}
	switch cfg.Update {
	case Tree:
		return l.buildTree(conv)
	case Gaussian:
		var z float64
		if z, err = gaussianZ(cfg, conv); err != nil {
			return err
		}
		if _, l.rhoFinal, err = gaussianRhos(cfg, conv); err != nil {
			return err
		}
		var gv *mech.GaussianVector
		if gv, err = mech.NewGaussianVector(z, 2*cfg.Clip, cfg.Dim); err == nil {
			l.noise, l.sigma = gv, gv.Sigma()
		}
	default:
		l.noise, err = mech.NewGammaVector(cfg.EpsGrad, 2*cfg.M, cfg.Dim)
	}
	if err != nil {
		return fmt.Errorf("stream: update noise: %w", err)
	}
	return nil
}

// buildTree makes the tree update's mech.Tree over TreeSteps leaves with
// atom bound Clip: ρ is calibrated at the ledger's δ and conversion
// (account.CalibrateZCDP), and the noise multiplier is the tree's for
// that ρ (mech.TreeNoiseMultiplier), so the tree's Loss, charged once for
// the whole run, is ε_g at δ for each record.
func (l *Learner) buildTree(conv account.Conversion) error {
	cfg := l.cfg
	rho, err := account.CalibrateZCDP(account.Budget{Epsilon: cfg.EpsGrad, Delta: cfg.Delta}, conv)
	if err != nil {
		return fmt.Errorf("stream: tree update: %w", err)
	}
	z, err := mech.TreeNoiseMultiplier(cfg.TreeSteps(), rho)
	if err == nil {
		l.tree, err = mech.NewTree(cfg.TreeSteps(), cfg.Dim, cfg.Clip, z)
	}
	if err != nil {
		return fmt.Errorf("stream: tree update: %w", err)
	}
	return nil
}

// setRand takes r, or for a seeded r a ChaCha8 stream keyed from it that
// SaveState can record, so that a resumed run continues exactly.
func (l *Learner) setRand(r *rng.Rand) {
	seed, seeded := r.Seed()
	if !seeded {
		l.r = r
		return
	}
	l.seed = seed
	var key [32]byte
	for i := 0; i < len(key); i += 8 {
		v := r.Uint64()
		for j := range 8 {
			key[i+j] = byte(v >> (8 * j))
		}
	}
	l.src = rand.NewChaCha8(key)
	l.r = rng.FromSource(l.src)
}

// Config returns the learner's configuration.
func (l *Learner) Config() Config { return l.cfg }

// Seed reports the seed of the learner's random stream and true when it is
// seeded: the seed of the r given to New, kept by SaveState and Restore, so
// that a resumed run reports the seed that actually drives it. It returns
// false for secure randomness.
func (l *Learner) Seed() (uint64, bool) { return l.seed, l.src != nil }

// SetStreamInfo attaches the caller's description of the stream the learner
// consumes (for example a dataset and the seed of its permutation), as one
// JSON value. SaveState keeps it and Restore returns it through StreamInfo,
// so a resume can check that it continues the same stream: the ledger
// charges each record once, so replaying records would under-report ε.
func (l *Learner) SetStreamInfo(info json.RawMessage) error {
	if !json.Valid(info) {
		return errors.New("stream: stream info is not valid JSON")
	}
	l.streamInfo = slices.Clone(info)
	return nil
}

// StreamInfo returns the value set by SetStreamInfo (nil if none).
func (l *Learner) StreamInfo() json.RawMessage { return slices.Clone(l.streamInfo) }

// Ledger returns the ledger the learner charges (nil for the baseline).
func (l *Learner) Ledger() *ledger.Ledger { return l.ledger }

// RunID names the learner's charges in its ledger (kept across a resume).
func (l *Learner) RunID() string { return l.run }

// Observe screens one event x: it decides, privately, whether to request
// x's label (§3.1) and first performs an FLSW update that is due. x is
// copied if kept. A bad x (wrong dimension, NaN or Inf, ‖x‖ > M in Reject
// mode) returns an error wrapping ErrInvalidEvent that names the event and
// leaves the learner unchanged; any other error (the budget, the update
// noise) also leaves it unchanged, but the stream cannot go on.
//
// A rejected event takes no id and is not counted, so it shifts the T_i of
// later releases: the analysis assumes eq. 1 holds for every event, so
// treat rejections as public, or use Clip, which never rejects on norm.
func (l *Learner) Observe(x []float64) (Decision, error) {
	id := l.observed + 1
	scale, err := l.check(x)
	if err != nil {
		return Decision{}, fmt.Errorf("stream: event %d: %w", id, err)
	}
	if err := l.closeDueWindow(); err != nil {
		return Decision{}, fmt.Errorf("stream: event %d: %w", id, err)
	}
	dec := Decision{ID: uint64(id)}
	if l.budgetReached() {
		l.observed++
		return dec, nil
	}
	if err := l.chargeSelection(); err != nil {
		return Decision{}, fmt.Errorf("stream: event %d: %w", id, err)
	}
	l.observed++
	d := Distance(floats.Dot(l.w, x)*scale, l.wNorm)
	dec.Request = l.draw(d)
	if dec.Request {
		l.requested++
		l.pending = append(l.pending, point{id: dec.ID, x: l.keep(x, scale)})
	}
	return dec, nil
}

// Oracle answers a label request for event id (features x) synchronously.
// ok = false means no answer yet: the request stays pending, and its label
// may come later through Label.
type Oracle func(id uint64, x []float64) (y float64, ok bool)

// Step observes x and, if its label is requested, asks oracle at once: the
// synchronous oracle of Algorithms 3–4. It is Observe followed by Label.
func (l *Learner) Step(x []float64, oracle Oracle) (Decision, error) {
	dec, err := l.Observe(x)
	if err != nil || !dec.Request {
		return dec, err
	}
	if y, ok := oracle(dec.ID, x); ok {
		return dec, l.Label(dec.ID, y)
	}
	return dec, nil
}

// Check reports whether Observe would accept x's shape and values
// (dimension, finite features, and ‖x‖ ≤ M in Reject mode); its error
// wraps ErrInvalidEvent. It reads nothing private and spends nothing.
func (l *Learner) Check(x []float64) error {
	_, err := l.check(x)
	return err
}

// check validates x and returns the factor that clips it onto the ball of
// radius M (1 when it is inside). The norm is vec.Norm, the one norm the
// data loaders' projection uses too, so that a projected event passes
// Reject mode. Errors wrap ErrInvalidEvent.
func (l *Learner) check(x []float64) (float64, error) {
	if len(x) != l.cfg.Dim {
		return 0, fmt.Errorf("%w: dimension %d, want %d", ErrInvalidEvent, len(x), l.cfg.Dim)
	}
	// Fast path: gonum's vectorised dot product rounds differently from
	// vec.Norm, but far less than insideMargin, so an event this far
	// inside the ball is inside by vec.Norm too (NaN and Inf fall through).
	if floats.Dot(x, x) <= l.insideSq {
		return 1, nil
	}
	n := vec.Norm(x)
	if math.IsNaN(n) || math.IsInf(n, 0) {
		// Slow path: name the bad feature, or recompute an overflowing norm.
		if i := firstNonFinite(x); i >= 0 {
			return 0, fmt.Errorf("%w: feature %d is not finite: %v", ErrInvalidEvent, i, x[i])
		}
		n = floats.Norm(x, 2)
	}
	if n <= l.cfg.M {
		return 1, nil
	}
	if l.cfg.NormMode == Reject {
		return 0, fmt.Errorf("%w: norm %v exceeds the bound M = %v (eq. 1; norm mode reject)", ErrInvalidEvent, n, l.cfg.M)
	}
	return l.cfg.M / n, nil
}

// insideMargin is the relative margin of check's fast path: summation
// order changes ‖x‖² by at most about d·2^−53 relatively, below 1e−6 for
// any d < 10^9.
const insideMargin = 1e-6

// firstNonFinite returns the index of x's first NaN or ±Inf, or −1.
func firstNonFinite(x []float64) int {
	for i, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return i
		}
	}
	return -1
}

// slab returns the Bernoulli slab's half-width in d: ln(1/τ) with τ fixed,
// or 1/t with τ = e^(−1/t), t the update counter starting at 1 (§5).
func (l *Learner) slab() float64 {
	if l.cfg.ShrinkingSlab {
		return 1 / float64(l.updates+1)
	}
	return l.fixedSlab
}

// draw makes the selection decision for a point at distance d.
func (l *Learner) draw(d float64) bool {
	switch {
	case l.cfg.NonPrivate:
		return d <= l.slab() // Tong–Koller: c(t) ≥ τ, deterministic
	default:
		return l.sel.draw(l.r, d, l.slab())
	}
}

// SelectionProbability returns the probability that Observe would request
// x's label under the current model (1 or 0 for the baseline), ignoring
// the label budget. It reads no randomness and changes nothing.
func (l *Learner) SelectionProbability(x []float64) (float64, error) {
	scale, err := l.check(x)
	if err != nil {
		return 0, err
	}
	d := Distance(floats.Dot(l.w, x)*scale, l.wNorm)
	if l.cfg.NonPrivate {
		if d <= l.slab() {
			return 1, nil
		}
		return 0, nil
	}
	return l.sel.prob(d, l.slab()), nil
}

// keep stores a clipped copy of x in a recycled buffer.
func (l *Learner) keep(x []float64, scale float64) []float64 {
	var v []float64
	if n := len(l.free); n > 0 {
		v, l.free = l.free[n-1], l.free[:n-1]
	} else {
		v = make([]float64, l.cfg.Dim)
	}
	if scale == 1 {
		copy(v, x)
	} else {
		floats.ScaleTo(v, scale, x)
	}
	return v
}

func (l *Learner) budgetReached() bool {
	return l.cfg.LabelBudget > 0 && l.requested >= l.cfg.LabelBudget
}

// Label supplies the oracle's label y ∈ {−1, +1} for the request id. It
// may come any time after the request; the point joins the batch being
// collected. Under FLMB the L-th label triggers the update. A bad label or
// unknown id is an error that changes nothing.
func (l *Learner) Label(id uint64, y float64) error {
	if y != 1 && y != -1 {
		return fmt.Errorf("stream: label for event %d: %v is not -1 or +1", id, y)
	}
	i, ok := l.findPending(id)
	if !ok {
		return fmt.Errorf("stream: label for event %d: %w", id, ErrUnknownRequest)
	}
	p := l.pending[i]
	p.y = y
	l.pending = slices.Delete(l.pending, i, i+1)
	l.batch = append(l.batch, p)
	if l.cfg.FinalShare > 0 {
		l.kept = append(l.kept, point{id: p.id, x: slices.Clone(p.x), y: y})
	}
	l.labelled++
	if l.cfg.Policy == FLMB && len(l.batch) >= l.cfg.Window {
		if err := l.update(); err != nil {
			return fmt.Errorf("stream: label for event %d accepted, but the update failed: %w", id, err)
		}
	}
	return nil
}

// Decline drops the pending request id without a label (the oracle
// declined). The record keeps its ε_s spend and never enters a batch.
func (l *Learner) Decline(id uint64) error {
	i, ok := l.findPending(id)
	if !ok {
		return fmt.Errorf("stream: decline event %d: %w", id, ErrUnknownRequest)
	}
	l.free = append(l.free, l.pending[i].x)
	l.pending = slices.Delete(l.pending, i, i+1)
	return nil
}

// findPending locates the pending request id (pending is sorted by id).
func (l *Learner) findPending(id uint64) (int, bool) {
	return slices.BinarySearchFunc(l.pending, id, func(p point, id uint64) int {
		switch {
		case p.id < id:
			return -1
		case p.id > id:
			return 1
		}
		return 0
	})
}

// Flush performs an FLSW update whose window ended with the last
// observation (Algorithm 3 updates at t ≡ 0 mod N, after that event's
// label). Call it at the end of a stream, after the last labels. A partial
// window or an FLMB batch short of L is left alone.
func (l *Learner) Flush() error {
	if err := l.closeDueWindow(); err != nil {
		return fmt.Errorf("stream: flush: %w", err)
	}
	return nil
}

// closeDueWindow ends the FLSW window when N observations have passed.
func (l *Learner) closeDueWindow() error {
	if l.cfg.Policy != FLSW || l.observed < l.nextClose {
		return nil
	}
	if err := l.update(); err != nil {
		return err
	}
	l.nextClose += l.cfg.Window
	return nil
}

// chargeSelection pays ε_s for every record the selector screens, once
// per learner (runKey): records are disjoint, so one charge per group
// covers all of them.
func (l *Learner) chargeSelection() error {
	if l.cfg.NonPrivate || l.selPaid {
		return nil
	}
	c := ledger.Charge{
		Groups: []string{GroupObserved, GroupBatched},
		Loss:   l.sel.mechanism().Loss(),
		Once:   l.runKey("selection"),
		Note:   "each record is screened once: parallel composition over the stream",
	}
	if _, err := l.ledger.Record(c); err != nil {
		return fmt.Errorf("selection: %w", err)
	}
	l.selPaid = true
	return nil
}

// updateCharge is what an update pays: ε_g for the records that enter it
// (Lemma 3), once per learner, since each record enters at most one batch.
// It is built once: after the first update the ledger only looks up its
// Once key, so an update allocates nothing for its accounting.
func (l *Learner) updateCharge() ledger.Charge {
	if l.updCharge.Once == "" {
		l.updCharge = ledger.Charge{
			Groups: []string{GroupBatched},
			Loss:   l.updateLoss(),
			Once:   l.runKey("update"),
			Note:   "each labelled record enters one mini-batch update: parallel composition over the batches",
		}
	}
	return l.updCharge
}

// updateLoss is a record's loss from the updates: one batch's noise, or
// the tree's whole run.
func (l *Learner) updateLoss() account.Loss {
	if l.tree != nil {
		return l.tree.Loss()
	}
	return l.noise.Loss()
}

// chargeUpdate makes the update charge (Restore uses it to re-make a
// charge the saved counters imply).
func (l *Learner) chargeUpdate() error {
	if l.cfg.NonPrivate || l.updPaid {
		return nil
	}
	if _, err := l.ledger.Record(l.updateCharge()); err != nil {
		return fmt.Errorf("update: %w", err)
	}
	l.updPaid = true
	return nil
}

// addNoise adds eq. 8's noise to the batch gradient g through
// ledger.ReleaseCharge: the update is paid for before the noise is drawn.
func (l *Learner) addNoise(g []float64) error {
	_, err := ledger.ReleaseCharge(l.ledger, l.updateCharge(), func() (struct{}, error) {
		return struct{}{}, l.noise.AddTo(l.r, g)
	})
	if err != nil {
		return fmt.Errorf("update: %w", err)
	}
	l.updPaid = true
	return nil
}

// update applies eq. 10 to the batch and publishes the result:
//
//	w′ = Π(w − η_t(λw + (1/B)(Σ g_i + z))),
//
// with g_i = ℓ′(y⟨w, x⟩)·y·x (for the hinge loss −u·y·x, u of eq. 9). The
// Gamma update (eq. 8–10) uses g_i as is, z of density ∝ exp(−(ε_g/2M)‖z‖)
// and η_t = η/t. The Gaussian update clips each g_i to norm C, draws z from
// the discrete Gaussian of σ = z·2C, and steps η_t = η·R/(G√t) with
// G² = (C + λR)² + dσ²/B², a bound on E‖the noisy gradient‖² (Zinkevich
// 2003: step D/(G√t) for projected online gradient descent). An empty
// batch changes nothing and spends nothing: the same w stays published
// (eq. 14–15).
func (l *Learner) update() error {
	b := len(l.batch)
	if b == 0 {
		return nil
	}
	if l.cfg.Update == Tree {
		return l.updateTree()
	}
	g := l.grad
	clear(g)
	for _, p := range l.batch {
		if c := l.loss.Deriv(p.y*floats.Dot(l.w, p.x)) * p.y; c != 0 {
			floats.AddScaled(g, c*l.clipScale(c, p.x), p.x)
		}
	}
	if l.noise != nil {
		if err := l.addNoise(g); err != nil {
			return err
		}
	}
	eta := l.step(b)
	invB := 1 / float64(b)
	for i, wi := range l.w {
		l.w[i] = wi - eta*(l.cfg.Lambda*wi+g[i]*invB)
	}
	vec.ProjectBall(l.w, l.cfg.Radius)
	l.finishUpdate()
	return nil
}

// finishUpdate publishes the new model and recycles the batch.
func (l *Learner) finishUpdate() {
	l.wNorm = vec.Norm(l.w)
	l.updates++
	for _, p := range l.batch {
		l.free = append(l.free, p.x)
	}
	l.batch = l.batch[:0]
	l.publish()
}

// treeShrink keeps a clipped atom strictly inside the tree's bound despite
// the rounding of the clipping product.
const treeShrink = 1 - 1e-12

// updateTree is the DP-FTRL update (Kairouz et al. 2021, Algorithm 1):
// each record's gradient g_i = ℓ′(y⟨w, x⟩)·y·x at the published w, clipped
// to norm C, is one atom of the batch's leaf of the tree, which releases
// the noisy prefix sum Ŝ_t over the first t batches (n_t records). The
// model is the FTRL iterate on the linearised losses plus the exact
// regulariser,
//
//	w_t = argmin_{‖w‖ ≤ R} ⟨Ŝ_t, w⟩ + ((λ·n_t + 1/η)/2)‖w‖² = Π_R(−Ŝ_t / (λ·n_t + 1/η)),
//
// Algorithm 1's argmin with the regulariser (1/(2η))‖w‖² and the
// λ-strongly convex term of each record's loss (eq. 2); the constrained
// minimiser of an isotropic quadratic is the projection of the free one.
//
// Neighbouring relation: streams that differ in one record, replaced
// (§2). Given the public label requests, the batches' sizes n_t are
// public and the record lies in one leaf, so it moves ⌈log₂T⌉+1 released
// nodes by at most 2C each: the whole run is the tree's Loss (ρ-zCDP,
// mech.Tree), charged once before the first release.
func (l *Learner) updateTree() error {
	// Pay first, so that a refused charge leaves the tree untouched.
	if err := l.chargeUpdate(); err != nil {
		return err
	}
	atom := l.grad
	for _, p := range l.batch {
		c := l.loss.Deriv(p.y*floats.Dot(l.w, p.x)) * p.y
		if c == 0 {
			continue
		}
		floats.ScaleTo(atom, c*l.clipScale(c, p.x), p.x)
		if n := vec.Norm(atom); n >= l.cfg.Clip {
			floats.Scale(treeShrink*l.cfg.Clip/n, atom)
		}
		if err := l.addAtom(atom); err != nil {
			return fmt.Errorf("update: %w", err)
		}
	}
	if err := l.flushTree(); err != nil {
		return err
	}
	l.treeN += len(l.batch)
	scale := -1 / (l.cfg.Lambda*float64(l.treeN) + 1/l.cfg.Eta)
	floats.ScaleTo(l.w, scale, l.prefix)
	vec.ProjectBall(l.w, l.cfg.Radius)
	l.finishUpdate()
	return nil
}

// addAtom adds one clipped gradient to the pending leaf (the exact sum for
// the non-private baseline).
func (l *Learner) addAtom(atom []float64) error {
	if l.tree != nil {
		return l.tree.Accumulate(atom)
	}
	if l.prefix == nil {
		l.prefix = make([]float64, l.cfg.Dim)
	}
	floats.Add(l.prefix, atom)
	return nil
}

// flushTree closes the batch's leaf and takes the noisy prefix sum, paying
// the update charge first (ledger.ReleaseCharge).
func (l *Learner) flushTree() error {
	if l.tree == nil {
		if l.prefix == nil {
			l.prefix = make([]float64, l.cfg.Dim)
		}
		return nil
	}
	prefix, err := ledger.ReleaseCharge(l.ledger, l.updateCharge(), func() ([]float64, error) {
		return l.tree.Flush(l.r)
	})
	if err != nil {
		return fmt.Errorf("update: %w", err)
	}
	l.updPaid = true
	l.prefix = prefix
	return nil
}

// clipScale returns the factor that clips the gradient c·x to norm Clip
// (Gaussian update only; 1 when it is inside or for the Gamma update).
func (l *Learner) clipScale(c float64, x []float64) float64 {
	if !l.cfg.GaussianNoise() || l.cfg.Clip >= l.cfg.M {
		return 1 // |c| ≤ 1 and ‖x‖ ≤ M: already inside
	}
	if n := math.Abs(c) * vec.Norm(x); n > l.cfg.Clip {
		return l.cfg.Clip / n
	}
	return 1
}

// step is η_t of the update about to be made, for a batch of b points.
func (l *Learner) step(b int) float64 {
	t := float64(l.updates + 1)
	c := l.cfg
	if c.Update != Gaussian {
		return c.Eta / t
	}
	bound := c.Clip + c.Lambda*c.Radius
	noise := l.sigma / float64(b)
	G := math.Sqrt(bound*bound + float64(c.Dim)*noise*noise)
	return c.Eta * c.Radius / (G * math.Sqrt(t))
}

// finalSlack is the share of the exact minimiser's sensitivity that the
// solver's distance to it may add on each side (model.TrainLinearSVMWithin).
const finalSlack = 0.01

// FinalSensitivity is the ℓ2 sensitivity of Final's model on n labelled
// records: the minimiser w* of (λ/2)‖w‖² + (1/n)Σ hinge(yᵢ⟨w, xᵢ⟩) moves by
// at most 2M/(nλ) when one record is replaced, since each loss is
// M-Lipschitz in w for ‖x‖ ≤ M and the objective is λ-strongly convex
// (Chaudhuri, Monteleoni & Sarwate 2011, Corollary 8; Bousquet & Elisseeff
// 2002); the solver's w is within finalSlack of that of w* on each side.
func (c Config) FinalSensitivity(n int) float64 {
	return (1 + 2*finalSlack) * 2 * c.M / (float64(n) * c.Lambda)
}

// Final releases one final model by output perturbation (Chaudhuri et al.
// 2011, Algorithm 1, with Gaussian noise): the regularised hinge-loss SVM
// w* on every labelled record (λ = Config.Lambda, no bias), fitted to
// within finalSlack of its sensitivity (model.TrainLinearSVMWithin), plus
// exact discrete-Gaussian noise (mech.GaussianVector) of sensitivity
// FinalSensitivity(n), projected onto the ball of radius R
// (post-processing).
//
// Neighbouring relation: streams that differ in one record (§2). Given the
// public label requests, the labelled sets differ in at most that record,
// and n, their size, is public. Guarantee: ρ·FinalShare-zCDP for each
// labelled record, charged to GroupBatched before the noise is drawn;
// with the updates' ρ·(1 − FinalShare) a labelled record pays exactly ε_g
// at δ. Final may be called once (a second release would not be paid);
// it needs Config.FinalShare > 0 and at least one label.
func (l *Learner) Final() ([]float64, error) {
	switch {
	case l.cfg.FinalShare == 0:
		return nil, errors.New("stream: final model: the configuration keeps no budget for it (final share 0)")
	case l.finalDone:
		return nil, errors.New("stream: final model: already released")
	case len(l.kept) == 0:
		return nil, errors.New("stream: final model: no labelled records")
	}
	noise, err := l.finalNoise(len(l.kept))
	if err != nil {
		return nil, err
	}
	X, Y := make([][]float64, len(l.kept)), make([]float64, len(l.kept))
	for i, p := range l.kept {
		X[i], Y[i] = p.x, p.y
	}
	sens := l.cfg.FinalSensitivity(len(X))
	w, err := model.TrainLinearSVMWithin(X, Y, model.SVMOptions{Lambda: l.cfg.Lambda}, finalSlack*sens/(1+2*finalSlack))
	if err != nil {
		return nil, fmt.Errorf("stream: final model: %w", err)
	}
	c := ledger.Charge{
		Groups: []string{GroupBatched}, Loss: noise.Loss(), Once: l.runKey("final"),
		Note: "one final model by output perturbation over every labelled record",
	}
	if _, err := ledger.ReleaseCharge(l.ledger, c, func() (struct{}, error) {
		return struct{}{}, noise.AddTo(l.r, w)
	}); err != nil {
		return nil, fmt.Errorf("stream: final model: %w", err)
	}
	l.finalDone = true
	vec.ProjectBall(w, l.cfg.Radius)
	return w, nil
}

// finalNoise is the final model's noise on n records: noise multiplier
// 1/√(2ρ_final) (gaussianRhos, computed by buildNoise) at sensitivity
// FinalSensitivity(n). The last one is kept for a repeated n.
func (l *Learner) finalNoise(n int) (*mech.GaussianVector, error) {
	if l.finalG != nil && l.finalN == n {
		return l.finalG, nil
	}
	g, err := mech.NewGaussianVector(1/math.Sqrt(2*l.rhoFinal), l.cfg.FinalSensitivity(n), l.cfg.Dim)
	if err != nil {
		return nil, fmt.Errorf("stream: final model: %w", err)
	}
	l.finalG, l.finalN = g, n
	return g, nil
}

// releaseChunk is how many releases share one backing allocation.
const releaseChunk = 64

// MemoryBytes estimates what a learner of configuration c allocates by its
// first update, in d-vectors: the release log's first chunk of
// releaseChunk models, the window's buffered records, the tree update's
// 2 + 2·levels node sums, and the weights, gradient and noise scratch.
// Later updates add a chunk every releaseChunk releases, and requests
// left unanswered a record each: the data decide those, not the flags.
func (c Config) MemoryBytes() float64 {
	vectors := float64(releaseChunk + max(c.Window, 1) + 8)
	if c.Update == Tree {
		vectors += float64(2 + 2*mech.TreeLevels(max(c.TreeSteps(), 1)))
	}
	return 8 * vectors * float64(c.Dim)
}

// publish appends (T_i, w_{T_i}) to the release log.
func (l *Learner) publish() {
	d := l.cfg.Dim
	if cap(l.relStore)-len(l.relStore) < d {
		l.relStore = make([]float64, 0, d*releaseChunk)
	}
	n := len(l.relStore)
	l.relStore = append(l.relStore, l.w...)
	l.releases = append(l.releases, Release{Observation: l.observed, Update: l.updates, W: l.relStore[n : n+d : n+d]})
}

// Weights returns a copy of the currently published model (w = 0 before
// the first update). The copy is the caller's to modify.
func (l *Learner) Weights() []float64 { return slices.Clone(l.w) }

// Score returns ⟨w, x⟩ under the published model; sgn of it is the
// prediction (model.Sign).
func (l *Learner) Score(x []float64) float64 { return vec.Dot(l.w, x) }

// Releases returns the release log (T_i, w_{T_i}) in order. The slice is
// new but each W is shared with the learner and must not be modified.
func (l *Learner) Releases() []Release { return slices.Clone(l.releases) }

// DropReleases forgets the release log (after the caller has written it
// out), bounding memory on long streams. Stats and numbering continue.
func (l *Learner) DropReleases() {
	l.releases = l.releases[:0]
	l.relStore = nil
}

// Pending returns the ids of the label requests still waiting for a label.
func (l *Learner) Pending() []uint64 {
	out := make([]uint64, len(l.pending))
	for i, p := range l.pending {
		out[i] = p.id
	}
	return out
}

// Stats returns counters and the per-record privacy spend.
func (l *Learner) Stats() Stats {
	s := Stats{
		Observed: l.observed, Requested: l.requested, Labelled: l.labelled,
		Pending: len(l.pending), Buffered: len(l.batch), Updates: l.updates,
		EpsSelect: l.sel.eps, BudgetReached: l.budgetReached(),
	}
	if l.noise != nil || l.tree != nil {
		s.EpsGrad = l.cfg.EpsGrad
	}
	if l.cfg.NonPrivate {
		s.EpsGrad = math.Inf(1)
	}
	if l.selPaid || (l.cfg.NonPrivate && l.observed > 0) {
		s.MaxEpsilonPerRecord = s.EpsSelect
	}
	if l.updPaid || (l.cfg.NonPrivate && l.updates > 0) {
		s.MaxEpsilonPerRecord += s.EpsGrad
	}
	return s
}
