package account

import (
	"encoding/json"
	"errors"
	"math"
	"slices"
	"sync"
	"testing"
)

func TestLedgerSpend(t *testing.T) {
	type spend struct {
		group   string
		cost    Cost
		n       int
		wantErr error // nil, ErrBudgetExceeded, or errAny
	}
	errAny := errors.New("any error")
	lap := func(e float64) Cost { return Cost{Mechanism: "laplace", Epsilon: e} }
	gauss := func(e, d float64) Cost { return Cost{Mechanism: "gaussian", Epsilon: e, Delta: d} }
	for _, tc := range []struct {
		name      string
		budget    Budget
		spends    []spend
		wantEps   map[string]float64
		wantDelta map[string]float64
	}{
		{
			name:    "sequential within a group",
			budget:  Budget{Epsilon: 1, Delta: 1e-5},
			spends:  []spend{{"a", lap(0.25), 1, nil}, {"a", lap(0.5), 1, nil}, {"b", lap(0.75), 1, nil}},
			wantEps: map[string]float64{"a": 0.75, "b": 0.75},
		},
		{
			name:    "ten tenths fit a budget of one",
			budget:  Budget{Epsilon: 1},
			spends:  []spend{{"a", lap(0.1), 10, nil}, {"a", lap(0.1), 1, ErrBudgetExceeded}},
			wantEps: map[string]float64{"a": 1},
		},
		{
			name:    "exhaustion records nothing",
			budget:  Budget{Epsilon: 1, Delta: 1e-6},
			spends:  []spend{{"a", lap(0.9), 1, nil}, {"a", lap(0.2), 1, ErrBudgetExceeded}, {"a", lap(0.1), 1, nil}},
			wantEps: map[string]float64{"a": 1},
		},
		{
			name:    "delta exhaustion",
			budget:  Budget{Epsilon: 10, Delta: 1e-6},
			spends:  []spend{{"a", gauss(1, 6e-7), 1, nil}, {"a", gauss(1, 6e-7), 1, ErrBudgetExceeded}},
			wantEps: map[string]float64{"a": 1}, wantDelta: map[string]float64{"a": 6e-7},
		},
		{
			name:    "SpendN is all or nothing",
			budget:  Budget{Epsilon: 1},
			spends:  []spend{{"a", lap(0.3), 4, ErrBudgetExceeded}, {"a", lap(0.3), 3, nil}},
			wantEps: map[string]float64{"a": 0.3 * 3},
		},
		{
			name:   "invalid spends",
			budget: Budget{Epsilon: 1},
			spends: []spend{
				{"a", lap(0), 1, errAny}, {"a", lap(math.NaN()), 1, errAny}, {"a", lap(math.Inf(1)), 1, errAny},
				{"a", gauss(0.1, 1), 1, errAny}, {"a", gauss(0.1, -1e-9), 1, errAny}, {"a", lap(0.1), 0, errAny}, {"a", lap(0.1), -3, errAny},
			},
			wantEps: map[string]float64{"a": 0},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := NewLedger(tc.budget)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range tc.spends {
				err := l.SpendN(s.group, s.cost, s.n)
				switch {
				case s.wantErr == nil && err != nil:
					t.Errorf("spend %d: %v", i, err)
				case s.wantErr == ErrBudgetExceeded && !errors.Is(err, ErrBudgetExceeded):
					t.Errorf("spend %d: got %v, want ErrBudgetExceeded", i, err)
				case s.wantErr == errAny && (err == nil || errors.Is(err, ErrBudgetExceeded)):
					t.Errorf("spend %d: got %v, want a validation error", i, err)
				}
			}
			for g, want := range tc.wantEps {
				eps, delta := l.Spent(g)
				if relErr(eps, want) > 1e-12 && !(want == 0 && eps == 0) {
					t.Errorf("group %s: ε = %v, want %v", g, eps, want)
				}
				if wd := tc.wantDelta[g]; relErr(delta, wd) > 1e-12 && !(wd == 0 && delta == 0) {
					t.Errorf("group %s: δ = %v, want %v", g, delta, wd)
				}
			}
		})
	}
}

