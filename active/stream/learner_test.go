package stream

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/floats"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/model"
	"github.com/dpal-dev/dpal/vec"
)

// TestBadInput feeds a table of bad events and labels between good ones and
// checks each error names the event, and that nothing accepted is lost.
func TestBadInput(t *testing.T) {
	cfg := DefaultConfig(3)
	cfg.NormMode = Reject
	cfg.Window = 1000 // no update: the state is easy to compare
	l := mustNew(t, cfg, 1)
	good := []float64{0.1, 0.2, 0.3}
	first, err := l.Observe(good)
	if err != nil {
		t.Fatal(err)
	}
	if !first.Request {
		// Make event 1 a pending request for the label cases below.
		for !first.Request {
			if first, err = l.Observe(good); err != nil {
				t.Fatal(err)
			}
		}
	}
	before := l.Stats()
	var state bytes.Buffer
	if err := l.SaveState(&state); err != nil {
		t.Fatal(err)
	}
	next := before.Observed + 1
	for _, tc := range []struct {
		name string
		x    []float64
		want string
	}{
		{"NaN", []float64{0.1, math.NaN(), 0}, "feature 1 is not finite"},
		{"+Inf", []float64{math.Inf(1), 0, 0}, "feature 0 is not finite"},
		{"-Inf", []float64{0, 0, math.Inf(-1)}, "feature 2 is not finite"},
		{"short", []float64{0.1, 0.2}, "dimension 2, want 3"},
		{"long", []float64{0.1, 0.2, 0.3, 0.4}, "dimension 4, want 3"},
		{"empty", nil, "dimension 0, want 3"},
		{"norm > M", []float64{1, 1, 0}, "exceeds the bound M = 1"},
		{"huge", []float64{1e200, 1e200, 0}, "exceeds the bound"},
	} {
		_, err := l.Observe(tc.x)
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "event "+itoa(next)) {
			t.Errorf("%s: error %q does not name event %d and %q", tc.name, err, next, tc.want)
		}
	}
	for _, y := range []float64{0, 2, -0.5, math.NaN(), math.Inf(1)} {
		if err := l.Label(first.ID, y); err == nil || !strings.Contains(err.Error(), "not -1 or +1") {
			t.Errorf("label %v: error %v", y, err)
		}
	}
	if err := l.Label(99999, 1); !errors.Is(err, ErrUnknownRequest) {
		t.Errorf("label for an unknown id: %v", err)
	}
	if l.Stats() != before {
		t.Fatalf("bad input changed the stats: %+v, was %+v", l.Stats(), before)
	}
	var after bytes.Buffer
	if err := l.SaveState(&after); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(state.Bytes(), after.Bytes()) {
		t.Fatal("bad input changed the learner's state")
	}
	// The accepted request is still there and takes its label.
	if err := l.Label(first.ID, -1); err != nil {
		t.Fatalf("pending request lost: %v", err)
	}
	if err := l.Label(first.ID, -1); !errors.Is(err, ErrUnknownRequest) {
		t.Errorf("second label for the same request: %v", err)
	}
	// Clip mode accepts and scales the same over-long event.
	cfg.NormMode = Clip
	lc := mustNew(t, cfg, 1)
	if _, err := lc.Observe([]float64{3, 4, 0}); err != nil {
		t.Errorf("clip mode rejected a long event: %v", err)
	}
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		if n /= 10; n == 0 {
			return string(b[i:])
		}
	}
}

