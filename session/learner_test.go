package session

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/dpal-dev/dpal/active/stream"
	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/rng"
)

// TestStartResume: a learner started with its stream info and resumed
// from its checkpoint, with its open requests inside the state or kept
// apart (the service's way), continues as the uninterrupted one.
func TestStartResume(t *testing.T) {
	cfg := stream.DefaultConfig(2)
	cfg.Window = 2
	start := func() *stream.Learner {
		l, err := Start(cfg, rng.Seeded(3), nil, StreamInfo{Mode: ModeService})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	x := func(i int) []float64 { return []float64{float64(i%5)/10 - 0.2, float64(i%3)/10 - 0.1} }
	// feed gives events from..to-1, labelling every other request, and
	// returns the requests left open.
	feed := func(l *stream.Learner, from, to int, open map[uint64][]float64) {
		for i := from; i < to; i++ {
			dec, rejected, err := Observe(l, x(i))
			if err != nil || rejected {
				t.Fatalf("event %d: %v (rejected %v)", i, err, rejected)
			}
			if dec.Request && i%2 == 0 {
				if err := l.Label(dec.ID, 1); err != nil {
					t.Fatal(err)
				}
			} else if dec.Request {
				open[dec.ID] = x(i)
			}
		}
	}
	whole := start()
	feed(whole, 0, 80, map[uint64][]float64{})
	for _, outside := range []bool{false, true} {
		l := start()
		if info, err := SavedInfo(l); err != nil || info.Mode != ModeService {
			t.Fatalf("stream info %+v (%v), want mode %s", info, err, ModeService)
		}
		open := map[uint64][]float64{}
		feed(l, 0, 40, open)
		var buf bytes.Buffer
		cp := Checkpoint{Outside: outside}
		if outside {
			if err := l.SaveStateWithoutPending(&buf); err != nil {
				t.Fatal(err)
			}
			for _, id := range l.Pending() {
				cp.Pending = append(cp.Pending, stream.PendingEvent{ID: id, X: open[id]})
			}
		} else if err := l.SaveState(&buf); err != nil {
			t.Fatal(err)
		}
		cp.State = buf.Bytes()
		if got, err := cp.Config(); err != nil || got != cfg {
			t.Fatalf("checkpoint's configuration %+v (%v), want %+v", got, err, cfg)
		}
		r, err := Resume(cp, rng.Seeded(3), nil)
		if err != nil {
			t.Fatalf("outside %v: %v", outside, err)
		}
		feed(r, 40, 80, open)
		if r.Stats() != whole.Stats() || !reflect.DeepEqual(r.Weights(), whole.Weights()) {
			t.Errorf("outside %v: resumed learner %+v, uninterrupted %+v", outside, r.Stats(), whole.Stats())
		}
	}
	if _, err := Resume(Checkpoint{State: []byte("{")}, rng.Seeded(3), nil); err == nil {
		t.Error("a damaged checkpoint was resumed")
	}
}

// TestObserveRejects: a bad event is rejected and changes nothing; a
// budget error is the run's, not the event's.
func TestObserveRejects(t *testing.T) {
	cfg := stream.DefaultConfig(2)
	l, err := Start(cfg, rng.Seeded(1), nil, StreamInfo{})
	if err != nil {
		t.Fatal(err)
	}
	before := l.Stats()
	for _, x := range [][]float64{{0.1}, {0.1, 0.2, 0.3}} {
		if _, rejected, err := Observe(l, x); !rejected || !errors.Is(err, stream.ErrInvalidEvent) {
			t.Errorf("event %v: rejected %v, err %v; want a rejection", x, rejected, err)
		}
	}
	if l.Stats() != before {
		t.Errorf("rejections changed the learner: %+v, was %+v", l.Stats(), before)
	}
	led, err := ledger.New(account.Budget{Epsilon: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	poor, err := Start(cfg, rng.Seeded(1), led, StreamInfo{})
	if err != nil {
		t.Fatal(err)
	}
	if _, rejected, err := Observe(poor, []float64{0.1, 0.2}); rejected || !errors.Is(err, account.ErrBudgetExceeded) {
		t.Errorf("over budget: rejected %v, err %v; want the budget error, not a rejection", rejected, err)
	}
}

// TestTakeReleases: each release is taken once.
func TestTakeReleases(t *testing.T) {
	cfg := stream.DefaultConfig(2)
	cfg.Window = 1
	l, err := Start(cfg, rng.Seeded(2), nil, StreamInfo{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; len(l.Releases()) < 3; i++ {
		dec, _, err := Observe(l, []float64{0.3, float64(i%7)/10 - 0.3})
		if err != nil {
			t.Fatal(err)
		}
		if dec.Request {
			if err := l.Label(dec.ID, -1); err != nil {
				t.Fatal(err)
			}
		}
	}
	if rels := TakeReleases(l); len(rels) != 3 || rels[2].Update != 3 {
		t.Errorf("took %+v, want updates 1 to 3", rels)
	}
	if rels := TakeReleases(l); len(rels) != 0 {
		t.Errorf("took %d releases again", len(rels))
	}
}
