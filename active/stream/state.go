package stream

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/vec"
)

// stateVersion is bumped whenever savedState changes incompatibly.
// Version 2 added the seed and the stream info; version 3 the run id and
// the v2 ledger (dp/ledger), in place of the charge flags.
const stateVersion = 3

// normSlack is the relative rounding allowed when Restore checks a saved
// norm bound: scaling onto a ball (clipping, Π of eq. 10) can leave the
// norm a few ulps above the radius.
const normSlack = 1e-12

// savedState is the JSON form of a Learner. It holds private data (the
// pending requests and the labelled batch) and, for a seeded learner, the
// random stream's position, which predicts future noise: a state file is
// as secret as the stream itself.
type savedState struct {
	Version    int             `json:"version"`
	Config     Config          `json:"config"`
	W          []float64       `json:"w"`
	Observed   int             `json:"observed"`
	Requested  int             `json:"requested"`
	Labelled   int             `json:"labelled"`
	Updates    int             `json:"updates"`
	NextClose  int             `json:"next_close"`
	Run        string          `json:"run"`
	Pending    []savedPoint    `json:"pending"`
	Batch      []savedPoint    `json:"batch"`
	Releases   []Release       `json:"releases"`
	Seed       *uint64         `json:"seed,omitempty"`
	Rand       []byte          `json:"rand,omitempty"`
	Ledger     *ledger.Ledger  `json:"ledger,omitempty"`
	StreamInfo json.RawMessage `json:"stream_info,omitempty"`
	// Kept and FinalDone are the final model's labelled points and whether
	// it was released (Config.FinalShare > 0 only).
	Kept      []savedPoint `json:"kept,omitempty"`
	FinalDone bool         `json:"final_done,omitempty"`
	// PendingOutside says the pending requests' points were left out
	// (SaveStateWithoutPending): only RestoreWithPending takes the state.
	PendingOutside bool `json:"pending_outside,omitempty"`
}

type savedPoint struct {
	ID uint64    `json:"id"`
	X  []float64 `json:"x"`
	Y  float64   `json:"y,omitempty"`
}

// SaveState writes everything needed to resume the learner exactly: the
// configuration, model, counters, buffered points, release log, the seed
// and position of a seeded random stream, the ledger if New created it,
// and the stream info. The output contains private data: store it like
// the stream itself.
//
// A learner with the tree update cannot be saved (errTreeState): its
// tree's node sums and noise are not part of the state.
func (l *Learner) SaveState(w io.Writer) error { return l.saveState(w, true) }

func (l *Learner) saveState(w io.Writer, withPending bool) error {
	if l.cfg.Update == Tree {
		return errTreeState
	}
	s := savedState{
		Version: stateVersion, Config: l.cfg, W: l.w,
		Observed: l.observed, Requested: l.requested, Labelled: l.labelled, Updates: l.updates,
		NextClose: l.nextClose, Run: l.run,
		Pending: []savedPoint{}, Batch: savePoints(l.batch), Releases: l.releases,
		StreamInfo: l.streamInfo, Kept: savePoints(l.kept), FinalDone: l.finalDone,
		PendingOutside: !withPending,
	}
	if withPending {
		s.Pending = savePoints(l.pending)
	}
	if l.src != nil {
		b, err := l.src.MarshalBinary()
		if err != nil {
			return fmt.Errorf("stream: save state: %w", err)
		}
		seed := l.seed
		s.Seed, s.Rand = &seed, b
	}
	if l.owned {
		s.Ledger = l.ledger
	}
	if err := json.NewEncoder(w).Encode(&s); err != nil {
		return fmt.Errorf("stream: save state: %w", err)
	}
	return nil
}

func savePoints(ps []point) []savedPoint {
	out := make([]savedPoint, len(ps))
	for i, p := range ps {
		out[i] = savedPoint{ID: p.id, X: p.x, Y: p.y}
	}
	return out
}

// errTreeState refuses to save or restore a tree-update learner.
var errTreeState = errors.New("stream: the tree update's state (its tree's node sums and noise) cannot be saved; run it to the end in one process")

