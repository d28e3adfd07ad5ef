package mech

import (
	"errors"
	"math"
	"math/big"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/dpal-dev/dpal/dp/rng"
)

// Statistical tests run at fixed seeds, so they are deterministic; the
// rates quoted below are the probability that a test would fail for a
// correct sampler under a random seed.
//
//   - Proportions and moments: |estimate − truth| ≤ 5 standard errors
//     (normal approximation, false-failure rate ≈ 6e-7 per check).
//   - Goodness of fit: Pearson's chi-square against the exact pmf, bins with
//     expected count ≥ 10 and both tails lumped, rejected above the
//     1 − 1e-4 quantile (false-failure rate 1e-4 per test).
const (
	zTol      = 5.0
	chiSqRate = 1e-4
)

func checkProportion(t *testing.T, name string, hits, n int, p float64) {
	t.Helper()
	se := math.Sqrt(p * (1 - p) / float64(n))
	if got := float64(hits) / float64(n); math.Abs(got-p) > zTol*se+1e-12 {
		t.Errorf("%s: frequency %.6f, want %.6f ± %.2g", name, got, p, zTol*se)
	}
}

func TestBernoulliExp(t *testing.T) {
	r := rng.Seeded(11)
	const n = 100000
	for _, c := range []struct{ num, den uint64 }{
		{0, 1}, {1, 3}, {1, 1}, {5, 2}, {7, 1}, {1 << 62, 3 << 61}, {math.MaxUint64, math.MaxUint64 - 1},
	} {
		hits := 0
		for range n {
			if BernoulliExp(r, c.num, c.den) {
				hits++
			}
		}
		checkProportion(t, "BernoulliExp", hits, n, math.Exp(-float64(c.num)/float64(c.den)))
	}
}

func TestBernoulliExpFloat(t *testing.T) {
	r := rng.Seeded(12)
	const n = 100000
	for _, g := range []float64{0, 1e-300, 0.1, 0.5, 1, 2.75, 6.3} {
		hits := 0
		for range n {
			if BernoulliExpFloat(r, g) {
				hits++
			}
		}
		checkProportion(t, "BernoulliExpFloat", hits, n, math.Exp(-g))
	}
	for _, g := range []float64{math.Inf(1), math.NaN(), 1e30} {
		for range 100 {
			if BernoulliExpFloat(r, g) {
				t.Fatalf("BernoulliExpFloat(%v) returned true", g)
			}
		}
	}
	if !BernoulliExpFloat(r, -1) {
		t.Error("BernoulliExpFloat(-1) must be true")
	}
}

func TestBernoulliFloat(t *testing.T) {
	r := rng.Seeded(13)
	const n = 100000
	for _, p := range []float64{0, 1, 0.5, 0.3, 1.0 / 3, 0.999, 1e-3, 0x1p-12 + 0x1p-70} {
		hits := 0
		for range n {
			if BernoulliFloat(r, p) {
				hits++
			}
		}
		checkProportion(t, "BernoulliFloat", hits, n, p)
	}
	for _, p := range []float64{-1, math.NaN(), 5e-324, 0x1p-200} {
		for range 1000 {
			if BernoulliFloat(r, p) {
				t.Fatalf("BernoulliFloat(%v) returned true", p)
			}
		}
	}
}

// A dyadic p's exact decision can be checked bit by bit: with a source
// whose first word equals p's first 64 bits, the second word decides.
func TestBernoulliFloatTies(t *testing.T) {
	p := 0x1p-12 + 0x1p-70 // expansion spans two 64-bit words
	r := rng.Seeded(14)
	hits, n := 0, 200000
	for range n {
		if BernoulliFloat(r, p) {
			hits++
		}
	}
	checkProportion(t, "BernoulliFloat two-word", hits, n, p)
}

func TestBernoulliExpBig(t *testing.T) {
	r := rng.Seeded(15)
	const n = 100000
	scale := new(big.Int).Lsh(big.NewInt(1), 90)
	num := new(big.Int).Mul(big.NewInt(17), scale)
	den := new(big.Int).Mul(big.NewInt(7), scale)
	hits := 0
	for range n {
		if bernoulliExpBig(r, num, den) {
			hits++
		}
	}
	checkProportion(t, "bernoulliExpBig", hits, n, math.Exp(-17.0/7))
}

