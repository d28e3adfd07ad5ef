package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"

	"github.com/dpal-dev/dpal/active/stream"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/rng"
)

// Start returns a new learner of configuration cfg drawing on r and
// charging led (nil: a ledger of its own in memory whose budget is
// exactly cfg.Budget()), with info as the stream info its saved states
// carry. It charges nothing: a learner pays from its first event on.
// `dpal stream` (both modes) and the service start their learners here;
// whoever opened led closes it, also when Start fails.
func Start(cfg stream.Config, r *rng.Rand, led *ledger.Ledger, info StreamInfo) (*stream.Learner, error) {
	l, err := stream.New(cfg, r, led)
	if err != nil {
		return nil, err
	}
	if err := SetInfo(l, info); err != nil {
		return nil, err
	}
	return l, nil
}

// Checkpoint is a learner's saved state, as Resume restores it.
type Checkpoint struct {
	// State is the JSON of stream.Learner.SaveState (ReadState unseals it
	// from a state file), or of SaveStateWithoutPending when Outside is
	// set.
	State []byte
	// Outside says the open label requests were kept apart from State
	// (the service's index of open requests): Pending holds them, in
	// increasing id order.
	Outside bool
	Pending []stream.PendingEvent
}

// Config returns the configuration saved in the checkpoint: a ledger
// opened for the learner needs it before Resume.
func (c Checkpoint) Config() (stream.Config, error) {
	var head struct {
		Config stream.Config `json:"config"`
	}
	err := json.Unmarshal(c.State, &head)
	return head.Config, err
}

// Resume restores the learner of checkpoint c, drawing on r (a seeded r
// must carry the saved seed: stream.ErrSeedMismatch) and charging led
// (nil: the ledger saved in the state, in memory). The charges the saved
// counters imply are made again where led lacks them, so a resume never
// lowers the spend (stream.Restore). `dpal stream --resume` and the
// service (a hosted learner's first call after a start) resume their
// learners here; whoever opened led closes it, also when Resume fails.
func Resume(c Checkpoint, r *rng.Rand, led *ledger.Ledger) (*stream.Learner, error) {
	if c.Outside {
		return stream.RestoreWithPending(bytes.NewReader(c.State), r, led, c.Pending)
	}
	return stream.Restore(bytes.NewReader(c.State), r, led)
}

// Observe gives l the event x under the event protocol's rule for bad
// input: an event out of the learner's declared bounds
// (stream.ErrInvalidEvent: wrong dimension, NaN or Inf, ‖x‖ > M in reject
// mode) is rejected, leaves the learner unchanged and spends nothing;
// rejected is then true and err holds the details, which are private
// (the operator's log gets them, the public answer only RejectedClass).
// Any other error (the budget, the ledger) comes back with rejected
// false: it is the run's, not the event's. Event mode (Events) and the
// service feed every event through it.
func Observe(l *stream.Learner, x []float64) (dec stream.Decision, rejected bool, err error) {
	dec, err = l.Observe(x)
	return dec, errors.Is(err, stream.ErrInvalidEvent), err
}

// TakeReleases returns the models l released since the last call and
// forgets them, so that each (T_i, w_{T_i}) is published once: as a
// release line (Events) or a stored release (the service).
func TakeReleases(l *stream.Learner) []stream.Release {
	rels := l.Releases()
	l.DropReleases()
	return rels
}

// seedOf returns the seed driving l (for a resumed learner the saved
// one), or nil for secure randomness.
func seedOf(l *stream.Learner) *uint64 {
	if s, ok := l.Seed(); ok {
		return &s
	}
	return nil
}

// closeLedger closes a learner's ledger (a durable file is unlocked).
func closeLedger(l *stream.Learner) {
	if led := l.Ledger(); led != nil {
		if err := led.Close(); err != nil {
			slog.Warn("dpal stream: closing the ledger", "err", err)
		}
	}
}