// TestConfigValidation: New refuses each bad setting with a FieldError
// naming it by its JSON name (what the service answers as config.<name>).
func TestConfigValidation(t *testing.T) {
	for _, tc := range []struct {
		name, field string
		f           func(*Config)
	}{
		{"dim", "dim", func(c *Config) { c.Dim = 0 }},
		{"M", "m", func(c *Config) { c.M = 0 }},
		{"eps-select", "eps_select", func(c *Config) { c.EpsSelect = 0 }},
		{"eps-grad", "eps_grad", func(c *Config) { c.EpsGrad = math.Inf(1) }},
		{"tau", "tau", func(c *Config) { c.Tau = 1.5 }},
		{"window", "window", func(c *Config) { c.Window = 0 }},
		{"eta", "eta", func(c *Config) { c.Eta = math.NaN() }},
		{"lambda", "lambda", func(c *Config) { c.Lambda = -1 }},
		{"loss", "loss", func(c *Config) { c.Loss = "square" }},
		{"radius", "radius", func(c *Config) { c.Radius = -1 }},
		{"budget", "label_budget", func(c *Config) { c.LabelBudget = -1 }},
		{"b >= M", "b", func(c *Config) { c.Selector, c.B = Exponential, 1 }},
		{"shrinking exponential", "shrinking_slab", func(c *Config) { c.Selector, c.ShrinkingSlab = Exponential, true }},
		{"policy", "policy", func(c *Config) { c.Policy = 7 }},
		{"norm mode", "norm_mode", func(c *Config) { c.NormMode = 7 }},
		{"selector", "selector", func(c *Config) { c.Selector = 7 }},
		{"calibration", "calibration", func(c *Config) { c.Selector, c.Calibration = Exponential, 7 }},
		{"update", "update", func(c *Config) { c.Update = 7 }},
		{"clip", "clip", func(c *Config) { c.Update, c.Delta, c.Clip = Gaussian, 1e-5, 0 }},
		{"delta", "delta", func(c *Config) { c.Update, c.Delta, c.Clip = Gaussian, 1, 1 }},
		{"tree budget", "label_budget", func(c *Config) { c.Update, c.Delta, c.Clip = Tree, 1e-5, 1 }},
		{"final share", "final_share", func(c *Config) { c.FinalShare = 1 }},
	} {
		cfg := DefaultConfig(3)
		tc.f(&cfg)
		_, err := New(cfg, rng.Seeded(1), nil)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field || fe.Error() != err.Error() {
			t.Errorf("%s: %v, want a FieldError for %q", tc.name, err, tc.field)
		} else if !configTags[fe.Field] {
			t.Errorf("%s: %q is no JSON name of Config", tc.name, fe.Field)
		}
	}
	cfg := DefaultConfig(3)
	cfg.NonPrivate = true
	led, _ := ledger.New(account.Budget{Epsilon: 5})
	if _, err := New(cfg, rng.Seeded(1), led); err == nil {
		t.Error("non-private learner accepted a ledger")
	}
}

// configTags holds Config's JSON names.
var configTags = func() map[string]bool {
	m := map[string]bool{}
	for f := range reflect.TypeFor[Config]().Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		m[name] = true
	}
	return m
}()

// TestEnumFieldError: an unknown enum name in a JSON Config is a
// FieldError with the names allowed, and the parse error's text.
func TestEnumFieldError(t *testing.T) {
	for field, want := range map[string][]string{
		"selector": selectorNames, "norm_mode": normModeNames, "policy": policyNames,
		"update": updateNames, "calibration": calibrationNames,
	} {
		var cfg Config
		err := json.Unmarshal([]byte(`{"`+field+`":"nope"}`), &cfg)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != field || !slices.Equal(fe.Want, want) || !strings.Contains(err.Error(), `"nope" (want one of`) {
			t.Errorf("%s: %v", field, err)
		}
	}
}