// Restore reads a state written by SaveState and checks all of it: the
// configuration as New would, the model (finite, ‖w‖ ≤ Radius), the
// counters against each other, every buffered point (dimension, finite,
// ‖x‖ ≤ M, label, unique ids), the release log, the random state and the
// run id. A state that fails any check is refused with an error naming it.
//
// A seeded r continues the saved random stream exactly (so a resumed
// seeded run reproduces an uninterrupted one); it must carry the saved
// seed, else the error wraps ErrSeedMismatch. A secure r replaces the
// stream with fresh randomness. led should be the ledger the saved learner
// charged; the charges the saved counters imply (ε_s once a record was
// screened, ε_g once an update was released) are looked up there by the
// learner's run id and made again if it lacks them, so the spend is never
// under-reported. A nil led takes the ledger saved with the state, if any,
// else a new one.
func Restore(rd io.Reader, r *rng.Rand, led *ledger.Ledger) (*Learner, error) {
	l, err := restore(rd, r, led, nil)
	if err != nil {
		return nil, fmt.Errorf("stream: restore: %w", err)
	}
	return l, nil
}

// restore reads a state; outside (non-nil) supplies the pending points of
// a state saved without them, as the events passed to Observe.
func restore(rd io.Reader, r *rng.Rand, led *ledger.Ledger, outside func(l *Learner) ([]savedPoint, error)) (*Learner, error) {
	var s savedState
	if err := json.NewDecoder(rd).Decode(&s); err != nil {
		return nil, err
	}
	switch {
	case s.PendingOutside && outside == nil:
		return nil, errors.New("the state was saved without its pending requests: restore it with RestoreWithPending")
	case !s.PendingOutside && outside != nil:
		return nil, errors.New("the state holds its pending requests: restore it with Restore")
	}
	if s.Version != stateVersion {
		return nil, fmt.Errorf("state version %d, want %d", s.Version, stateVersion)
	}
	if s.Config.Update == Tree {
		return nil, errTreeState
	}
	// Before build allocates Dim floats: the model must have them.
	if len(s.W) != s.Config.Dim {
		return nil, fmt.Errorf("model has dimension %d, the configuration %d", len(s.W), s.Config.Dim)
	}
	if led == nil && s.Ledger != nil {
		led = s.Ledger
	}
	if !validRunID(s.Run) {
		return nil, fmt.Errorf("invalid run id %q", s.Run)
	}
	l, err := build(s.Config, r, led)
	if err != nil {
		return nil, err
	}
	l.run = s.Run
	if s.Ledger != nil && led == s.Ledger {
		l.owned = true
		if err := l.checkOwnedBudget(); err != nil {
			return nil, err
		}
	}
	if outside != nil {
		if s.Pending, err = outside(l); err != nil {
			return nil, fmt.Errorf("pending: %w", err)
		}
	}
	if err := l.load(&s); err != nil {
		return nil, err
	}
	if err := l.restoreRand(r, s.Seed, s.Rand); err != nil {
		return nil, err
	}
	// The counters say which charges were made: a record was screened iff
	// Observed > 0 (the first decision pays ε_s) and one entered an update
	// iff Updates > 0. chargeSelection and chargeUpdate are idempotent by
	// run id, so a ledger that holds them is not charged twice.
	if err := l.rechargeMissing(s.Observed > 0, s.Updates > 0); err != nil {
		return nil, err
	}
	if l.finalDone && !l.ledger.Charged(l.runKey("final")) {
		noise, err := l.finalNoise(len(l.kept))
		if err != nil {
			return nil, err
		}
		if _, err := l.ledger.Record(ledger.Charge{Groups: []string{GroupBatched}, Loss: noise.Loss(), Once: l.runKey("final")}); err != nil {
			return nil, fmt.Errorf("final model: %w", err)
		}
	}
	return l, nil
}

// load copies the saved model, counters and buffers into l, checking them.
func (l *Learner) load(s *savedState) error {
	if err := checkVector("model", s.W, l.cfg.Radius); err != nil {
		return err
	}
	if err := l.checkCounters(s); err != nil {
		return err
	}
	copy(l.w, s.W)
	l.wNorm = vec.Norm(l.w)
	l.observed, l.requested, l.labelled, l.updates = s.Observed, s.Requested, s.Labelled, s.Updates
	l.nextClose = s.NextClose
	ids := make(map[uint64]bool, len(s.Pending)+len(s.Batch))
	var err error
	if l.pending, err = l.loadPoints(s.Pending, false, ids); err != nil {
		return fmt.Errorf("pending: %w", err)
	}
	if l.batch, err = l.loadPoints(s.Batch, true, ids); err != nil {
		return fmt.Errorf("batch: %w", err)
	}
	if err := l.loadKept(s); err != nil {
		return err
	}
	if err := l.checkReleases(s.Releases); err != nil {
		return err
	}
	l.releases = s.Releases
	l.streamInfo = s.StreamInfo
	return nil
}

