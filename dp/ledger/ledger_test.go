package ledger_test

import (
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
)

// mech is a mechanism with a fixed loss.
type mech struct{ loss account.Loss }

func (m mech) Loss() account.Loss { return m.loss }

func lap(eps float64) account.Loss      { return account.Pure("laplace", eps) }
func gauss(eps, d float64) account.Loss { return account.Approx("gaussian", eps, d) }
func relErr(got, want float64) float64  { return math.Abs(got-want) / math.Abs(want) }
func near(got, want, tol float64) bool  { return got == want || relErr(got, want) <= tol }
func one(group string) []string         { return []string{group} }

func mustNew(t testing.TB, b account.Budget, opts ...ledger.Option) *ledger.Ledger {
	t.Helper()
	l, err := ledger.New(b, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func openFile(t testing.TB, path string) *ledger.FileStore {
	t.Helper()
	st, err := ledger.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// errAny marks a step that must fail with an error other than
// account.ErrBudgetExceeded.
var errAny = errors.New("any error but budget exceeded")

// checkErr reports whether err is what want asks for: nil, errAny, or an
// error wrapping want.
func checkErr(err, want error) bool {
	switch want {
	case nil:
		return err == nil
	case errAny:
		return err != nil && !errors.Is(err, account.ErrBudgetExceeded)
	}
	return errors.Is(err, want)
}

// checkLog checks that l's log holds n entries numbered 1…n, read back
// from the store.
func checkLog(t *testing.T, l *ledger.Ledger, n int) []ledger.Entry {
	t.Helper()
	entries, err := l.Entries()
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != n || l.Len() != n {
		t.Fatalf("log has %d entries (Len %d), want %d", len(entries), l.Len(), n)
	}
	for i, e := range entries {
		if e.Seq != uint64(i+1) {
			t.Fatalf("entry %d has seq %d", i, e.Seq)
		}
	}
	return entries
}

func TestCharge(t *testing.T) {
	type step struct {
		group string
		loss  account.Loss
		times int // the charge is loss.Times(times); 0 means 1
		want  error
	}
	tenths := slices.Repeat([]step{{group: "a", loss: lap(0.1)}}, 10)
	for _, tc := range []struct {
		name      string
		budget    account.Budget
		steps     []step
		wantEps   map[string]float64
		wantDelta map[string]float64
	}{
		{
			name:    "sequential within a group",
			budget:  account.Budget{Epsilon: 1, Delta: 1e-5},
			steps:   []step{{group: "a", loss: lap(0.25)}, {group: "a", loss: lap(0.5)}, {group: "b", loss: lap(0.75)}},
			wantEps: map[string]float64{"a": 0.75, "b": 0.75},
		},
		{
			name:    "ten tenths fit a budget of one",
			budget:  account.Budget{Epsilon: 1},
			steps:   append(tenths, step{group: "a", loss: lap(0.1), want: account.ErrBudgetExceeded}),
			wantEps: map[string]float64{"a": 1},
		},
		{
			name:   "exhaustion records nothing",
			budget: account.Budget{Epsilon: 1, Delta: 1e-6},
			steps: []step{
				{group: "a", loss: lap(0.9)},
				{group: "a", loss: lap(0.2), want: account.ErrBudgetExceeded},
				{group: "a", loss: lap(0.1)},
			},
			wantEps: map[string]float64{"a": 1},
		},
		{
			name:      "delta exhaustion",
			budget:    account.Budget{Epsilon: 10, Delta: 1e-6},
			steps:     []step{{group: "a", loss: gauss(1, 6e-7)}, {group: "a", loss: gauss(1, 6e-7), want: account.ErrBudgetExceeded}},
			wantEps:   map[string]float64{"a": 1},
			wantDelta: map[string]float64{"a": 6e-7},
		},
		{
			name:    "Times is all or nothing",
			budget:  account.Budget{Epsilon: 1},
			steps:   []step{{group: "a", loss: lap(0.3), times: 4, want: account.ErrBudgetExceeded}, {group: "a", loss: lap(0.3), times: 3}},
			wantEps: map[string]float64{"a": 0.3 * 3},
		},
		{
			name:   "invalid charges",
			budget: account.Budget{Epsilon: 1},
			steps: []step{
				{group: "a", loss: lap(0), want: errAny},
				{group: "a", loss: lap(math.NaN()), want: errAny},
				{group: "a", loss: lap(math.Inf(1)), want: errAny},
				{group: "a", loss: lap(-0.1), want: errAny},
				{group: "a", loss: gauss(0.1, 1), want: errAny},
				{group: "a", loss: gauss(0.1, -1e-9), want: errAny},
				{group: "a", loss: lap(0.1), times: -3, want: errAny},
				{group: "a", loss: account.Loss{Mechanism: "bad curve", Orders: []float64{2, 3}, RDP: []float64{0.1}}, want: errAny},
				{group: "", loss: lap(0.1), want: errAny},
				{group: "a\nb", loss: lap(0.1), want: errAny},
				{group: strings.Repeat("x", 257), loss: lap(0.1), want: errAny},
			},
			wantEps: map[string]float64{"a": 0},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := mustNew(t, tc.budget)
			n := 0
			for i, s := range tc.steps {
				loss, err := s.loss, error(nil)
				if s.times != 0 {
					loss, err = s.loss.Times(s.times)
				}
				if err == nil {
					_, err = l.Record(ledger.Charge{Groups: one(s.group), Loss: loss})
				}
				if !checkErr(err, s.want) {
					t.Errorf("step %d: got %v, want %v", i, err, s.want)
				}
				if err == nil {
					n++
				}
				if l.Len() != n {
					t.Fatalf("step %d: %d entries, want %d", i, l.Len(), n)
				}
			}
			checkLog(t, l, n)
			for g, want := range tc.wantEps {
				eps, delta := l.Spent(g)
				if !near(eps, want, 1e-12) {
					t.Errorf("group %s: ε = %v, want %v", g, eps, want)
				}
				if wd := tc.wantDelta[g]; !near(delta, wd, 1e-12) {
					t.Errorf("group %s: δ = %v, want %v", g, delta, wd)
				}
				if r := l.Remaining(g); !near(r, max(0, tc.budget.Epsilon-eps), 1e-12) {
					t.Errorf("group %s: remaining %v after ε = %v", g, r, eps)
				}
			}
		})
	}
}

func TestChargeGroupNames(t *testing.T) {
	for _, tc := range []struct {
		name   string
		groups []string
		ok     bool
	}{
		{"one", []string{"a"}, true},
		{"several", []string{"a", "b", "c"}, true},
		{"longest name", []string{strings.Repeat("x", 256)}, true},
		{"none", nil, false},
		{"empty name", []string{"a", ""}, false},
		{"named twice", []string{"a", "b", "a"}, false},
		{"carriage return", []string{"a\rb"}, false},
		{"NUL", []string{"a\x00"}, false},
		{"too long", []string{strings.Repeat("x", 257)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := mustNew(t, account.Budget{Epsilon: 1})
			_, err := l.Charge(mech{lap(0.1)}, tc.groups...)
			if (err == nil) != tc.ok {
				t.Fatalf("Charge(%q) = %v, want ok=%v", tc.groups, err, tc.ok)
			}
			if !tc.ok && (l.Len() != 0 || len(l.Groups()) != 0) {
				t.Errorf("refused charge left %d entries, groups %q", l.Len(), l.Groups())
			}
		})
	}
}

func TestGroupsAndMaxEpsilon(t *testing.T) {
	l := mustNew(t, account.Budget{Epsilon: 5})
	if g, e := l.MaxEpsilon(); g != "" || e != 0 {
		t.Errorf("empty ledger MaxEpsilon = %q, %v", g, e)
	}
	three, _ := lap(0.5).Times(3)
	for _, c := range []ledger.Charge{
		{Groups: one("selected+batched"), Loss: lap(0.5)},
		{Groups: one("observed only"), Loss: lap(0.1)},
		{Groups: one("selected+batched"), Loss: three},
		{Groups: []string{"tie b", "tie a"}, Loss: lap(2)},
	} {
		if _, err := l.Record(c); err != nil {
			t.Fatal(err)
		}
	}
	if got := l.Groups(); !slices.Equal(got, []string{"observed only", "selected+batched", "tie a", "tie b"}) {
		t.Errorf("Groups = %q", got)
	}
	if g, e := l.MaxEpsilon(); g != "selected+batched" || e != 2 {
		t.Errorf("MaxEpsilon = %q, %v, want the first of the tied groups", g, e)
	}
	if e, d := l.Spent("never"); e != 0 || d != 0 || l.Remaining("never") != 5 || !l.Loss("never").IsZero() {
		t.Errorf("unknown group spent %v, %v", e, d)
	}
	sum := l.Summary()
	if len(sum) != 4 || sum[1] != (ledger.GroupSummary{Group: "selected+batched", Epsilon: 2, Charges: 2, Budget: 5, Remaining: 3}) {
		t.Errorf("Summary = %+v", sum)
	}
	// Loss returns a copy: changing it changes nothing in the ledger.
	loss := l.Loss("tie a")
	loss.Epsilon = 100
	if e, _ := l.Spent("tie a"); e != 2 || l.Loss("tie a").Epsilon != 2 {
		t.Errorf("changing a returned loss changed the ledger: ε = %v", e)
	}
}

func TestNewValidates(t *testing.T) {
	for _, b := range []account.Budget{{}, {Epsilon: -1}, {Epsilon: math.Inf(1)}, {Epsilon: 1, Delta: 1}, {Epsilon: 1, Delta: -0.1}, {Epsilon: math.NaN()}} {
		if _, err := ledger.New(b); err == nil {
			t.Errorf("New(%+v) should fail", b)
		}
	}
	if _, err := ledger.New(account.Budget{Epsilon: 1}, ledger.WithConversion(account.Conversion(7))); err == nil {
		t.Error("an unknown conversion should fail")
	}
}

func TestRDP(t *testing.T) {
	const delta = 1e-5
	phase := account.Phase{SampleRate: 256.0 / 60000, NoiseMultiplier: 1.1, Steps: 7031}
	half, err := account.SubsampledGaussian([]account.Phase{phase})
	if err != nil {
		t.Fatal(err)
	}
	both, err := account.SubsampledGaussian([]account.Phase{phase, phase})
	if err != nil {
		t.Fatal(err)
	}
	l := mustNew(t, account.Budget{Epsilon: 3, Delta: delta})
	for range 2 {
		if _, err := l.Charge(mech{half}, "batched"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.Charge(mech{both}, "same via phases"); err != nil {
		t.Fatal(err)
	}
	eps, d := l.Spent("batched")
	if e2, _ := l.Spent("same via phases"); relErr(e2, eps) > 1e-14 {
		t.Errorf("one charge of two phases ε=%v, two charges of one ε=%v", e2, eps)
	}
	// Independently: the accountant on the whole schedule.
	full := []account.Phase{{SampleRate: phase.SampleRate, NoiseMultiplier: 1.1, Steps: 2 * phase.Steps}}
	res, err := account.Epsilon(full, delta, account.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if relErr(eps, res.Epsilon) > 1e-12 || relErr(eps, 2.5965558690) > 1e-9 || d != delta {
		t.Errorf("two half-phases: ε=%v δ=%v, want the accountant's %v and the Opacus reference 2.5965558690", eps, d, res.Epsilon)
	}
	// A third half-phase would exceed ε = 3 and changes nothing.
	if _, err := l.Charge(mech{half}, "batched"); !errors.Is(err, account.ErrBudgetExceeded) {
		t.Errorf("third phase: %v, want ErrBudgetExceeded", err)
	}
	if e2, _ := l.Spent("batched"); e2 != eps {
		t.Errorf("a refused charge changed ε from %v to %v", eps, e2)
	}
	// An (ε, δ) charge in the same group composes with the curve
	// converted at the δ it leaves.
	if _, err := l.Charge(mech{gauss(0.1, 5e-6)}, "batched"); err != nil {
		t.Fatal(err)
	}
	res, err = account.Epsilon(full, delta-5e-6, account.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if e3, d3 := l.Spent("batched"); relErr(e3, 0.1+res.Epsilon) > 1e-12 || d3 != delta {
		t.Errorf("mixed group: ε=%v δ=%v, want %v", e3, d3, 0.1+res.Epsilon)
	}
	// An approximate part that takes all of δ leaves none for the curve.
	if _, err := l.Charge(mech{gauss(0, 5e-6)}, "batched"); !errors.Is(err, account.ErrBudgetExceeded) {
		t.Errorf("δ left for the curve is 0: %v, want ErrBudgetExceeded", err)
	}

	t.Run("orders missing from a later curve are dropped", func(t *testing.T) {
		l := mustNew(t, account.Budget{Epsilon: 10, Delta: delta})
		c1, _ := account.RDPCurve("c1", []float64{2, 3, 4}, []float64{0.1, 0.2, 0.3})
		c2, _ := account.RDPCurve("c2", []float64{3, 4, 5}, []float64{0.2, math.Inf(1), 0.4})
		for _, c := range []account.Loss{c1, c2} {
			if _, err := l.Charge(mech{c}, "g"); err != nil {
				t.Fatal(err)
			}
		}
		want, _ := account.RDPToEpsilon([]float64{3}, []float64{0.4}, delta, account.Balle2020)
		if e, _ := l.Spent("g"); e != want.Epsilon {
			t.Errorf("intersected curve: ε=%v, want %v", e, want.Epsilon)
		}
		disjoint, _ := account.RDPCurve("c3", []float64{7}, []float64{0.1})
		if _, err := l.Charge(mech{disjoint}, "g"); err == nil || errors.Is(err, account.ErrBudgetExceeded) {
			t.Errorf("disjoint orders: %v, want a plain error", err)
		}
		if l.Len() != 2 {
			t.Errorf("%d entries, want 2", l.Len())
		}
	})
	t.Run("a Rényi loss needs a budget with δ > 0", func(t *testing.T) {
		pure := mustNew(t, account.Budget{Epsilon: 1})
		curve, _ := account.RDPCurve("c", []float64{2}, []float64{0.01})
		for _, loss := range []account.Loss{curve, account.ZCDP("gaussian", 0.01)} {
			if _, err := pure.Charge(mech{loss}, "a"); err == nil || errors.Is(err, account.ErrBudgetExceeded) {
				t.Errorf("%s on a δ = 0 budget: %v, want a plain error", loss.Kind(), err)
			}
		}
		if pure.Len() != 0 {
			t.Errorf("%d entries, want 0", pure.Len())
		}
	})
}

func TestMultiGroupAtomic(t *testing.T) {
	for _, tc := range []struct {
		name  string
		store func(t *testing.T) ledger.Store
	}{
		{"memory", func(*testing.T) ledger.Store { return ledger.NewMemStore() }},
		{"file", func(t *testing.T) ledger.Store { return openFile(t, t.TempDir()+"/l.db") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := ledger.Open(tc.store(t), account.Budget{Epsilon: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if _, err := l.Charge(mech{lap(0.9)}, "a"); err != nil {
				t.Fatal(err)
			}
			// "b" and "c" could pay 0.2, "a" cannot: none pays.
			if _, err := l.Charge(mech{lap(0.2)}, "b", "a", "c"); !errors.Is(err, account.ErrBudgetExceeded) {
				t.Fatalf("got %v, want ErrBudgetExceeded", err)
			}
			if got := l.Groups(); !slices.Equal(got, []string{"a"}) {
				t.Errorf("groups %q after a refused multi-group charge", got)
			}
			if _, err := l.Charge(mech{lap(0.1)}, "b", "a", "c"); err != nil {
				t.Fatal(err)
			}
			for g, want := range map[string]float64{"a": 1, "b": 0.1, "c": 0.1} {
				if e, _ := l.Spent(g); !near(e, want, 1e-12) {
					t.Errorf("group %s: ε = %v, want %v", g, e, want)
				}
			}
			entries := checkLog(t, l, 2)
			if !slices.Equal(entries[1].Groups, []string{"b", "a", "c"}) {
				t.Errorf("entry 2 groups %q", entries[1].Groups)
			}
		})
	}
}

func TestOnce(t *testing.T) {
	for _, tc := range []struct {
		name   string
		reopen bool
	}{{"memory", false}, {"file, reopened between charges", true}} {
		t.Run(tc.name, func(t *testing.T) {
			var path string
			var l *ledger.Ledger
			open := func() {
				if l != nil && !tc.reopen {
					return
				}
				var st ledger.Store = ledger.NewMemStore()
				if tc.reopen {
					if l != nil {
						l.Close()
					}
					st = openFile(t, path)
				}
				var err error
				if l, err = ledger.Open(st, account.Budget{Epsilon: 1}); err != nil {
					t.Fatal(err)
				}
			}
			path = t.TempDir() + "/once.db"
			open()
			defer func() { l.Close() }()
			selection := ledger.Charge{Groups: one("stream"), Loss: lap(0.4), Once: "selection", Note: "first"}
			e1, err := l.Record(selection)
			if err != nil || e1.Seq != 1 || !l.Charged("selection") || l.Charged("other") {
				t.Fatalf("first charge: %+v, %v", e1, err)
			}
			for i := range 2 {
				open()
				again := selection
				again.Note = "again"
				e, err := l.Record(again)
				if err != nil || e.Seq != 1 {
					t.Fatalf("repeat %d: %+v, %v, want entry 1", i, e, err)
				}
				if e, _ := l.Spent("stream"); e != 0.4 || l.Len() != 1 {
					t.Fatalf("repeat %d: ε = %v with %d entries", i, e, l.Len())
				}
			}
			// A once-charge that does not fit is not recorded as done.
			if _, err := l.Record(ledger.Charge{Groups: one("stream"), Loss: lap(0.7), Once: "big"}); !errors.Is(err, account.ErrBudgetExceeded) {
				t.Fatalf("got %v, want ErrBudgetExceeded", err)
			}
			open()
			if l.Charged("big") {
				t.Error("a refused once-charge is marked charged")
			}
			if _, err := l.Record(ledger.Charge{Groups: one("stream"), Loss: lap(0.6), Once: "big"}); err != nil {
				t.Fatal(err)
			}
			entries := checkLog(t, l, 2)
			if entries[0].Once != "selection" || entries[0].Note != "first" || entries[1].Once != "big" {
				t.Errorf("entries %+v", entries)
			}
		})
	}
}

// Check answers as Record would and records nothing.
func TestCheck(t *testing.T) {
	l := mustNew(t, account.Budget{Epsilon: 1})
	if err := l.Check(ledger.Charge{Groups: one("g"), Loss: lap(0.6), Once: "a"}); err != nil {
		t.Fatal(err)
	}
	if l.Len() != 0 || l.Charged("a") {
		t.Fatal("Check recorded")
	}
	if _, err := l.Record(ledger.Charge{Groups: one("g"), Loss: lap(0.6), Once: "a"}); err != nil {
		t.Fatal(err)
	}
	if err := l.Check(ledger.Charge{Groups: one("g"), Loss: lap(0.6)}); !errors.Is(err, account.ErrBudgetExceeded) {
		t.Errorf("got %v, want ErrBudgetExceeded", err)
	}
	if err := l.Check(ledger.Charge{Groups: one("g"), Loss: lap(0.6), Once: "a"}); err != nil {
		t.Errorf("a recorded Once: %v", err)
	}
	if err := l.Check(ledger.Charge{Groups: one("h"), Loss: lap(0.4)}); err != nil {
		t.Errorf("another group: %v", err)
	}
	if err := l.Check(ledger.Charge{Groups: one("h")}); err == nil {
		t.Error("a charge of no loss passed")
	}
	if err := l.Check(ledger.Charge{Loss: lap(0.1)}); err == nil {
		t.Error("a charge of no group passed")
	}
	checkLog(t, l, 1)
}

func TestRelease(t *testing.T) {
	l := mustNew(t, account.Budget{Epsilon: 1})
	drawn := 0
	draw := func() (int, error) { drawn++; return 42, nil }
	for _, tc := range []struct {
		name      string
		loss      account.Loss
		groups    []string
		want      error
		wantDrawn int
	}{
		{"released", lap(0.6), one("g"), nil, 1},
		{"over budget: nothing drawn", lap(0.6), one("g"), account.ErrBudgetExceeded, 1},
		{"invalid: nothing drawn", lap(math.NaN()), one("g"), errAny, 1},
		{"no group: nothing drawn", lap(0.1), nil, errAny, 1},
		{"fits again", lap(0.4), one("g"), nil, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := ledger.Release(l, mech{tc.loss}, tc.groups, draw)
			if !checkErr(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if (err == nil) != (v == 42) || drawn != tc.wantDrawn {
				t.Errorf("value %v, %d draws, want %d", v, drawn, tc.wantDrawn)
			}
		})
	}
	// The draw's own error comes back after the charge is committed: the
	// loss stays charged.
	boom := errors.New("boom")
	l = mustNew(t, account.Budget{Epsilon: 1})
	if _, err := ledger.Release(l, mech{lap(0.5)}, one("g"), func() (int, error) { return 0, boom }); !errors.Is(err, boom) {
		t.Fatalf("got %v, want the draw's error", err)
	}
	if e, _ := l.Spent("g"); e != 0.5 {
		t.Errorf("ε = %v after a failed draw, want 0.5", e)
	}
}

func TestConcurrent(t *testing.T) {
	for _, tc := range []struct {
		name             string
		file             bool
		workers, charges int
		budget           float64
		wantOK           int
	}{
		// 1600 charges of 1/16 (exact in binary) against 100: all fit.
		{"memory, all fit", false, 8, 200, 100, 1600},
		{"memory, half fit", false, 8, 200, 50, 800},
		{"file, 16 fit", true, 4, 10, 1, 16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var st ledger.Store = ledger.NewMemStore()
			if tc.file {
				st = openFile(t, t.TempDir()+"/c.db")
			}
			l, err := ledger.Open(st, account.Budget{Epsilon: tc.budget})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			var wg sync.WaitGroup
			var mu sync.Mutex
			ok, exceeded := 0, 0
			for range tc.workers {
				wg.Go(func() {
					for range tc.charges {
						_, err := ledger.Release(l, mech{lap(0.0625)}, one("shared"), func() (int, error) { return 1, nil })
						mu.Lock()
						switch {
						case err == nil:
							ok++
						case errors.Is(err, account.ErrBudgetExceeded):
							exceeded++
						default:
							t.Error(err)
						}
						mu.Unlock()
						l.MaxEpsilon()
						l.Summary()
						l.Remaining("shared")
					}
				})
			}
			wg.Wait()
			if ok != tc.wantOK || ok+exceeded != tc.workers*tc.charges {
				t.Errorf("%d charges fit and %d were refused, want %d to fit", ok, exceeded, tc.wantOK)
			}
			if eps, _ := l.Spent("shared"); eps != float64(tc.wantOK)*0.0625 {
				t.Errorf("ε = %v after %d charges", eps, ok)
			}
			checkLog(t, l, tc.wantOK)
			if _, err := l.Charge(mech{lap(0.0625)}, "shared"); !errors.Is(err, account.ErrBudgetExceeded) {
				t.Errorf("a full group accepted a charge: %v", err)
			}
		})
	}
}

func TestJSONRoundTrip(t *testing.T) {
	l := mustNew(t, account.Budget{Epsilon: 4, Delta: 1e-5}, ledger.WithConversion(account.Classic))
	seven, _ := lap(0.1).Times(7)
	curve, err := account.SubsampledGaussian([]account.Phase{{SampleRate: 0.01, NoiseMultiplier: 1.2, Steps: 1}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []ledger.Charge{
		{Groups: one("a"), Loss: seven, Note: "seven counts"},
		{Groups: one("b"), Loss: gauss(0.3, 1e-7), Once: "b-once"},
		{Groups: []string{"b", "c"}, Loss: curve},
		{Groups: one("c"), Loss: account.ZCDP("gaussian", 0.01)},
	} {
		if _, err := l.Record(c); err != nil {
			t.Fatal(err)
		}
	}
	b, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	var back ledger.Ledger
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Meta() != l.Meta() || back.Meta().Conversion != account.Classic {
		t.Errorf("settings %+v became %+v", l.Meta(), back.Meta())
	}
	if !slices.Equal(back.Summary(), l.Summary()) || !slices.Equal(back.Groups(), []string{"a", "b", "c"}) {
		t.Errorf("summary %+v became %+v", l.Summary(), back.Summary())
	}
	if !back.Charged("b-once") || back.Len() != 4 {
		t.Errorf("decoded ledger: once %v, %d entries", back.Charged("b-once"), back.Len())
	}
	b2, err := json.Marshal(&back)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != string(b2) {
		t.Errorf("re-encoding differs:\n%s\n%s", b, b2)
	}
	// The decoded ledger keeps enforcing the budget and numbering.
	four, _ := account.Pure("x", 1).Times(4)
	if _, err := back.Charge(mech{four}, "a"); !errors.Is(err, account.ErrBudgetExceeded) {
		t.Errorf("decoded ledger let the budget go: %v", err)
	}
	if e, err := back.Charge(mech{lap(0.1)}, "a"); err != nil || e.Seq != 5 {
		t.Errorf("next entry %+v, %v, want seq 5", e, err)
	}
	if l.Len() != 4 {
		t.Errorf("charging the decoded ledger changed the original: %d entries", l.Len())
	}
	var empty ledger.Ledger
	if err := json.Unmarshal(mustJSON(t, mustNew(t, account.Budget{Epsilon: 1})), &empty); err != nil || empty.Len() != 0 {
		t.Errorf("empty ledger: %v, %d entries", err, empty.Len())
	}
}

func TestJSONTampered(t *testing.T) {
	const meta = `{"version":2,"budget":{"epsilon":1,"delta":1e-6},"conversion":"classic","created":"2025-01-01T00:00:00Z"}`
	entry := func(seq, loss string) string {
		return `{"seq":` + seq + `,"time":"2025-01-01T00:00:00Z","groups":["a"],"loss":` + loss + `}`
	}
	const pure = `{"mechanism":"laplace","epsilon":0.1}`
	good := `{"meta":` + meta + `,"entries":[` + entry("1", pure) + `,` + entry("2", pure) + `]}`
	var l ledger.Ledger
	if err := json.Unmarshal([]byte(good), &l); err != nil || l.Len() != 2 {
		t.Fatalf("the untampered form: %v, %d entries", err, l.Len())
	}
	for _, tc := range []struct{ name, json string }{
		{"gap in seq", `{"meta":` + meta + `,"entries":[` + entry("1", pure) + `,` + entry("3", pure) + `]}`},
		{"repeated seq", `{"meta":` + meta + `,"entries":[` + entry("1", pure) + `,` + entry("1", pure) + `]}`},
		{"log not starting at 1", `{"meta":` + meta + `,"entries":[` + entry("2", pure) + `]}`},
		{"seq 0", `{"meta":` + meta + `,"entries":[` + entry("0", pure) + `]}`},
		{"negative ε", `{"meta":` + meta + `,"entries":[` + entry("1", `{"epsilon":-1}`) + `]}`},
		{"δ of 1", `{"meta":` + meta + `,"entries":[` + entry("1", `{"epsilon":0.1,"delta":1}`) + `]}`},
		{"curve of mismatched length", `{"meta":` + meta + `,"entries":[` + entry("1", `{"orders":[2],"rdp":[]}`) + `]}`},
		{"null entry", `{"meta":` + meta + `,"entries":[null]}`},
		{"no groups", `{"meta":` + meta + `,"entries":[{"seq":1,"groups":[],"loss":` + pure + `}]}`},
		{"over the budget", `{"meta":` + meta + `,"entries":[` + entry("1", `{"epsilon":0.6}`) + `,` + entry("2", `{"epsilon":0.6}`) + `]}`},
		{"invalid budget", `{"meta":{"version":2,"budget":{"epsilon":-1,"delta":0},"conversion":"classic"},"entries":[]}`},
		{"unknown conversion", `{"meta":{"version":2,"budget":{"epsilon":1,"delta":0},"conversion":"nope"},"entries":[]}`},
		{"other version", `{"meta":{"version":1,"budget":{"epsilon":1,"delta":0},"conversion":"classic"},"entries":[]}`},
		{"no settings", `{"entries":[]}`},
		{"not json", `not json`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var x ledger.Ledger
			if err := json.Unmarshal([]byte(tc.json), &x); err == nil {
				t.Errorf("decoding %s should fail", tc.json)
			}
		})
	}
}
