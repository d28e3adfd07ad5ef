package stream

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/dpal-dev/dpal/dp/rng"
)

// TestSaveWithoutPending: a state saved without its pending points, restored
// with the raw events of the open requests, is the state SaveState saves
// (the events are clipped as Observe clipped them), and each restore
// refuses the other's state.
func TestSaveWithoutPending(t *testing.T) {
	cfg := DefaultConfig(3)
	l := mustNew(t, cfg, 5)
	X, Y := synthStream(60, 3, 0, 2)
	raw := map[uint64][]float64{}
	for i, x := range X {
		x = append([]float64(nil), x...)
		for j := range x {
			x[j] *= 3 // outside the ball: the learner keeps a clipped copy
		}
		dec, err := l.Observe(x)
		if err != nil {
			t.Fatal(err)
		}
		raw[dec.ID] = x
		if dec.Request && i%2 == 0 {
			if err := l.Label(dec.ID, Y[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(l.Pending()) == 0 {
		t.Fatal("no pending requests")
	}
	var full, lean bytes.Buffer
	if err := l.SaveState(&full); err != nil {
		t.Fatal(err)
	}
	if err := l.SaveStateWithoutPending(&lean); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(lean.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	if n := len(m["pending"].([]any)); n != 0 || m["pending_outside"] != true {
		t.Fatalf("lean state: %d pending points, pending_outside %v", n, m["pending_outside"])
	}
	var pend []PendingEvent
	for _, id := range l.Pending() {
		pend = append(pend, PendingEvent{ID: id, X: raw[id]})
	}
	r, err := RestoreWithPending(bytes.NewReader(lean.Bytes()), rng.Seeded(5), nil, pend)
	if err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	if err := r.SaveState(&again); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.Bytes(), full.Bytes()) {
		t.Errorf("restored with the pending events:\n%s\nwant\n%s", again.Bytes(), full.Bytes())
	}
	if _, err := Restore(bytes.NewReader(lean.Bytes()), rng.Seeded(5), nil); err == nil || !strings.Contains(err.Error(), "RestoreWithPending") {
		t.Errorf("Restore of a lean state: %v", err)
	}
	if _, err := RestoreWithPending(bytes.NewReader(full.Bytes()), rng.Seeded(5), nil, pend); err == nil {
		t.Error("RestoreWithPending took a state holding its pending points")
	}
	bad := append([]PendingEvent(nil), pend...)
	bad[0].X = []float64{1}
	if _, err := RestoreWithPending(bytes.NewReader(lean.Bytes()), rng.Seeded(5), nil, bad); err == nil {
		t.Error("RestoreWithPending took an event of the wrong dimension")
	}
}
