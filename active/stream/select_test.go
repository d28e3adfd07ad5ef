package stream

import (
	"math"
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
			cfg.Window = MaxWindow // FLMB that never updates: w stays fixed
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

// rangeEpsilon is the ε of a selector from the range of the selection
// probabilities q(d) it actually uses over a fine grid of d ∈ [0, M] (and
// the slab's edge): SelectionEpsilon of the smallest and largest.
func rangeEpsilon(q func(d float64) float64, m, slab float64) float64 {
	const steps = 20000
	lo, hi := q(slab), q(slab)
	for i := 0; i <= steps; i++ {
		v := q(m * float64(i) / steps)
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	return SelectionEpsilon(math.Log(lo), math.Log(hi))
}

// TestSelectionChargeCoversBruteForce: the ε the ledger records for the
// selection bounds the ε of the probabilities the learner actually uses,
// for each rule and calibration.
func TestSelectionChargeCoversBruteForce(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*Config)
	}{
		{"bernoulli", func(c *Config) {}},
		{"exponential paper", func(c *Config) { c.Selector = Exponential }},
		{"exponential slab", func(c *Config) { c.Selector, c.Calibration = Exponential, CalibrateSlab }},
		{"exponential scale", func(c *Config) { c.Selector, c.Calibration, c.B = Exponential, CalibrateScale, 0.6 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig(2)
			tc.set(&cfg)
			l := mustNew(t, cfg, 1)
			if _, err := l.Observe([]float64{0.1, 0.2}); err != nil {
				t.Fatal(err)
			}
			charged := l.Ledger().Loss(GroupObserved).Epsilon
			brute := rangeEpsilon(func(d float64) float64 { return l.sel.prob(d, l.slab()) }, cfg.M, l.slab())
			if charged != l.Stats().EpsSelect || charged < brute {
				t.Errorf("ledger charged %v, stats say %v, brute force %v", charged, l.Stats().EpsSelect, brute)
			}
		})
	}
}