func TestLedgerGroupsAndMax(t *testing.T) {
	l, _ := NewLedger(Budget{Epsilon: 5})
	if g, e := l.MaxEpsilon(); g != "" || e != 0 {
		t.Errorf("empty ledger MaxEpsilon = %q, %v", g, e)
	}
	_ = l.Spend("selected+batched", Cost{Epsilon: 0.5})
	_ = l.Spend("observed only", Cost{Epsilon: 0.1})
	_ = l.SpendN("selected+batched", Cost{Epsilon: 0.5}, 3)
	if got := l.Groups(); !slices.Equal(got, []string{"observed only", "selected+batched"}) {
		t.Errorf("Groups = %q", got)
	}
	if g, e := l.MaxEpsilon(); g != "selected+batched" || e != 2 {
		t.Errorf("MaxEpsilon = %q, %v", g, e)
	}
	if e, d := l.Spent("never"); e != 0 || d != 0 {
		t.Errorf("unknown group spent %v, %v", e, d)
	}
}

func TestLedgerRDP(t *testing.T) {
	const delta = 1e-5
	l, err := NewLedger(Budget{Epsilon: 3, Delta: delta})
	if err != nil {
		t.Fatal(err)
	}
	orders := DefaultOrders()
	phase := Phase{SampleRate: 256.0 / 60000, NoiseMultiplier: 1.1, Steps: 7031}
	curve, _ := ScheduleRDP([]Phase{phase}, orders)
	for i := 0; i < 2; i++ {
		if err := l.SpendRDP("batched", orders, curve); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.SpendPhases("same via phases", []Phase{phase, phase}); err != nil {
		t.Fatal(err)
	}
	eps, d := l.Spent("batched")
	if e2, _ := l.Spent("same via phases"); relErr(e2, eps) > 1e-14 {
		t.Errorf("SpendPhases ε=%v, SpendRDP ε=%v", e2, eps)
	}
	if relErr(eps, 2.5965558690) > 1e-9 || d != delta {
		t.Errorf("two half-phases: ε=%v δ=%v, want the Opacus reference 2.5965558690", eps, d)
	}
	// A third half-phase would exceed ε = 3.
	if err := l.SpendPhases("batched", []Phase{phase}); !errors.Is(err, ErrBudgetExceeded) {
		t.Errorf("third phase: %v, want ErrBudgetExceeded", err)
	}
	if e2, _ := l.Spent("batched"); e2 != eps {
		t.Errorf("failed spend changed ε from %v to %v", eps, e2)
	}
	// An (ε, δ) spend in the same group composes with the curve converted
	// at the δ it leaves.
	if err := l.Spend("batched", Cost{Epsilon: 0.1, Delta: 5e-6}); err != nil {
		t.Fatal(err)
	}
	full, _ := ScheduleRDP([]Phase{{SampleRate: phase.SampleRate, NoiseMultiplier: 1.1, Steps: 14062}}, orders)
	conv, _ := RDPToEpsilon(orders, full, delta-5e-6, Balle2020)
	if e3, d3 := l.Spent("batched"); relErr(e3, 0.1+conv.Epsilon) > 1e-12 || d3 != delta {
		t.Errorf("mixed group: ε=%v δ=%v, want %v", e3, d3, 0.1+conv.Epsilon)
	}
	// Orders missing from a later curve are dropped, never guessed.
	l, _ = NewLedger(Budget{Epsilon: 10, Delta: delta})
	if err := l.SpendRDP("g", []float64{2, 3, 4}, []float64{0.1, 0.2, 0.3}); err != nil {
		t.Fatal(err)
	}
	if err := l.SpendRDP("g", []float64{3, 4, 5}, []float64{0.2, math.Inf(1), 0.4}); err != nil {
		t.Fatal(err)
	}
	want, _ := RDPToEpsilon([]float64{3}, []float64{0.4}, delta, Balle2020)
	if e, _ := l.Spent("g"); e != want.Epsilon {
		t.Errorf("intersected curve: ε=%v, want %v", e, want.Epsilon)
	}
	if err := l.SpendRDP("g", []float64{7}, []float64{0.1}); err == nil || errors.Is(err, ErrBudgetExceeded) {
		t.Errorf("disjoint orders: %v, want a plain error", err)
	}
	for _, bad := range [][2][]float64{{{2, 3}, {0.1}}, {{0.5}, {0.1}}, {{2}, {-1}}, {{2}, {math.NaN()}}} {
		if err := l.SpendRDP("h", bad[0], bad[1]); err == nil {
			t.Errorf("SpendRDP(%v, %v) should fail", bad[0], bad[1])
		}
	}
	pure, _ := NewLedger(Budget{Epsilon: 1})
	if err := pure.SpendRDP("a", []float64{2}, []float64{0.01}); err == nil {
		t.Error("RDP spend on a δ = 0 budget should fail")
	}
}

func TestLedgerJSONRoundTrip(t *testing.T) {
	l, _ := NewLedger(Budget{Epsilon: 4, Delta: 1e-5}, WithConversion(Classic))
	_ = l.SpendN("a", Cost{Mechanism: "laplace", Epsilon: 0.1}, 7)
	_ = l.Spend("b", Cost{Mechanism: "gaussian", Epsilon: 0.3, Delta: 1e-7})
	curve, _ := SubsampledGaussianRDP(0.01, 1.2, DefaultOrders())
	_ = l.SpendRDP("b", DefaultOrders(), curve)
	b, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	var back Ledger
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{"a", "b"} {
		e1, d1 := l.Spent(g)
		e2, d2 := back.Spent(g)
		if e1 != e2 || d1 != d2 {
			t.Errorf("group %s: (%v, %v) became (%v, %v)", g, e1, d1, e2, d2)
		}
	}
	b2, _ := json.Marshal(&back)
	if string(b) != string(b2) {
		t.Errorf("re-encoding differs:\n%s\n%s", b, b2)
	}
	// The decoded ledger keeps enforcing the budget.
	if err := back.SpendN("a", Cost{Epsilon: 1}, 4); !errors.Is(err, ErrBudgetExceeded) {
		t.Errorf("decoded ledger let the budget go: %v", err)
	}
	for _, bad := range []string{
		`{"budget":{"epsilon":-1,"delta":0},"conversion":"balle2020","groups":{}}`,
		`{"budget":{"epsilon":1,"delta":0},"conversion":"nope","groups":{}}`,
		`{"budget":{"epsilon":1,"delta":0},"conversion":"classic","groups":{"a":{"epsilon":-1}}}`,
		`{"budget":{"epsilon":1,"delta":0},"conversion":"classic","groups":{"a":{"epsilon":0,"orders":[2],"rdp":[]}}}`,
		`{"budget":{"epsilon":1,"delta":0},"conversion":"classic","groups":{"a":null}}`,
		`not json`,
	} {
		var x Ledger
		if err := json.Unmarshal([]byte(bad), &x); err == nil {
			t.Errorf("decoding %s should fail", bad)
		}
	}
}

func TestLedgerConcurrent(t *testing.T) {
	l, _ := NewLedger(Budget{Epsilon: 100})
	var wg sync.WaitGroup
	var mu sync.Mutex
	exceeded := 0
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				if err := l.Spend("shared", Cost{Epsilon: 0.0625}); errors.Is(err, ErrBudgetExceeded) {
					mu.Lock()
					exceeded++
					mu.Unlock()
				}
				l.MaxEpsilon()
			}
		}()
	}
	wg.Wait()
	// 1600 spends of 1/16 against a budget of 100: exactly 1600 − 1600 fit.
	if eps, _ := l.Spent("shared"); eps != 100 || exceeded != 0 {
		t.Errorf("ε = %v after %d refusals", eps, exceeded)
	}
	if err := l.Spend("shared", Cost{Epsilon: 0.0625}); !errors.Is(err, ErrBudgetExceeded) {
		t.Errorf("full group accepted a spend: %v", err)
	}
}

func TestNewLedgerValidates(t *testing.T) {
	for _, b := range []Budget{{0, 0}, {-1, 0}, {math.Inf(1), 0}, {1, 1}, {1, -0.1}, {math.NaN(), 0}} {
		if _, err := NewLedger(b); err == nil {
			t.Errorf("NewLedger(%+v) should fail", b)
		}
	}
	if _, err := NewLedger(Budget{Epsilon: 1}, WithConversion(Conversion(7))); err == nil {
		t.Error("unknown conversion should fail")
	}
}