// TestNoUpdateOnEmptyBatch: an FLSW window without labels publishes the
// same w, records no release and spends no ε_g (eq. 14–15).
func TestNoUpdateOnEmptyBatch(t *testing.T) {
	cfg := DefaultConfig(2)
	cfg.Policy, cfg.Window = FLSW, 4
	l := mustNew(t, cfg, 2)
	setW(l, []float64{0.5, -0.5})
	for i := range 12 {
		dec, err := l.Observe([]float64{0.1, 0.1 * float64(i%3)})
		if err != nil {
			t.Fatal(err)
		}
		if dec.Request {
			if err := l.Decline(dec.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if w := l.Weights(); !reflect.DeepEqual(w, []float64{0.5, -0.5}) {
		t.Errorf("w changed to %v without labels", w)
	}
	if s := l.Stats(); s.Updates != 0 || len(l.Releases()) != 0 {
		t.Errorf("updates %d, releases %d without labels", s.Updates, len(l.Releases()))
	}
	if eps, _ := l.Ledger().Spent(GroupBatched); math.Abs(eps-1) > 1e-12 {
		t.Errorf("batched group spent %v, want ε_s = 1 only", eps)
	}
}

// TestReleaseTiming checks when FLSW (Algorithm 3) and FLMB (Algorithm 4)
// publish, with labels arriving synchronously and asynchronously.
func TestReleaseTiming(t *testing.T) {
	X, Y := synthStream(200, 4, 0, 5)
	t.Run("FLSW", func(t *testing.T) {
		cfg := DefaultConfig(4)
		cfg.Policy, cfg.Window = FLSW, 7
		l := mustNew(t, cfg, 3)
		decs := runOracle(t, l, X, Y)
		rels := l.Releases()
		if len(rels) == 0 {
			t.Fatal("no releases")
		}
		for i, r := range rels {
			if r.Observation%7 != 0 || r.Update != i+1 {
				t.Errorf("release %d at observation %d (update %d), want a multiple of 7", i, r.Observation, r.Update)
			}
			// The window that ended at r.Observation had at least one label.
			any := false
			for _, d := range decs[r.Observation-7 : r.Observation] {
				any = any || d.Request
			}
			if !any {
				t.Errorf("release at %d after a window without requests", r.Observation)
			}
		}
		if last := rels[len(rels)-1]; !reflect.DeepEqual(last.W, l.Weights()) {
			t.Error("last release is not the current model")
		}
	})
	t.Run("FLMB", func(t *testing.T) {
		cfg := DefaultConfig(4)
		cfg.Window = 3
		l := mustNew(t, cfg, 3)
		decs := runOracle(t, l, X, Y)
		labelled := 0
		next := 0
		rels := l.Releases()
		for _, d := range decs {
			if d.Request {
				labelled++
				if labelled%3 == 0 {
					if next >= len(rels) || rels[next].Observation != int(d.ID) {
						t.Fatalf("label %d (event %d) should release update %d", labelled, d.ID, next+1)
					}
					next++
				}
			}
		}
		if next != len(rels) || l.Stats().Updates != labelled/3 {
			t.Errorf("%d releases, want %d", len(rels), labelled/3)
		}
	})
	t.Run("async labels", func(t *testing.T) {
		cfg := DefaultConfig(4)
		cfg.Window = 2
		l := mustNew(t, cfg, 4)
		var ids []uint64
		for i := 0; len(ids) < 3; i++ {
			dec, err := l.Observe(X[i])
			if err != nil {
				t.Fatal(err)
			}
			if dec.Request {
				ids = append(ids, dec.ID)
			}
		}
		if !reflect.DeepEqual(l.Pending(), ids) {
			t.Fatalf("pending %v, want %v", l.Pending(), ids)
		}
		// Labels arrive out of order; the second completes the batch.
		if err := l.Label(ids[2], Y[ids[2]-1]); err != nil {
			t.Fatal(err)
		}
		if l.Stats().Updates != 0 {
			t.Fatal("updated with one label")
		}
		if err := l.Label(ids[0], Y[ids[0]-1]); err != nil {
			t.Fatal(err)
		}
		if s := l.Stats(); s.Updates != 1 || s.Pending != 1 || s.Buffered != 0 {
			t.Errorf("after two labels: %+v", s)
		}
	})
}

// TestLabelBudget: the learner stops requesting at the budget, and spends
// nothing on the events after it.
func TestLabelBudget(t *testing.T) {
	X, Y := synthStream(300, 4, 0, 6)
	cfg := DefaultConfig(4)
	cfg.LabelBudget = 10
	l := mustNew(t, cfg, 1)
	decs := runOracle(t, l, X, Y)
	n := 0
	for _, d := range decs {
		if d.Request {
			n++
		}
	}
	s := l.Stats()
	if n != 10 || s.Requested != 10 || !s.BudgetReached || s.Updates != 2 || s.Observed != 300 {
		t.Errorf("budget 10: %d requests, stats %+v", n, s)
	}
}

// TestResume: saving and restoring mid-stream, with a request pending and
// labels buffered, gives exactly the uninterrupted run's output.
func TestResume(t *testing.T) {
	X, Y := synthStream(600, 5, 0.05, 8)
	for _, tc := range []struct {
		name string
		f    func(*Config)
	}{
		{"bernoulli-flmb", nil},
		{"exponential-flsw", func(c *Config) { c.Selector, c.Policy, c.Window = Exponential, FLSW, 4 }},
		{"shrinking", func(c *Config) { c.ShrinkingSlab = true }},
		{"tong-koller", func(c *Config) { c.NonPrivate = true }},
		{"gaussian", func(c *Config) { *c = DetectorConfig(5); c.Window = 7 }},
		{"gaussian-flsw", func(c *Config) { *c = DetectorConfig(5); c.Policy, c.Window = FLSW, 9 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig(5)
			if tc.f != nil {
				tc.f(&cfg)
			}
			whole := mustNew(t, cfg, 11)
			wantDecs := runOracle(t, whole, X, Y)

			first := mustNew(t, cfg, 11)
			const cut = 301
			decs := runOracle(t, first, X[:cut], Y[:cut])
			// Leave the last request pending across the save.
			dec, err := first.Observe(X[cut])
			if err != nil {
				t.Fatal(err)
			}
			decs = append(decs, dec)
			var buf bytes.Buffer
			if err := first.SaveState(&buf); err != nil {
				t.Fatal(err)
			}
			saved := buf.Bytes()
			if _, err := Restore(bytes.NewReader(saved), rng.Seeded(999), nil); !errors.Is(err, ErrSeedMismatch) {
				t.Fatalf("restore with another seed: %v, want ErrSeedMismatch", err)
			}
			resumed, err := Restore(bytes.NewReader(saved), rng.Seeded(11), nil)
			if err != nil {
				t.Fatal(err)
			}
			if s, ok := resumed.Seed(); !ok || s != 11 {
				t.Errorf("resumed seed %d, %v; want 11", s, ok)
			}
			if dec.Request {
				if err := resumed.Label(dec.ID, Y[cut]); err != nil {
					t.Fatal(err)
				}
			}
			for i := cut + 1; i < len(X); i++ {
				d, err := resumed.Observe(X[i])
				if err != nil {
					t.Fatal(err)
				}
				if d.Request {
					if err := resumed.Label(d.ID, Y[i]); err != nil {
						t.Fatal(err)
					}
				}
				decs = append(decs, d)
			}
			if err := resumed.Flush(); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(decs, wantDecs) {
				t.Error("resumed decisions differ from the uninterrupted run")
			}
			if !reflect.DeepEqual(resumed.Releases(), whole.Releases()) {
				t.Error("resumed releases differ from the uninterrupted run")
			}
			if resumed.Stats() != whole.Stats() && !cfg.NonPrivate {
				t.Errorf("stats %+v, want %+v", resumed.Stats(), whole.Stats())
			}
			if !cfg.NonPrivate {
				a, b := resumed.Ledger().Summary(), whole.Ledger().Summary()
				if !reflect.DeepEqual(a, b) || resumed.Ledger().Len() != whole.Ledger().Len() {
					t.Errorf("ledger %+v, want %+v", a, b)
				}
			}
		})
	}
}

// TestResumeFreshLedger: restoring against an empty ledger charges again.
func TestResumeFreshLedger(t *testing.T) {
	X, Y := synthStream(50, 3, 0, 1)
	l := mustNew(t, DefaultConfig(3), 1)
	runOracle(t, l, X, Y)
	var buf bytes.Buffer
	if err := l.SaveState(&buf); err != nil {
		t.Fatal(err)
	}
	led, _ := ledger.New(account.Budget{Epsilon: 10})
	if _, err := Restore(&buf, rng.Seeded(1), led); err != nil {
		t.Fatal(err)
	}
	if eps, _ := led.Spent(GroupBatched); math.Abs(eps-2) > 1e-12 {
		t.Errorf("fresh ledger shows %v for batched records, want 2", eps)
	}
}

// TestBudgetExhausted: a ledger too small for an update stops it with a
// clear error, the labelled points stay buffered.
func TestBudgetExhausted(t *testing.T) {
	led, _ := ledger.New(account.Budget{Epsilon: 1.5})
	cfg := DefaultConfig(2)
	cfg.Window = 1
	l, err := New(cfg, rng.Seeded(1), led)
	if err != nil {
		t.Fatal(err)
	}
	for {
		dec, err := l.Observe([]float64{0.1, 0})
		if err != nil {
			t.Fatal(err)
		}
		if !dec.Request {
			continue
		}
		err = l.Label(dec.ID, 1)
		if !errors.Is(err, account.ErrBudgetExceeded) {
			t.Fatalf("update over budget: %v", err)
		}
		break
	}
	if s := l.Stats(); s.Updates != 0 || s.Buffered != 1 || s.Labelled != 1 {
		t.Errorf("after a refused update: %+v", s)
	}
}

// TestLearns: on a separable stream, the non-private baseline and the
// private learner with a generous ε both beat chance clearly.
func TestLearns(t *testing.T) {
	all, labels := synthStream(5000, 5, 0, 21)
	X, Y, Xt, Yt := all[:4000], labels[:4000], all[4000:], labels[4000:]
	for _, tc := range []struct {
		name    string
		f       func(*Config)
		maxErr  float64
		private bool
	}{
		{"tong-koller", func(c *Config) { c.NonPrivate = true }, 0.1, false},
		{"private eps=20", func(c *Config) { c.EpsGrad, c.EpsSelect = 20, 5 }, 0.25, true},
	} {
		cfg := DefaultConfig(5)
		tc.f(&cfg)
		l := mustNew(t, cfg, 4)
		runOracle(t, l, X, Y)
		if e := model.ErrorRate(l.Weights(), Xt, Yt); e > tc.maxErr {
			t.Errorf("%s: test error %v > %v (stats %+v)", tc.name, e, tc.maxErr, l.Stats())
		}
	}
}

// TestStep: the oracle callback gives the same run as Observe + Label, and
// an oracle without an answer leaves the request pending.
func TestStep(t *testing.T) {
	X, Y := synthStream(100, 3, 0, 2)
	a, b := mustNew(t, DefaultConfig(3), 5), mustNew(t, DefaultConfig(3), 5)
	runOracle(t, a, X, Y)
	for i, x := range X {
		if _, err := b.Step(x, func(id uint64, _ []float64) (float64, bool) { return Y[id-1], true }); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	if !reflect.DeepEqual(a.Releases(), b.Releases()) || a.Stats() != b.Stats() {
		t.Error("Step differs from Observe + Label")
	}
	c := mustNew(t, DefaultConfig(3), 5)
	for _, x := range X {
		dec, err := c.Step(x, func(uint64, []float64) (float64, bool) { return 0, false })
		if err != nil {
			t.Fatal(err)
		}
		if dec.Request {
			if !reflect.DeepEqual(c.Pending(), []uint64{dec.ID}) {
				t.Errorf("unanswered request %d: pending %v", dec.ID, c.Pending())
			}
			return
		}
	}
	t.Fatal("no label request in 100 events")
}

// TestRejectAgreesWithVecNorm: Reject mode measures ‖x‖ with vec.Norm,
// the norm the loaders project with, so events projected onto the unit
// ball pass even where gonum's dot product rounds their norm above 1.
func TestRejectAgreesWithVecNorm(t *testing.T) {
	const dim = 116
	cfg := DefaultConfig(dim)
	cfg.NormMode = Reject
	l := mustNew(t, cfg, 1)
	r := rng.Seeded(4)
	disagree := 0
	for range 2000 {
		x := make([]float64, dim)
		for i := range x {
			x[i] = r.NormFloat64()
		}
		n := vec.Norm(x)
		for i := range x {
			x[i] /= n
		}
		for vec.Norm(x) > 1 {
			for i := range x {
				x[i] *= 1 - 0x1p-52
			}
		}
		if math.Sqrt(floats.Dot(x, x)) > 1 {
			disagree++
		}
		if _, err := l.Observe(x); err != nil {
			t.Fatalf("projected event rejected: %v", err)
		}
	}
	if disagree == 0 {
		t.Log("no event where the two norms disagree: the test exercised only the fast path")
	}
	over := make([]float64, dim)
	over[0] = 1 + 0x1p-52
	if _, err := l.Observe(over); !errors.Is(err, ErrInvalidEvent) {
		t.Errorf("norm 1+2^-52 in reject mode: %v, want ErrInvalidEvent", err)
	}
}
