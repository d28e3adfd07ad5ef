package stream

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/model"
)

// stateVersion is bumped whenever savedState changes incompatibly.
const stateVersion = 1

// savedState is the JSON form of a Learner. It holds private data (the
// pending requests and the labelled batch) and, for a seeded learner, the
// random stream's position, which predicts future noise: a state file is
// as secret as the stream itself.
type savedState struct {
	Version       int             `json:"version"`
	Config        Config          `json:"config"`
	W             []float64       `json:"w"`
	Observed      int             `json:"observed"`
	Requested     int             `json:"requested"`
	Labelled      int             `json:"labelled"`
	Updates       int             `json:"updates"`
	NextClose     int             `json:"next_close"`
	ChargedSelect bool            `json:"charged_select"`
	ChargedGrad   bool            `json:"charged_grad"`
	Pending       []savedPoint    `json:"pending"`
	Batch         []savedPoint    `json:"batch"`
	Releases      []Release       `json:"releases"`
	Rand          []byte          `json:"rand,omitempty"`
	Ledger        *account.Ledger `json:"ledger,omitempty"`
}

type savedPoint struct {
	ID uint64    `json:"id"`
	X  []float64 `json:"x"`
	Y  float64   `json:"y,omitempty"`
}

// SaveState writes everything needed to resume the learner exactly: the
// configuration, model, counters, buffered points, release log, the
// position of a seeded random stream, and the ledger if New created it.
// The output contains private data: store it like the stream itself.
func (l *Learner) SaveState(w io.Writer) error {
	s := savedState{
		Version: stateVersion, Config: l.cfg, W: l.w,
		Observed: l.observed, Requested: l.requested, Labelled: l.labelled, Updates: l.updates,
		NextClose: l.nextClose, ChargedSelect: l.chargedSelect, ChargedGrad: l.chargedGrad,
		Pending: savePoints(l.pending), Batch: savePoints(l.batch), Releases: l.releases,
	}
	if l.src != nil {
		b, err := l.src.MarshalBinary()
		if err != nil {
			return fmt.Errorf("stream: save state: %w", err)
		}
		s.Rand = b
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

// Restore reads a state written by SaveState. A seeded r continues the
// saved random stream exactly (so a resumed seeded run reproduces an
// uninterrupted one); a secure r replaces it with fresh randomness. ledger
// should be the ledger the saved learner charged (restored from its JSON);
// if it has no record of the learner's charges they are made again, so the
// spend is never under-reported. A nil ledger takes the one saved with the
// state, if any, else a new one.
func Restore(rd io.Reader, r *rng.Rand, ledger *account.Ledger) (*Learner, error) {
	var s savedState
	if err := json.NewDecoder(rd).Decode(&s); err != nil {
		return nil, fmt.Errorf("stream: restore: %w", err)
	}
	if s.Version != stateVersion {
		return nil, fmt.Errorf("stream: restore: state version %d, want %d", s.Version, stateVersion)
	}
	if ledger == nil && s.Ledger != nil {
		ledger = s.Ledger
	}
	l, err := build(s.Config, r, ledger)
	if err != nil {
		return nil, fmt.Errorf("stream: restore: %w", err)
	}
	if s.Ledger != nil && ledger == s.Ledger {
		l.owned = true
	}
	if err := l.load(&s); err != nil {
		return nil, fmt.Errorf("stream: restore: %w", err)
	}
	if err := l.restoreRand(r, s.Rand); err != nil {
		return nil, fmt.Errorf("stream: restore: %w", err)
	}
	if err := l.rechargeMissing(s.ChargedSelect, s.ChargedGrad); err != nil {
		return nil, fmt.Errorf("stream: restore: %w", err)
	}
	return l, nil
}

// load copies the saved model, counters and buffers into l, checking them.
func (l *Learner) load(s *savedState) error {
	d := l.cfg.Dim
	if len(s.W) != d {
		return fmt.Errorf("model has dimension %d, want %d", len(s.W), d)
	}
	if s.Observed < 0 || s.Requested < 0 || s.Labelled < 0 || s.Updates < 0 || s.NextClose < 0 {
		return errors.New("negative counter")
	}
	copy(l.w, s.W)
	l.wNorm = model.Norm(l.w)
	l.observed, l.requested, l.labelled, l.updates = s.Observed, s.Requested, s.Labelled, s.Updates
	l.nextClose = s.NextClose
	var err error
	if l.pending, err = loadPoints(s.Pending, d, false); err != nil {
		return fmt.Errorf("pending: %w", err)
	}
	if l.batch, err = loadPoints(s.Batch, d, true); err != nil {
		return fmt.Errorf("batch: %w", err)
	}
	for _, rel := range s.Releases {
		if len(rel.W) != d {
			return fmt.Errorf("release %d has dimension %d, want %d", rel.Update, len(rel.W), d)
		}
	}
	l.releases = s.Releases
	return nil
}

func loadPoints(sp []savedPoint, d int, labelled bool) ([]point, error) {
	out := make([]point, len(sp))
	for i, p := range sp {
		if len(p.X) != d {
			return nil, fmt.Errorf("event %d has dimension %d, want %d", p.ID, len(p.X), d)
		}
		if labelled && p.Y != 1 && p.Y != -1 {
			return nil, fmt.Errorf("event %d has label %v", p.ID, p.Y)
		}
		if i > 0 && !labelled && p.ID <= sp[i-1].ID {
			return nil, fmt.Errorf("event ids out of order at %d", p.ID)
		}
		out[i] = point{id: p.ID, x: p.X, y: p.Y}
	}
	return out, nil
}

// restoreRand continues the saved stream when both it and r are seeded.
func (l *Learner) restoreRand(r *rng.Rand, saved []byte) error {
	_, seeded := r.Seed()
	if !seeded || saved == nil {
		l.setRand(r)
		return nil
	}
	l.src = &rand.ChaCha8{}
	if err := l.src.UnmarshalBinary(saved); err != nil {
		return fmt.Errorf("random state: %w", err)
	}
	l.r = &rng.Rand{Rand: rand.New(l.src)}
	return nil
}

// rechargeMissing makes the charges the saved learner made again if the
// ledger shows none, so that a fresh ledger still sees the spend.
func (l *Learner) rechargeMissing(sel, grad bool) error {
	if l.cfg.NonPrivate {
		return nil
	}
	if sel {
		if eps, _ := l.ledger.Spent(GroupObserved); eps > 0 {
			l.chargedSelect = true
		} else if err := l.chargeSelection(); err != nil {
			return err
		}
	}
	if grad {
		if eps, _ := l.ledger.Spent(GroupBatched); eps > l.sel.eps {
			l.chargedGrad = true
		} else if err := l.chargeUpdate(); err != nil {
			return err
		}
	}
	return nil
}
