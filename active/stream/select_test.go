package stream

import (
	"fmt"
	"math"
	"math/big"
	"strings"
	"testing"

	"github.com/dpal-dev/dpal/dp/mech"
	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/vec"
)

func setW(l *Learner, w []float64) {
	copy(l.w, w)
	l.wNorm = vec.Norm(l.w)
}

func TestDistanceZeroModel(t *testing.T) {
	if d := Distance(0.7, 0); d != 0 {
		t.Errorf("d(x, 0) = %v, want 0", d)
	}
	if c := Informativeness(Distance(0.7, 0)); c != 1 {
		t.Errorf("c(x, 0) = %v, want 1", c)
	}
	if d := Distance(-0.6, 2); d != 0.3 {
		t.Errorf("d = %v, want 0.3", d)
	}
}

// TestSelectionProbabilities enumerates points at known distances from the
// hyperplane (inside and outside the slab, and w = 0) and checks the exact
// selection probability of each rule against eq. 7 and Lemma 1, then that
// Observe's decisions at a fixed seed follow it (5-sigma binomial bound).
func TestSelectionProbabilities(t *testing.T) {
	const dim = 3
	p := mech.RRFlipProb(1) // e^-1/(1+e^-1)
	expQ := func(d float64) float64 { return math.Exp(-math.Max(0.2, d) / 0.8) }
	cases := []struct {
		name string
		cfg  func(*Config)
		w    []float64
		d    float64
		want float64
	}{
		{"bernoulli w=0", nil, []float64{0, 0, 0}, 0.9, 1 - p},
		{"bernoulli inside", nil, []float64{2, 0, 0}, 0.1, 1 - p},
		{"bernoulli on edge", nil, []float64{2, 0, 0}, 0.2, 1 - p},
		{"bernoulli outside", nil, []float64{2, 0, 0}, 0.5, p},
		{"bernoulli shrinking t=1", func(c *Config) { c.ShrinkingSlab = true }, []float64{1, 0, 0}, 0.9, 1 - p},
		{"exponential w=0", func(c *Config) { c.Selector = Exponential }, []float64{0, 0, 0}, 0.9, expQ(0)},
		{"exponential in slab", func(c *Config) { c.Selector = Exponential }, []float64{1, 0, 0}, 0.1, expQ(0.1)},
		{"exponential outside", func(c *Config) { c.Selector = Exponential }, []float64{1, 0, 0}, 0.7, expQ(0.7)},
		{"exponential far", func(c *Config) { c.Selector = Exponential }, []float64{1, 0, 0}, 1, expQ(1)},
		{"tong-koller inside", func(c *Config) { c.NonPrivate = true }, []float64{1, 0, 0}, 0.15, 1},
		{"tong-koller outside", func(c *Config) { c.NonPrivate = true }, []float64{1, 0, 0}, 0.25, 0},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig(dim)
			cfg.Window = 1 << 30 // FLMB that never updates: w stays fixed
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			l, err := New(cfg, rng.Seeded(uint64(i)), nil)
			if err != nil {
				t.Fatal(err)
			}
			setW(l, tc.w)
			x := pointAt(tc.d, dim)
			got, err := l.SelectionProbability(x)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(got-tc.want) > 1e-15 {
				t.Fatalf("P(select) = %v, want %v", got, tc.want)
			}
			const n = 20000
			k := 0
			for range n {
				dec, err := l.Observe(x)
				if err != nil {
					t.Fatal(err)
				}
				if dec.Request {
					k++
				}
			}
			freq := float64(k) / n
			if sd := math.Sqrt(tc.want * (1 - tc.want) / n); math.Abs(freq-tc.want) > 5*sd+1e-12 {
				t.Errorf("selected %d of %d (%.4f), want probability %.4f", k, n, freq, tc.want)
			}
		})
	}
}

// bruteSelectionEps is an independent computation of a selector's ε: the
// largest |log ratio| of P(s) over pairs of distances d, d' on a grid of
// [0, M], for both outcomes.
func bruteSelectionEps(q func(d float64) float64, m float64) float64 {
	const steps = 2000
	worst := 0.0
	for i := 0; i <= steps; i++ {
		qi := q(m * float64(i) / steps)
		for j := 0; j <= steps; j += 7 {
			qj := q(m * float64(j) / steps)
			worst = math.Max(worst, math.Abs(math.Log(qi/qj)))
			worst = math.Max(worst, math.Abs(math.Log((1-qi)/(1-qj))))
		}
		qj := q(m) // make sure the far end is in the grid
		worst = math.Max(worst, math.Abs(math.Log(qi/qj)))
		worst = math.Max(worst, math.Abs(math.Log((1-qi)/(1-qj))))
	}
	return worst
}