// chiSquare bins integer samples against an exact pmf and fails above the
// 1 − chiSqRate quantile. Bins are single values with expected count ≥ 10;
// the tails beyond them are lumped.
func chiSquare(t *testing.T, name string, counts map[int64]int, n int, pmf func(int64) float64, lo, hi int64) {
	t.Helper()
	var stat float64
	bins := 0
	inner, innerP := 0, 0.0
	for x := lo; x <= hi; x++ {
		p := pmf(x)
		e := p * float64(n)
		if e < 10 {
			continue
		}
		d := float64(counts[x]) - e
		stat += d * d / e
		bins++
		inner += counts[x]
		innerP += p
	}
	if rest := 1 - innerP; rest*float64(n) >= 10 {
		e := rest * float64(n)
		d := float64(n-inner) - e
		stat += d * d / e
		bins++
	}
	if bins < 2 {
		t.Fatalf("%s: only %d bins", name, bins)
	}
	crit := distuv.ChiSquared{K: float64(bins - 1)}.Quantile(1 - chiSqRate)
	if stat > crit {
		t.Errorf("%s: chi-square %.1f > %.1f (%d bins)", name, stat, crit, bins)
	}
}

func checkMoments(t *testing.T, name string, xs []int64, mean, variance float64) {
	t.Helper()
	n := float64(len(xs))
	var s, s2 float64
	for _, x := range xs {
		s += float64(x)
	}
	m := s / n
	var s4 float64
	for _, x := range xs {
		d2 := (float64(x) - m) * (float64(x) - m)
		s2 += d2
		s4 += d2 * d2
	}
	v := s2 / (n - 1)
	if se := math.Sqrt(variance / n); math.Abs(m-mean) > zTol*se {
		t.Errorf("%s: mean %.4g, want %.4g ± %.2g", name, m, mean, zTol*se)
	}
	// The sample variance has variance ≈ (μ4 − σ⁴)/n, μ4 estimated.
	if se := math.Sqrt(max(s4/n-variance*variance, 0) / n); math.Abs(v-variance) > zTol*se {
		t.Errorf("%s: variance %.4g, want %.4g ± %.2g", name, v, variance, zTol*se)
	}
}

func TestDiscreteLaplace(t *testing.T) {
	r := rng.Seeded(21)
	const n = 100000
	for _, c := range []struct{ t, s uint64 }{{1, 1}, {3, 1}, {7, 2}, {100, 3}, {1, 5}, {4097 << 30, 1 << 29}} {
		q := math.Exp(-float64(c.s) / float64(c.t))
		pmf := func(x int64) float64 { return (1 - q) / (1 + q) * math.Pow(q, math.Abs(float64(x))) }
		counts := map[int64]int{}
		xs := make([]int64, n)
		for i := range xs {
			xs[i], _ = DiscreteLaplace(r, c.t, c.s)
			counts[xs[i]]++
		}
		name := "DiscreteLaplace"
		checkMoments(t, name, xs, 0, 2*q/((1-q)*(1-q)))
		if b := float64(c.t) / float64(c.s); b < 200 {
			chiSquare(t, name, counts, n, pmf, -int64(40*b)-5, int64(40*b)+5)
		}
	}
}

func TestGeometric(t *testing.T) {
	r := rng.Seeded(22)
	const n = 100000
	for _, c := range []struct{ t, s uint64 }{{1, 1}, {10, 3}, {1 << 30, 1 << 26}} {
		q := math.Exp(-float64(c.s) / float64(c.t))
		counts := map[int64]int{}
		xs := make([]int64, n)
		for i := range xs {
			y, _ := Geometric(r, c.t, c.s)
			xs[i] = int64(y)
			counts[xs[i]]++
		}
		checkMoments(t, "Geometric", xs, q/(1-q), q/((1-q)*(1-q)))
		chiSquare(t, "Geometric", counts, n, func(x int64) float64 {
			if x < 0 {
				return 0
			}
			return (1 - q) * math.Pow(q, float64(x))
		}, 0, 2000)
	}
}

// dgPMF returns the exact discrete Gaussian pmf for variance parameter s2.
func dgPMF(s2 float64) func(int64) float64 {
	w := math.Ceil(40 * math.Sqrt(s2))
	var z float64
	for x := -w; x <= w; x++ {
		z += math.Exp(-x * x / (2 * s2))
	}
	return func(x int64) float64 { return math.Exp(-float64(x)*float64(x)/(2*s2)) / z }
}

// dgVariance is the exact variance of the discrete Gaussian (it is slightly
// below σ² for small σ).
func dgVariance(s2 float64) float64 {
	pmf := dgPMF(s2)
	w := int64(math.Ceil(40 * math.Sqrt(s2)))
	var v float64
	for x := -w; x <= w; x++ {
		v += float64(x) * float64(x) * pmf(x)
	}
	return v
}