// loadKept checks and loads the final model's points: one per label when
// the configuration keeps them, none otherwise.
func (l *Learner) loadKept(s *savedState) error {
	want := 0
	if l.cfg.FinalShare > 0 {
		want = s.Labelled
	}
	if len(s.Kept) != want || (s.FinalDone && want == 0) {
		return fmt.Errorf("%d kept points (final released: %v) for %d labels at final share %v", len(s.Kept), s.FinalDone, s.Labelled, l.cfg.FinalShare)
	}
	var err error
	if l.kept, err = l.loadPoints(s.Kept, true, map[uint64]bool{}); err != nil {
		return fmt.Errorf("kept: %w", err)
	}
	l.finalDone = s.FinalDone
	return nil
}

// checkVector checks that v is finite with ‖v‖ ≤ bound (up to normSlack).
// Its dimension is the caller's to check.
func checkVector(what string, v []float64, bound float64) error {
	if i := firstNonFinite(v); i >= 0 {
		return fmt.Errorf("%s: coordinate %d is not finite: %v", what, i, v[i])
	}
	if n := vec.Norm(v); !(n <= bound*(1+normSlack)) {
		return fmt.Errorf("%s: norm %v exceeds the bound %v", what, n, bound)
	}
	return nil
}

// checkCounters checks the saved counters against each other and the
// configuration: every label answers a request, every request screened an
// event, every update used a label.
func (l *Learner) checkCounters(s *savedState) error {
	c := l.cfg
	switch {
	case s.Observed < 0 || s.Requested < 0 || s.Labelled < 0 || s.Updates < 0:
		return errors.New("negative counter")
	case s.Requested > s.Observed:
		return fmt.Errorf("%d requests for %d observed events", s.Requested, s.Observed)
	case s.Labelled > s.Requested || len(s.Pending) > s.Requested-s.Labelled:
		return fmt.Errorf("%d labels and %d pending requests exceed the %d requests", s.Labelled, len(s.Pending), s.Requested)
	case len(s.Batch) > s.Labelled:
		return fmt.Errorf("%d buffered points for %d labels", len(s.Batch), s.Labelled)
	case s.Updates > s.Labelled:
		return fmt.Errorf("%d updates from %d labels", s.Updates, s.Labelled)
	case c.LabelBudget > 0 && s.Requested > c.LabelBudget:
		return fmt.Errorf("%d requests over the label budget %d", s.Requested, c.LabelBudget)
	case c.Policy == FLMB && len(s.Batch) >= c.Window:
		return fmt.Errorf("%d buffered labels, but FLMB updates at %d", len(s.Batch), c.Window)
	case c.Policy == FLMB && s.NextClose != c.Window:
		return fmt.Errorf("window end %d under FLMB, want %d", s.NextClose, c.Window)
	case c.Policy == FLSW && (s.NextClose%c.Window != 0 || s.NextClose < c.Window ||
		s.Observed > s.NextClose || s.NextClose-c.Window > s.Observed):
		return fmt.Errorf("window end %d does not fit %d observations in windows of %d", s.NextClose, s.Observed, c.Window)
	}
	return nil
}

// loadPoints checks and converts saved points: dimension, finite, within
// the norm bound, ids naming observed events and unique across seen;
// pending ids are increasing and unlabelled, batch points labelled ±1.
func (l *Learner) loadPoints(sp []savedPoint, labelled bool, seen map[uint64]bool) ([]point, error) {
	out := make([]point, len(sp))
	for i, p := range sp {
		if len(p.X) != l.cfg.Dim {
			return nil, fmt.Errorf("event %d has dimension %d, want %d", p.ID, len(p.X), l.cfg.Dim)
		}
		if err := checkVector(fmt.Sprintf("event %d", p.ID), p.X, l.cfg.M); err != nil {
			return nil, err
		}
		switch {
		case p.ID == 0 || p.ID > uint64(l.observed):
			return nil, fmt.Errorf("event id %d outside the %d observed", p.ID, l.observed)
		case seen[p.ID]:
			return nil, fmt.Errorf("event %d appears twice", p.ID)
		case labelled && p.Y != 1 && p.Y != -1:
			return nil, fmt.Errorf("event %d has label %v", p.ID, p.Y)
		case !labelled && p.Y != 0:
			return nil, fmt.Errorf("pending event %d has a label", p.ID)
		case !labelled && i > 0 && p.ID <= sp[i-1].ID:
			return nil, fmt.Errorf("event ids out of order at %d", p.ID)
		}
		seen[p.ID] = true
		out[i] = point{id: p.ID, x: p.X, y: p.Y}
	}
	return out, nil
}