// TestExponentialSelectorTrueEpsilon checks that the paper's own settings
// (b = 0.2, ε = 1, M = 1) break Lemma 2's condition and that the computed
// true ε_s matches an independent brute-force computation, and what the
// ledger is charged.
func TestExponentialSelectorTrueEpsilon(t *testing.T) {
	const b, eps, m = 0.2, 1.0, 1.0
	kappa := eps / (m - b)
	if c := math.Exp(-b * kappa); c <= 0.5 {
		t.Fatalf("Lemma 2's condition exp(-bε/Δ) = %v <= 1/2 holds; expected it to fail", c)
	}
	got := ExpSelectorEpsilon(kappa, b, m)
	want := math.Log((1 - math.Exp(-1.25)) / (1 - math.Exp(-0.25))) // s = 0 ratio
	if math.Abs(got-want) > 1e-12 || got <= eps {
		t.Fatalf("true ε_s = %v, want %v (> %v)", got, want, eps)
	}
	q := func(d float64) float64 { return math.Exp(-kappa * math.Max(b, d)) }
	if brute := bruteSelectionEps(q, m); math.Abs(brute-got) > 1e-9 {
		t.Errorf("brute force ε_s = %v, formula %v", brute, got)
	}
	// Bernoulli: the same formula gives randomized response's ε.
	p := mech.RRFlipProb(0.7)
	if e := SelectionEpsilon(math.Log(p), math.Log1p(-p)); math.Abs(e-0.7) > 1e-12 {
		t.Errorf("SelectionEpsilon(RR 0.7) = %v", e)
	}

	cfg := DefaultConfig(4)
	cfg.Selector = Exponential
	l := mustNew(t, cfg, 1)
	if _, err := l.Observe(make([]float64, 4)); err != nil {
		t.Fatal(err)
	}
	if e, _ := l.Ledger().Spent(GroupObserved); math.Abs(e-want) > 1e-12 {
		t.Errorf("ledger charged %v for a selection, want the true ε_s %v", e, want)
	}
	if s := l.Stats(); math.Abs(s.MaxEpsilonPerRecord-want) > 1e-12 {
		t.Errorf("stats report %v per record, want %v", s.MaxEpsilonPerRecord, want)
	}
}

func TestExponentialCalibration(t *testing.T) {
	// Scale only: unreachable at b = 0.2 (the minimum over κ is ≈ 1.13).
	_, err := CalibrateExpScale(1, 0.2, 1)
	if err == nil || !strings.Contains(err.Error(), "smallest true") {
		t.Fatalf("CalibrateExpScale(1, 0.2, 1) error = %v, want unreachable", err)
	}
	minEps := math.Inf(1)
	for k := 0.01; k < 5; k += 0.0005 {
		minEps = math.Min(minEps, ExpSelectorEpsilon(k, 0.2, 1))
	}
	if v := minFromErr(err.Error()); math.Abs(v-minEps) > 1e-3 {
		t.Errorf("error %q does not name the minimum %v", err, minEps)
	}
	if _, err := CalibrateExpScale(1.2, 0.2, 1); err != nil {
		t.Errorf("target 1.2 is reachable: %v", err)
	}
	for _, tc := range []struct{ target, b, m float64 }{{1, 0.3, 1}, {1.2, 0.2, 1}, {2, 0.1, 1}, {3, 0.5, 2}} {
		k, err := CalibrateExpScale(tc.target, tc.b, tc.m)
		if err != nil {
			t.Errorf("%+v: %v", tc, err)
			continue
		}
		if e := ExpSelectorEpsilon(k, tc.b, tc.m); math.Abs(e-tc.target) > 1e-9 {
			t.Errorf("%+v: calibrated scale %v gives ε_s %v", tc, k, e)
		}
	}
	// Slab: widen b until the true ε_s is the target.
	b2, err := CalibrateExpSlab(1, 0.2, 1)
	if err != nil {
		t.Fatal(err)
	}
	if b2 <= 0.2 || b2 >= 0.3 {
		t.Errorf("calibrated b = %v, want in (0.2, 0.3)", b2)
	}
	if e := ExpSelectorEpsilon(1/(1-b2), b2, 1); math.Abs(e-1) > 1e-9 {
		t.Errorf("calibrated slab gives ε_s %v, want 1", e)
	}
	if e := ExpSelectorEpsilon(1/(1-(b2-1e-3)), b2-1e-3, 1); e <= 1 {
		t.Errorf("a slightly narrower slab already gives ε_s %v <= 1", e)
	}
	q := func(d float64) float64 { return math.Exp(-math.Max(b2, d) / (1 - b2)) }
	if brute := bruteSelectionEps(q, 1); brute > 1+1e-9 {
		t.Errorf("brute-force ε_s of the calibrated slab = %v > 1", brute)
	}
	// The learner charges exactly the target when calibrated.
	for _, cal := range []Calibration{CalibrateSlab} {
		cfg := DefaultConfig(2)
		cfg.Selector, cfg.Calibration = Exponential, cal
		l := mustNew(t, cfg, 3)
		if _, err := l.Observe([]float64{0.1, 0.2}); err != nil {
			t.Fatal(err)
		}
		if e, _ := l.Ledger().Spent(GroupObserved); math.Abs(e-1) > 1e-9 {
			t.Errorf("%v: charged %v, want 1", cal, e)
		}
	}
	cfg := DefaultConfig(2)
	cfg.Selector, cfg.Calibration = Exponential, CalibrateScale
	if _, err := New(cfg, rng.Seeded(1), nil); err == nil {
		t.Error("New with an unreachable scale calibration succeeded")
	}
}