func TestDiscreteGaussian(t *testing.T) {
	r := rng.Seeded(31)
	const n = 100000
	for _, c := range []struct {
		name     string
		num, den uint64
	}{
		{"sigma2=1/4", 1, 4}, {"sigma2=1", 1, 1}, {"sigma2=10/3", 10, 3}, {"sigma2=100", 100, 1},
		// (|Y|·t·D − N)² overflows uint64: the math/big path.
		{"big", 1<<40 + 12345, 1 << 20},
	} {
		s2 := float64(c.num) / float64(c.den)
		counts := map[int64]int{}
		xs := make([]int64, n)
		for i := range xs {
			xs[i], _ = DiscreteGaussian(r, c.num, c.den)
			counts[xs[i]]++
		}
		checkMoments(t, "DiscreteGaussian "+c.name, xs, 0, dgVariance(s2))
		if s2 < 1000 {
			w := int64(10*math.Sqrt(s2)) + 3
			chiSquare(t, "DiscreteGaussian "+c.name, counts, n, dgPMF(s2), -w, w)
		}
	}
}

// The integer-variance form used by the mechanisms (σ² = t·m), binned
// coarsely because σ is large.
func TestDiscreteGaussianIntForm(t *testing.T) {
	r := rng.Seeded(32)
	const n = 100000
	g := newDGaussInt(40, 41) // σ² = 1640
	s2 := 1640.0
	counts := map[int64]int{}
	xs := make([]int64, n)
	for i := range xs {
		xs[i] = g.sample(r)
		counts[xs[i]]++
	}
	checkMoments(t, "dgauss int form", xs, 0, s2)
	w := int64(6 * math.Sqrt(s2))
	chiSquare(t, "dgauss int form", counts, n, dgPMF(s2), -w, w)
}

func TestIsqrt(t *testing.T) {
	for _, n := range []uint64{0, 1, 2, 3, 4, 15, 16, 17, 1<<52 + 1, math.MaxUint64, math.MaxUint32 * math.MaxUint32} {
		x := isqrt(n)
		if x*x > n || (x < math.MaxUint32 && (x+1)*(x+1) <= n) {
			t.Errorf("isqrt(%d) = %d", n, x)
		}
	}
}

func TestSamplerZeroParams(t *testing.T) {
	r := rng.Seeded(1)
	calls := map[string]func(a, b uint64) error{
		"Geometric":        func(a, b uint64) error { _, err := Geometric(r, a, b); return err },
		"DiscreteLaplace":  func(a, b uint64) error { _, err := DiscreteLaplace(r, a, b); return err },
		"DiscreteGaussian": func(a, b uint64) error { _, err := DiscreteGaussian(r, a, b); return err },
	}
	for name, call := range calls {
		for _, p := range [][2]uint64{{0, 1}, {1, 0}, {0, 0}} {
			if err := call(p[0], p[1]); !errors.Is(err, ErrSamplerParam) {
				t.Errorf("%s(%d, %d) = %v, want ErrSamplerParam", name, p[0], p[1], err)
			}
		}
		if err := call(3, 2); err != nil {
			t.Errorf("%s(3, 2): %v", name, err)
		}
	}
}

// TestUniformSubset checks that the k indices are distinct, that every
// index is drawn about equally often, and that k outside [0, n] is refused.
func TestUniformSubset(t *testing.T) {
	r := rng.Seeded(3)
	const n, k, trials = 5, 3, 20000
	seen := make([]int, n)
	for range trials {
		idx, err := UniformSubset(r, n, k)
		if err != nil {
			t.Fatal(err)
		}
		in := map[int]bool{}
		for _, i := range idx {
			if i < 0 || i >= n || in[i] {
				t.Fatalf("draw %v is not %d distinct indices of [0, %d)", idx, k, n)
			}
			in[i] = true
			seen[i]++
		}
	}
	p := float64(k) / n // each index is in the subset with probability k/n
	mean, sd := trials*p, math.Sqrt(trials*p*(1-p))
	for i, c := range seen {
		if math.Abs(float64(c)-mean) > 5*sd {
			t.Errorf("index %d drawn %d times of %d, want %.0f ± %.0f", i, c, trials, mean, 5*sd)
		}
	}
	if idx, err := UniformSubset(r, n, 0); err != nil || len(idx) != 0 {
		t.Errorf("k = 0: %v, %v", idx, err)
	}
	for _, bad := range []int{-1, n + 1} {
		if _, err := UniformSubset(r, n, bad); err == nil {
			t.Errorf("k = %d of n = %d accepted", bad, n)
		}
	}
}