// checkReleases checks the (possibly truncated) release log: models of the
// right dimension inside the projection ball, update numbers increasing up
// to Updates, observation times non-decreasing up to Observed.
func (l *Learner) checkReleases(rels []Release) error {
	if len(rels) > l.updates {
		return fmt.Errorf("%d releases for %d updates", len(rels), l.updates)
	}
	for i, rel := range rels {
		if len(rel.W) != l.cfg.Dim {
			return fmt.Errorf("release %d has dimension %d, want %d", rel.Update, len(rel.W), l.cfg.Dim)
		}
		if err := checkVector(fmt.Sprintf("release %d", rel.Update), rel.W, l.cfg.Radius); err != nil {
			return err
		}
		switch {
		case rel.Update < 1 || rel.Update > l.updates || rel.Observation < 0 || rel.Observation > l.observed:
			return fmt.Errorf("release %d at observation %d outside %d updates and %d observations",
				rel.Update, rel.Observation, l.updates, l.observed)
		case i > 0 && (rel.Update <= rels[i-1].Update || rel.Observation < rels[i-1].Observation):
			return fmt.Errorf("release %d out of order", rel.Update)
		}
	}
	return nil
}

// restoreRand continues the saved stream when both it and r are seeded,
// with the same seed; a secure r, or a state without a stream, takes r.
func (l *Learner) restoreRand(r *rng.Rand, seed *uint64, saved []byte) error {
	if (seed == nil) != (saved == nil) {
		return errors.New("random state and seed must be saved together")
	}
	src := &rand.ChaCha8{}
	if saved != nil {
		if err := src.UnmarshalBinary(saved); err != nil {
			return fmt.Errorf("random state: %w", err)
		}
	}
	rs, seeded := r.Seed()
	if !seeded || saved == nil {
		l.setRand(r)
		return nil
	}
	if rs != *seed {
		return fmt.Errorf("state seeded with %d, resumed with %d: %w", *seed, rs, ErrSeedMismatch)
	}
	l.src, l.seed = src, *seed
	l.r = rng.FromSource(l.src)
	return nil
}

// rechargeMissing makes the charges the saved learner made (sel: ε_s for
// the screened records, grad: ε_g for the batched ones) unless the ledger
// already holds them under the learner's run id.
func (l *Learner) rechargeMissing(sel, grad bool) error {
	if l.cfg.NonPrivate {
		return nil
	}
	l.selPaid = l.ledger.Charged(l.runKey("selection"))
	l.updPaid = l.ledger.Charged(l.runKey("update"))
	if sel {
		if err := l.chargeSelection(); err != nil {
			return err
		}
	}
	if grad {
		if err := l.chargeUpdate(); err != nil {
			return err
		}
	}
	return nil
}

// validRunID accepts the 16 hex digits newRunID makes.
func validRunID(s string) bool {
	if len(s) != 16 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// checkOwnedBudget refuses a saved ledger whose budget exceeds the one New
// gives its own ledger (ε_s + ε_g per record, at the update's δ): a resumed
// budget never exceeds the original, whatever the file says.
func (l *Learner) checkOwnedBudget() error {
	b := l.ledger.Budget()
	want := account.Budget{Epsilon: l.sel.eps + l.cfg.EpsGrad, Delta: l.cfg.LedgerDelta()}
	if b.Epsilon > want.Epsilon || b.Delta > want.Delta {
		return fmt.Errorf("saved ledger budget ε = %v, δ = %v exceeds this learner's ε_s + ε_g = %v, δ = %v", b.Epsilon, b.Delta, want.Epsilon, want.Delta)
	}
	return nil
}

// Rerun gives the learner a new run id, so that its next selection and
// update are charged again: for records that a resumed learner is fed a
// second time (a deliberate replay), which parallel composition no longer
// covers. The ledger then holds both runs' charges on the same groups,
// and the budget decides whether the replay may go on.
func (l *Learner) Rerun() error {
	run, err := newRunID()
	if err != nil {
		return err
	}
	l.run, l.selPaid, l.updPaid, l.updCharge = run, false, false, ledger.Charge{}
	return nil
}
