package audit

import (
	"math"
	"testing"

	"github.com/dpal-dev/dpal/dp/rng"
)

func TestClopperPearson(t *testing.T) {
	// Reference: for k = 0 the exact one-sided upper bound is 1 − α^(1/n);
	// for k = n the lower bound is α^(1/n).
	for _, c := range []struct {
		n     int
		alpha float64
	}{{10, 0.05}, {100, 0.025}, {1000, 0.001}} {
		_, hi := ClopperPearson(0, c.n, c.alpha)
		if want := 1 - math.Pow(c.alpha, 1/float64(c.n)); math.Abs(hi-want) > 1e-9 {
			t.Errorf("upper(0/%d) = %v, want %v", c.n, hi, want)
		}
		lo, _ := ClopperPearson(c.n, c.n, c.alpha)
		if want := math.Pow(c.alpha, 1/float64(c.n)); math.Abs(lo-want) > 1e-9 {
			t.Errorf("lower(%d/%d) = %v, want %v", c.n, c.n, lo, want)
		}
	}
	lo, hi := ClopperPearson(50, 100, 0.025)
	if !(lo < 0.5 && hi > 0.5 && lo > 0.38 && hi < 0.62) {
		t.Errorf("CP(50/100) = [%v, %v]", lo, hi)
	}
}

func TestEpsilonLowerBound(t *testing.T) {
	// With enormous counts the bound approaches ln(p0/p1).
	n := 1 << 40
	got := EpsilonLowerBound(n/2, n, n/8, n, 0.95, 0)
	if math.Abs(got-math.Log(4)) > 1e-3 {
		t.Errorf("bound %v, want ≈ ln 4", got)
	}
	if EpsilonLowerBound(10, 100, 50, 100, 0.95, 0) != 0 {
		t.Error("an event favouring the other input must give 0")
	}
	if b0, b1 := EpsilonLowerBound(500, 1000, 100, 1000, 0.95, 0),
		EpsilonLowerBound(500, 1000, 100, 1000, 0.95, 0.1); b1 >= b0 {
		t.Errorf("delta should lower the bound: %v vs %v", b1, b0)
	}
}

func TestConfigValidation(t *testing.T) {
	r := rng.Seeded(1)
	f := func(*rng.Rand) float64 { return 0 }
	for _, c := range []Config{{Trials: 2}, {Trials: 100, Confidence: 1}, {Trials: 100, Delta: 1}, {Trials: 100, Delta: -1}} {
		if _, err := Continuous(r, f, f, c); err == nil {
			t.Errorf("config %+v accepted", c)
		}
	}
	nan := func(*rng.Rand) float64 { return math.NaN() }
	if _, err := Continuous(r, nan, f, Config{Trials: 100}); err == nil {
		t.Error("NaN outputs accepted")
	}
}

// A mechanism with no noise at all is maximally leaky; identical mechanisms
// leak nothing.
func TestAuditExtremes(t *testing.T) {
	r := rng.Seeded(2)
	cfg := Config{Trials: 20000}
	res, err := Continuous(r, func(*rng.Rand) float64 { return 0 }, func(*rng.Rand) float64 { return 1 }, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Epsilon < 5 {
		t.Errorf("noiseless mechanism audited at ε ≥ %v only", res.Epsilon)
	}
	same := func(r *rng.Rand) int { return r.IntN(10) }
	res, err = Discrete(r, same, same, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Epsilon > 0.2 {
		t.Errorf("identical mechanisms audited at ε ≥ %v", res.Epsilon)
	}
	// A coin with bias e/(1+e) vs 1/(1+e) has ε = 1 exactly.
	p := math.E / (1 + math.E)
	coin := func(q float64) func(*rng.Rand) bool { return func(r *rng.Rand) bool { return r.Float64() < q } }
	res, err = Bool(r, coin(p), coin(1-p), Config{Trials: 400000})
	if err != nil {
		t.Fatal(err)
	}
	if res.Epsilon > 1 || res.Epsilon < 0.9 {
		t.Errorf("ε=1 coin audited at %v", res.Epsilon)
	}
}
