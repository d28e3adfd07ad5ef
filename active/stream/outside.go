package stream

import (
	"fmt"
	"io"
	"slices"

	"gonum.org/v1/gonum/floats"

	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/rng"
)

// PendingEvent is a pending label request as a caller keeps it outside
// the learner: its event id and the event as passed to Observe.
type PendingEvent struct {
	ID uint64
	X  []float64
}

// SaveStateWithoutPending writes SaveState's state without the pending
// requests' points: for a caller that keeps every open request durably
// itself (dpal serve, in its store), so that a checkpoint's size and cost
// do not grow with the queue of open requests. Only RestoreWithPending
// takes the result.
func (l *Learner) SaveStateWithoutPending(w io.Writer) error { return l.saveState(w, false) }

// RestoreWithPending restores a state written by SaveStateWithoutPending,
// with the open requests pending, in increasing id order; each event is
// checked and clipped onto the ball exactly as Observe did, so the learner
// equals the one saved. Everything else is as for Restore.
func RestoreWithPending(rd io.Reader, r *rng.Rand, led *ledger.Ledger, pending []PendingEvent) (*Learner, error) {
	l, err := restore(rd, r, led, func(l *Learner) ([]savedPoint, error) {
		out := make([]savedPoint, len(pending))
		for i, p := range pending {
			scale, err := l.check(p.X)
			if err != nil {
				return nil, fmt.Errorf("event %d: %w", p.ID, err)
			}
			x := slices.Clone(p.X)
			if scale != 1 {
				floats.ScaleTo(x, scale, p.X) // as keep does
			}
			out[i] = savedPoint{ID: p.ID, X: x}
		}
		return out, nil
	})
	if err != nil {
		return nil, fmt.Errorf("stream: restore: %w", err)
	}
	return l, nil
}
