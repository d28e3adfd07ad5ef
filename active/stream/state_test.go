package stream

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/vec"
)

// savedMidStream returns the state of a seeded learner (dimension 3) after
// 42 events with an FLSW window of 4, a pending request and labels
// buffered, as a generic JSON object for tests to corrupt.
func savedMidStream(t testing.TB) map[string]any {
	t.Helper()
	cfg := DefaultConfig(3)
	cfg.Policy, cfg.Window = FLSW, 4
	l := mustNew(t, cfg, 3)
	X, Y := synthStream(42, 3, 0, 2)
	for i, x := range X {
		dec, err := l.Observe(x)
		if err != nil {
			t.Fatal(err)
		}
		if dec.Request && i%3 != 0 {
			if err := l.Label(dec.ID, Y[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	var buf bytes.Buffer
	if err := l.SaveState(&buf); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	if len(m["pending"].([]any)) == 0 || len(m["batch"].([]any)) == 0 || len(m["releases"].([]any)) == 0 {
		t.Fatalf("test state lacks pending requests, a batch or releases: %s", buf.Bytes())
	}
	return m
}

func encodeState(t testing.TB, m map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRestoreRejects: every kind of corruption of a saved state is refused
// with an error that names it.
func TestRestoreRejects(t *testing.T) {
	pt := func(m map[string]any, list string, i int) map[string]any {
		return m[list].([]any)[i].(map[string]any)
	}
	for _, tc := range []struct {
		name    string
		corrupt func(m map[string]any)
		want    string
	}{
		{"model norm", func(m map[string]any) { m["w"] = []any{1.0, 1.0, 0.0} }, "model: norm"},
		{"model dimension", func(m map[string]any) { m["w"] = []any{0.0, 0.0} }, "model has dimension 2"},
		{"pending norm", func(m map[string]any) { pt(m, "pending", 0)["x"] = []any{2.0, 0.0, 0.0} }, "exceeds the bound 1"},
		{"batch dimension", func(m map[string]any) { pt(m, "batch", 0)["x"] = []any{0.1} }, "dimension 1, want 3"},
		{"batch label", func(m map[string]any) { pt(m, "batch", 0)["y"] = 0.5 }, "label 0.5"},
		{"pending labelled", func(m map[string]any) { pt(m, "pending", 0)["y"] = 1.0 }, "has a label"},
		{"repeated id", func(m map[string]any) { pt(m, "batch", 0)["id"] = pt(m, "pending", 0)["id"] }, "appears twice"},
		{"id beyond observed", func(m map[string]any) { pt(m, "batch", 0)["id"] = 1e6 }, "outside the 42 observed"},
		{"requests", func(m map[string]any) { m["requested"] = 43.0 }, "requests for 42 observed"},
		{"labels", func(m map[string]any) { m["labelled"] = 1e18 }, "labels"},
		{"updates", func(m map[string]any) { m["updates"] = 40.0 }, "updates from"},
		{"window end", func(m map[string]any) { m["next_close"] = 7.0 }, "window end 7"},
		{"release norm", func(m map[string]any) { pt(m, "releases", 0)["w"] = []any{3.0, 0.0, 0.0} }, "release 1: norm"},
		{"release order", func(m map[string]any) {
			r := m["releases"].([]any)
			r[0], r[len(r)-1] = r[len(r)-1], r[0]
		}, "out of order"},
		{"seed without stream", func(m map[string]any) { delete(m, "rand") }, "saved together"},
		{"random state", func(m map[string]any) { m["rand"] = "AAAA" }, "random state"},
		{"ledger tampered", func(m map[string]any) {
			e := m["ledger"].(map[string]any)["entries"].([]any)
			e[1].(map[string]any)["loss"].(map[string]any)["epsilon"] = -1.0
		}, "epsilon must be finite and >= 0"},
		{"ledger gap", func(m map[string]any) {
			e := m["ledger"].(map[string]any)["entries"].([]any)
			e[1].(map[string]any)["seq"] = 7.0
		}, "gap"},
		{"ledger emptied, budget raised", func(m map[string]any) {
			led := m["ledger"].(map[string]any)
			led["entries"] = []any{}
			led["meta"].(map[string]any)["budget"].(map[string]any)["epsilon"] = 1e9
		}, "exceeds this learner's"},
		{"budget with delta", func(m map[string]any) {
			m["ledger"].(map[string]any)["meta"].(map[string]any)["budget"].(map[string]any)["delta"] = 0.5
		}, "exceeds this learner's"},
		{"run id", func(m map[string]any) { m["run"] = "x" }, "invalid run id"},
		{"version", func(m map[string]any) { m["version"] = 1.0 }, "state version 1"},
		{"config", func(m map[string]any) { m["config"].(map[string]any)["window"] = 0.0 }, "window must be"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := savedMidStream(t)
			tc.corrupt(m)
			_, err := Restore(bytes.NewReader(encodeState(t, m)), rng.Seeded(3), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	// The uncorrupted state is accepted.
	if _, err := Restore(bytes.NewReader(encodeState(t, savedMidStream(t))), rng.Seeded(3), nil); err != nil {
		t.Fatal(err)
	}
}

// TestRestoreRechargesFromCounters: the charges follow the counters: a
// state saved without its ledger, after 42 observations and some updates,
// still charges a fresh ledger ε_s + ε_g, and restoring into that ledger
// again (same run id) charges nothing more.
func TestRestoreRechargesFromCounters(t *testing.T) {
	m := savedMidStream(t)
	delete(m, "ledger")
	led, _ := ledger.New(account.Budget{Epsilon: 10})
	if _, err := Restore(bytes.NewReader(encodeState(t, m)), rng.Seeded(3), led); err != nil {
		t.Fatal(err)
	}
	if obs, _ := led.Spent(GroupObserved); obs != 1 {
		t.Errorf("observed group spent %v, want 1", obs)
	}
	if bat, _ := led.Spent(GroupBatched); bat != 2 {
		t.Errorf("batched group spent %v, want 2", bat)
	}
	if _, err := Restore(bytes.NewReader(encodeState(t, m)), rng.Seeded(3), led); err != nil {
		t.Fatal(err)
	}
	if bat, _ := led.Spent(GroupBatched); bat != 2 || led.Len() != 2 {
		t.Errorf("second restore: batched group spent %v in %d entries, want 2 in 2", bat, led.Len())
	}
}

// checkInvariants fails t unless l satisfies everything Restore promises.
func checkInvariants(t *testing.T, l *Learner) {
	t.Helper()
	c := l.cfg
	bad := func(v []float64, bound float64) bool {
		return len(v) != c.Dim || firstNonFinite(v) >= 0 || !(vec.Norm(v) <= bound*(1+normSlack))
	}
	if bad(l.w, c.Radius) || l.wNorm != vec.Norm(l.w) {
		t.Fatalf("model %v (norm %v)", l.w, l.wNorm)
	}
	if l.observed < 0 || l.requested > l.observed || l.labelled+len(l.pending) > l.requested ||
		len(l.batch) > l.labelled || l.updates > l.labelled || l.labelled < 0 || l.updates < 0 {
		t.Fatalf("counters %+v", l.Stats())
	}
	ids := map[uint64]bool{}
	for i, p := range append(append([]point{}, l.pending...), l.batch...) {
		if bad(p.x, c.M) || p.id == 0 || p.id > uint64(l.observed) || ids[p.id] {
			t.Fatalf("point %d: %+v", i, p)
		}
		ids[p.id] = true
		if i < len(l.pending) && (p.y != 0 || i > 0 && p.id <= l.pending[i-1].id) {
			t.Fatalf("pending point %+v", p)
		}
		if i >= len(l.pending) && p.y != 1 && p.y != -1 {
			t.Fatalf("batch point %+v", p)
		}
	}
	for _, r := range l.releases {
		if bad(r.W, c.Radius) || r.Update < 1 || r.Update > l.updates || r.Observation > l.observed {
			t.Fatalf("release %+v", r)
		}
	}
	if c.NonPrivate {
		return
	}
	obs, _ := l.ledger.Spent(GroupObserved)
	bat, _ := l.ledger.Spent(GroupBatched)
	if l.observed > 0 && (obs < l.sel.eps*(1-normSlack) || bat < l.sel.eps*(1-normSlack)) {
		t.Fatalf("ledger %v, %v after %d observations", obs, bat, l.observed)
	}
	if l.updates > 0 && bat < (l.sel.eps+c.EpsGrad)*(1-normSlack) {
		t.Fatalf("ledger %v after %d updates", bat, l.updates)
	}
}

// FuzzRestore: arbitrary bytes never make Restore panic, and every state
// it accepts satisfies the invariants, can observe an event and saves a
// state that restores again.
func FuzzRestore(f *testing.F) {
	valid := encodeState(f, savedMidStream(f))
	f.Add(valid)
	f.Add([]byte(`{"version":3,"run":"0123456789abcdef","config":{"dim":1,"m":1,"eps_select":1,"eps_grad":1,"tau":0.5,"window":1,"eta":1,"loss":"hinge","radius":1},"w":[0]}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"version":3,"run":"0123456789abcdef","config":{"dim":1e12}}`))
	f.Add(bytes.Replace(valid, []byte(`"observed":40`), []byte(`"observed":4`), 1))
	f.Add(bytes.Replace(valid, []byte(`"window":4`), []byte(`"window":1`), 1))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, r := range []*rng.Rand{rng.Seeded(3), rng.Seeded(1)} {
			l, err := Restore(bytes.NewReader(b), r, nil)
			if err != nil {
				continue
			}
			checkInvariants(t, l)
			x := make([]float64, l.cfg.Dim)
			if _, err := l.Observe(x); err != nil && errors.Is(err, ErrInvalidEvent) {
				t.Fatalf("zero event rejected: %v", err)
			}
			var buf bytes.Buffer
			if err := l.SaveState(&buf); err != nil {
				t.Fatal(err)
			}
			seed, _ := l.Seed()
			if _, err := Restore(&buf, rng.Seeded(seed), nil); err != nil {
				t.Fatalf("saved state does not restore: %v", err)
			}
		}
	})
}

// TestSeedRecorded: Seed reports New's seed, and a state restored with
// secure randomness is no longer seeded.
func TestSeedRecorded(t *testing.T) {
	l := mustNew(t, DefaultConfig(2), 42)
	if s, ok := l.Seed(); !ok || s != 42 {
		t.Errorf("Seed() = %d, %v", s, ok)
	}
	var buf bytes.Buffer
	if err := l.SaveState(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := Restore(&buf, rng.Secure(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := back.Seed(); ok {
		t.Error("a secure restore still reports a seed")
	}
	s, err := New(DefaultConfig(2), rng.Secure(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Seed(); ok {
		t.Error("a secure learner reports a seed")
	}
}

// TestRerunChargesAgain: after Rerun the learner pays its selection and
// update again, on the same groups; its own ledger (budget ε_s + ε_g)
// refuses that, a larger one records both runs.
func TestRerunChargesAgain(t *testing.T) {
	cfg := DefaultConfig(2)
	cfg.Policy, cfg.Window = FLSW, 1
	X, Y := synthStream(20, 2, 0, 4)
	feed := func(l *Learner) error {
		for i, x := range X {
			if _, err := l.Step(x, func(uint64, []float64) (float64, bool) { return Y[i], true }); err != nil {
				return err
			}
		}
		return nil
	}
	own := mustNew(t, cfg, 1)
	if err := feed(own); err != nil {
		t.Fatal(err)
	}
	if err := own.Rerun(); err != nil {
		t.Fatal(err)
	}
	if err := feed(own); !errors.Is(err, account.ErrBudgetExceeded) {
		t.Errorf("replay on the learner's own ledger: %v, want ErrBudgetExceeded", err)
	}
	led, err := ledger.New(account.Budget{Epsilon: 10})
	if err != nil {
		t.Fatal(err)
	}
	l, err := New(cfg, rng.Seeded(1), led)
	if err != nil {
		t.Fatal(err)
	}
	if err := feed(l); err != nil {
		t.Fatal(err)
	}
	once, _ := led.Spent(GroupBatched)
	if err := l.Rerun(); err != nil {
		t.Fatal(err)
	}
	if err := feed(l); err != nil {
		t.Fatal(err)
	}
	if twice, _ := led.Spent(GroupBatched); twice != 2*once || led.Len() != 4 {
		t.Errorf("after a rerun: ε %v (once %v), %d entries; want twice, 4", twice, once, led.Len())
	}
}