// minFromErr reads the minimum ε_s that CalibrateExpScale's error names.
func minFromErr(msg string) float64 {
	const key = "over all scales is "
	i := strings.Index(msg, key)
	if i < 0 {
		return math.NaN()
	}
	var v float64
	if _, err := fmt.Sscanf(msg[i+len(key):], "%g", &v); err != nil {
		return math.NaN()
	}
	return v
}

// bigExp returns e^x for a float64 x ≥ 0 to about 250 bits: the Taylor
// series of e^(x/2^k) with x/2^k < 1/2, squared k times.
func bigExp(x float64) *big.Float {
	const prec = 320
	k := 0
	for r := x; r >= 0.5; r /= 2 {
		k++
	}
	y := new(big.Float).SetPrec(prec).SetMantExp(big.NewFloat(x), -k)
	sum := new(big.Float).SetPrec(prec).SetInt64(1)
	term := new(big.Float).SetPrec(prec).SetInt64(1)
	tiny := new(big.Float).SetMantExp(big.NewFloat(1), -prec)
	for n := int64(1); term.Cmp(tiny) > 0; n++ {
		term.Mul(term, y)
		term.Quo(term, new(big.Float).SetPrec(prec).SetInt64(n))
		sum.Add(sum, term)
	}
	for range k {
		sum.Mul(sum, sum)
	}
	return sum
}

// TestBernoulliRatioExact: the Bernoulli selector's two probabilities sum
// to exactly 1 and their ratio (1 − p)/p is at most e^ε, checked in exact
// (big.Float) arithmetic, so the ε it charges is a true upper bound; and
// the rounding keeps p within a few ulps of mech.RRFlipProb with the same
// binary exponent, so seeded runs draw as before.
func TestBernoulliRatioExact(t *testing.T) {
	eps := []float64{1e-9, 0.01, 0.1, 0.5, 0.7, 1, 2, math.Log(3), 5, 10, 20, 36, 40, 100, 700}
	r := rng.Seeded(9)
	for range 300 {
		eps = append(eps, 30*r.Float64()+1e-6)
	}
	margin := new(big.Float).SetMantExp(big.NewFloat(1), -240) // bigExp's error is far smaller
	for _, e := range eps {
		cfg := DefaultConfig(1)
		cfg.EpsSelect = e
		s, err := newSelector(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if s.eps != e {
			t.Errorf("ε = %v: charges %v", e, s.eps)
		}
		in, out := new(big.Float).SetFloat64(s.pIn), new(big.Float).SetFloat64(s.pOut)
		if sum := new(big.Float).Add(in, out); sum.Cmp(big.NewFloat(1)) != 0 {
			t.Errorf("ε = %v: pIn + pOut = %v, not exactly 1", e, sum)
		}
		// pIn ≤ pOut·e^ε·(1 − margin) certifies pIn/pOut ≤ e^ε.
		bound := new(big.Float).Mul(out, bigExp(e))
		bound.Sub(bound, new(big.Float).Mul(bound, margin))
		if in.Cmp(bound) > 0 {
			t.Errorf("ε = %v: (1−p)/p > e^ε with p = %v", e, s.pOut)
		}
		if p := mech.RRFlipProb(e); p > 0x1p-50 {
			_, e1 := math.Frexp(p)
			_, e2 := math.Frexp(s.pOut)
			if s.pOut < p || s.pOut-p > 5*0x1p-53 || (e1 != e2 && e != math.Log(3)) {
				t.Errorf("ε = %v: p rounded from %v to %v", e, p, s.pOut)
			}
		}
	}
}
