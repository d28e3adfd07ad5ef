package mech

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/audit"
	"github.com/dpal-dev/dpal/dp/audit/audittest"
	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/vec"
)

func TestTreeLevels(t *testing.T) {
	for _, c := range []struct{ steps, want int }{
		{1, 1}, {2, 2}, {3, 3}, {4, 3}, {5, 4}, {8, 4}, {9, 5}, {100000, 18}, {500000, 20},
	} {
		if got := TreeLevels(c.steps); got != c.want {
			t.Errorf("TreeLevels(%d) = %d, want %d", c.steps, got, c.want)
		}
	}
}

// With the noise off the released prefix sums are the exact ones.
func TestTreeExactPrefixSums(t *testing.T) {
	for _, steps := range []int{1, 2, 7, 8, 37} {
		tr, err := newTree(steps, 3, 3)
		if err != nil {
			t.Fatal(err)
		}
		r := rng.Seeded(uint64(steps))
		want := make([]float64, 3)
		for s := 1; s <= steps; s++ {
			w := []float64{float64(r.Uint64()%1000)/1000 - 0.5, float64(s % 3), -0.25}
			addTo(want, w)
			got, err := tr.Add(nil, w)
			if err != nil {
				t.Fatal(err)
			}
			for k := range want {
				if math.Abs(got[k]-want[k]) > 1e-12*(1+math.Abs(want[k])) {
					t.Fatalf("T=%d step %d coord %d: prefix %v, want %v", steps, s, k, got[k], want[k])
				}
			}
		}
	}
}

// Leaves may hold several atoms, added as vectors or as packed outer
// products; with the noise off the prefix sums are still exact.
func TestTreeBlocks(t *testing.T) {
	v := []float64{0.5, -0.25, 0.75}
	tr, err := newTree(3, SymDim(3), 1)
	if err != nil {
		t.Fatal(err)
	}
	atom := make([]float64, SymDim(3))
	PackOuter(atom, v, -0.5)
	want := make([]float64, SymDim(3))
	for leaf := 1; leaf <= 3; leaf++ {
		for range 2 {
			if err := tr.AccumulateOuter(v, -0.5); err != nil {
				t.Fatal(err)
			}
			if err := tr.Accumulate(atom); err != nil {
				t.Fatal(err)
			}
			addTo(want, atom)
			addTo(want, atom)
		}
		got, err := tr.Flush(nil)
		if err != nil {
			t.Fatal(err)
		}
		for k := range want {
			if math.Abs(got[k]-want[k]) > 1e-12 {
				t.Fatalf("leaf %d: prefix %v, want %v", leaf, got, want)
			}
		}
	}
	if err := tr.AccumulateOuter(v, 1); err == nil || !strings.Contains(err.Error(), "beyond the declared T = 3") {
		t.Fatalf("atom beyond T: %v", err)
	}
	tr2, _ := newTree(3, SymDim(3), 0.5)
	if err := tr2.AccumulateOuter(v, 1); err == nil || !strings.Contains(err.Error(), "above the bound") {
		t.Fatalf("atom above the bound: %v", err)
	}
}

func TestTreeRejectsBadAtoms(t *testing.T) {
	tr, err := NewTree(2, 2, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	r := rng.Seeded(1)
	for _, c := range []struct {
		name string
		w    []float64
		want string
	}{
		{"norm", []float64{1, 1}, "atom 1 has norm"},
		{"nan", []float64{math.NaN(), 0}, "atom 1: coordinate 0 is NaN"},
		{"dim", []float64{0}, "atom 1 has dimension 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := tr.Add(r, c.w); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
	for range 2 {
		if _, err := tr.Add(r, []float64{0.5, 0}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tr.Add(r, []float64{0, 0}); err == nil || !strings.Contains(err.Error(), "beyond the declared T = 2") {
		t.Fatalf("third atom of T=2: error %v", err)
	}
	if _, err := NewTree(0, 1, 1, 1); err == nil {
		t.Fatal("T = 0 accepted")
	}
}

// The noise of the prefix at t is the sum of popcount(t) node noises drawn
// once each: its variance is popcount(t)·σ², and consecutive prefixes
// share their nodes' noise.
func TestTreeNoisePerNode(t *testing.T) {
	for _, bulk := range []bool{false, true} { // bulk: DrawInBulk's route at dimension 1
		t.Run(fmt.Sprintf("bulk=%v", bulk), func(t *testing.T) { testTreeNoisePerNode(t, bulk) })
	}
}

func testTreeNoisePerNode(t *testing.T, bulk bool) {
	const runs = 4000
	tr0, _ := NewTree(8, 1, 1, 2)
	sigma2 := tr0.Sigma() * tr0.Sigma()
	r := rng.Seeded(3)
	var sum [8]float64
	var diff67 float64 // Ŵ_7 − Ŵ_6 is the noisy leaf 7 alone
	for range runs {
		tr, _ := NewTree(8, 1, 1, 2)
		if bulk {
			tr.DrawInBulk()
		}
		var prev float64
		for s := range 8 {
			out, err := tr.Add(r, []float64{0})
			if err != nil {
				t.Fatal(err)
			}
			sum[s] += out[0] * out[0]
			if s == 6 {
				diff67 += (out[0] - prev) * (out[0] - prev)
			}
			prev = out[0]
		}
	}
	for s := range 8 {
		want := float64(popcount(s+1)) * sigma2
		if got := sum[s] / runs; math.Abs(got-want) > 0.1*want {
			t.Errorf("t=%d: noise variance %.4g, want %d·σ² = %.4g", s+1, got, popcount(s+1), want)
		}
	}
	if got := diff67 / runs; math.Abs(got-sigma2) > 0.1*sigma2 {
		t.Errorf("Ŵ_7 − Ŵ_6 variance %.4g, want σ² = %.4g (nodes 0 and 10 reused)", got, sigma2)
	}
}

func popcount(x int) int {
	n := 0
	for ; x > 0; x &= x - 1 {
		n++
	}
	return n
}

func TestTreeLoss(t *testing.T) {
	tr, err := NewTree(100000, 4, 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	l := tr.Loss()
	if want := 18.0 / (2 * 9); math.Abs(l.Rho-want) > 1e-12 {
		t.Fatalf("rho %v, want Levels/(2z²) = %v", l.Rho, want)
	}
	charged, err := l.EpsilonAt(1e-5, account.Balle2020)
	if err != nil {
		t.Fatal(err)
	}
	tight, err := GaussianEpsilon(tr.Mu(), 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if !(tight <= charged) {
		t.Fatalf("μ-GDP ε %v above the zCDP charge %v", tight, charged)
	}
	if z, _ := TreeNoiseMultiplier(100000, l.Rho); math.Abs(z-3) > 1e-12 {
		t.Fatalf("TreeNoiseMultiplier round trip %v, want 3", z)
	}
}

func TestPackOuter(t *testing.T) {
	v := []float64{1, -2, 3}
	p := make([]float64, SymDim(3))
	PackOuter(p, v, 0.5)
	var n2 float64
	for _, x := range p {
		n2 += x * x
	}
	if want := 0.5 * 14; math.Abs(math.Sqrt(n2)-want) > 1e-12 {
		t.Fatalf("packed norm %v, want |c|·‖v‖² = %v", math.Sqrt(n2), want)
	}
	m := make([]float64, 9)
	UnpackSym(m, p, 3)
	for i := range 3 {
		for j := range 3 {
			if want := 0.5 * v[i] * v[j]; math.Abs(m[i*3+j]-want) > 1e-12 {
				t.Fatalf("entry (%d,%d) = %v, want %v", i, j, m[i*3+j], want)
			}
		}
	}
}

// GaussianEpsilon inverts the analytic calibration: σ/Δ at the returned ε
// is 1/μ, and it reproduces the spec's table (§10 N7): the paper's β at
// T = 1e5, ε = 1, δ = 0.01 is μ ≈ 0.108-GDP, ε ≈ 0.061 at δ' = 0.02.
func TestGaussianEpsilon(t *testing.T) {
	for _, c := range []struct{ mu, delta float64 }{{0.1, 1e-5}, {1, 1e-5}, {2.06, 0.02}, {5, 1e-9}} {
		eps, err := GaussianEpsilon(c.mu, c.delta)
		if err != nil {
			t.Fatal(err)
		}
		s, err := AnalyticGaussianSigma(eps, c.delta, 1)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(s*c.mu-1) > 1e-8 {
			t.Errorf("μ=%v δ=%v: ε=%v gives σ/Δ=%v, want 1/μ=%v", c.mu, c.delta, eps, s, 1/c.mu)
		}
	}
	beta := 2.92e3
	eps, _ := GaussianEpsilon(math.Sqrt(1e5-1)/beta, 0.02)
	if math.Abs(eps-0.061) > 0.002 {
		t.Errorf("spec N7 row T=1e5, ε=1: ε_true = %v, want ≈ 0.061", eps)
	}
	if _, err := GaussianEpsilon(0, 0.1); err == nil {
		t.Error("mu = 0 accepted")
	}
}

// The audit runs a T = 4 tree on neighbouring streams that differ in the
// first atom (w_1 = +R vs −R, the worst case: it lies under a released node
// at every level). The statistic Ŵ_1 + Ŵ_2 + Ŵ_4 is the sum of the three
// nodes containing w_1 ([1], [1,2], [1..4]), the likelihood-ratio test.
// A mutant tree with half the noise must be caught.
func TestAuditTree(t *testing.T) {
	const delta = 1e-5
	z := 3.2 // ρ = 3/(2z²) ≈ 0.146: charged ε ≈ 2.6 at δ = 1e-5
	genuine, _ := NewTree(4, 1, 1, z)
	charged, _ := genuine.Loss().EpsilonAt(delta, account.Balle2020)
	run := func(zz, first float64) func(*rng.Rand) float64 {
		tr, _ := NewTree(4, 1, 1, zz)
		return func(r *rng.Rand) float64 {
			tr.reset()
			var stat float64
			for s := range 4 {
				w := 0.0
				if s == 0 {
					w = first
				}
				out, _ := tr.Add(r, []float64{w})
				if s != 2 {
					stat += out[0]
				}
			}
			return stat
		}
	}
	c := audit.Config{Trials: 300000, Confidence: audittest.Confidence, Delta: delta}
	res, err := audit.Continuous(rng.Seeded(11), run(z, 1), run(z, -1), c)
	if err != nil {
		t.Fatal(err)
	}
	if res.Epsilon > charged {
		t.Errorf("audit lower bound %.3f exceeds the charged ε=%.3f (event %s)", res.Epsilon, charged, res.Event)
	}
	mut, err := audit.Continuous(rng.Seeded(12), run(z/2, 1), run(z/2, -1), c)
	if err != nil {
		t.Fatal(err)
	}
	if mut.Epsilon <= charged {
		t.Errorf("halved-noise tree not caught: lower bound %.3f ≤ charged ε=%.3f", mut.Epsilon, charged)
	}
	t.Logf("tree T=4: charged ε=%.3f, genuine ε_lb=%.3f, mutant ε_lb=%.3f", charged, res.Epsilon, mut.Epsilon)
}

// reset starts the tree over with the same noise, so audits need not
// rebuild the sampler's table for each trial.
func (t *Tree) reset() {
	t.t, t.atoms = 0, 0
	clear(t.prefix)
}

// Flush checks a node against the grid's range by its atom count; past the
// count where that bound is too loose it checks the node itself, and a
// node out of range is refused before anything changes.
func TestTreeFlushRange(t *testing.T) {
	for _, c := range []struct {
		name  string
		value float64
		ok    bool
	}{{"in range", 0.5, true}, {"out of range", 1e300, false}} {
		t.Run(c.name, func(t *testing.T) {
			tr, err := NewTree(4, 2, 1, 1)
			if err != nil {
				t.Fatal(err)
			}
			if err := tr.Accumulate([]float64{0.5, 0}); err != nil {
				t.Fatal(err)
			}
			tr.pending[0], tr.atoms = c.value, 1<<30 // as if after 2^30 atoms
			_, err = tr.Flush(rng.Seeded(1))
			if (err == nil) != c.ok {
				t.Fatalf("Flush error %v, want ok = %v", err, c.ok)
			}
			if !c.ok && tr.Len() != 0 {
				t.Errorf("a refused Flush closed leaf %d", tr.Len())
			}
		})
	}
}

// An empty leaf's stale buffer takes no part in the range check's pass.
func TestTreeFlushRangeEmptyLeaf(t *testing.T) {
	tr, err := NewTree(4, 2, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	r := rng.Seeded(1)
	if _, err := tr.Add(r, []float64{0.5, 0}); err != nil {
		t.Fatal(err)
	}
	tr.pending[0], tr.count[0] = 1e300, 1<<30 // stale buffer; force the pass
	if _, err := tr.Flush(r); err != nil {
		t.Fatalf("empty leaf refused: %v", err)
	}
}

// Flush's one-pass route (the AVX-512 fill rounding the node, adding the
// noise and updating the prefix) releases exactly what its separate passes
// release: the same seeded prefixes, bit for bit, over leaves of zero, one
// or several atoms, at a bulk dimension and at a small one drawn in bulk.
func TestTreeFlushRoutes(t *testing.T) {
	for _, c := range []struct {
		name      string
		dim, bulk int
	}{{"dim=1500", 1500, 0}, {"dim=5/bulk", 5, 1}, {"dim=2100/bulk", 2100, 1}} {
		t.Run(c.name, func(t *testing.T) {
			run := func() [][]float64 {
				tr, err := NewTree(37, c.dim, 1, 0.3)
				if err != nil {
					t.Fatal(err)
				}
				if c.bulk == 1 {
					tr.DrawInBulk()
				}
				data, r := rng.Seeded(3), rng.Seeded(4)
				var out [][]float64
				w := make([]float64, c.dim)
				for leaf := range 37 {
					for range leaf % 3 { // 0, 1 or 2 atoms
						for k := range w {
							w[k] = (float64(data.Uint64()%2001)/1000 - 1) / math.Sqrt(float64(c.dim))
						}
						if err := tr.Accumulate(w); err != nil {
							t.Fatal(err)
						}
					}
					p, err := tr.Flush(r)
					if err != nil {
						t.Fatal(err)
					}
					out = append(out, append([]float64(nil), p...))
				}
				return out
			}
			var scalar, vector [][]float64
			withFillAVX(false, func() { scalar = run() })
			withFillAVX(true, func() { vector = run() })
			for leaf := range scalar {
				for k := range scalar[leaf] {
					if math.Float64bits(scalar[leaf][k]) != math.Float64bits(vector[leaf][k]) {
						t.Fatalf("leaf %d coord %d: vector %v, scalar %v", leaf+1, k, vector[leaf][k], scalar[leaf][k])
					}
				}
			}
		})
	}
}

// PackOuter's AVX-512 loop writes the Go loop's products, bit for bit, at
// every length (full and masked rows) and leaves the rest of dst alone.
func TestPackOuterRoutes(t *testing.T) {
	r := rng.Seeded(9)
	for _, n := range []int{1, 2, 3, 7, 8, 9, 16, 17, 31, 89, 90, 91} {
		v := make([]float64, n)
		for k := range v {
			v[k] = float64(int64(r.Uint64()>>11)-1<<52) / 0x1p51
		}
		c := float64(r.Uint64()>>11) / 0x1p53
		var scalar, vector []float64
		for _, on := range []bool{false, true} {
			dst := make([]float64, SymDim(n)+3)
			for k := range dst {
				dst[k] = -7
			}
			withFillAVX(on, func() { PackOuter(dst, v, c) })
			if on {
				vector = dst
			} else {
				scalar = dst
			}
		}
		for k := range scalar {
			if math.Float64bits(scalar[k]) != math.Float64bits(vector[k]) {
				t.Fatalf("n=%d entry %d: vector %v, scalar %v", n, k, vector[k], scalar[k])
			}
		}
	}
}

// TestTreeCheckRoutes compares the one-pass checks of Accumulate and
// AccumulateOuter (‖v‖² finite, then the norm) with the full checks
// (each coordinate, then the norm), at the edges: norms at, just below and just above the bound,
// coordinates that are not finite, a sum of squares that overflows, a
// scale that is not finite, and tiny and huge bounds. Accept or reject
// and the error message must be the same.
func TestTreeCheckRoutes(t *testing.T) {
	const d = 3
	var cases []struct {
		name  string
		bound float64
		v     []float64
		c     float64
	}
	add := func(name string, bound float64, v []float64, c float64) {
		cases = append(cases, struct {
			name  string
			bound float64
			v     []float64
			c     float64
		}{name, bound, v, c})
	}
	for _, bound := range []float64{1, 3, 0x1p-1010, 0x1p-600, 1e300, math.MaxFloat64} {
		unit := []float64{0.6, 0, 0.8} // norm 1 up to rounding
		for _, f := range []float64{1, math.Nextafter(1, 2), math.Nextafter(1, 0), 1 - 0x1p-17, 1 - 0x1p-15, 0.5, 2} {
			r := math.Sqrt(bound) * f
			add(fmt.Sprintf("bound %g scale %g", bound, f), bound, []float64{unit[0] * r, unit[1] * r, unit[2] * r}, 1)
			add(fmt.Sprintf("bound %g norm %g", bound, f), bound, []float64{unit[0] * bound * f, unit[1] * bound * f, unit[2] * bound * f}, 1)
		}
		add("nan", bound, []float64{0, math.NaN(), 0}, 1)
		add("inf", bound, []float64{math.Inf(-1), 0, 0}, 1)
		add("overflow", bound, []float64{1e200, 1e200, 0}, 1e-300)
		add("c nan", bound, []float64{0.1, 0, 0}, math.NaN())
		add("c inf", bound, []float64{0, 0, 0}, math.Inf(1))
		add("c zero", bound, []float64{1e200, 0, 0}, 0)
		add("c negative", bound, []float64{0.5, 0.5, 0}, -1)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr, err := newTree(4, d, c.bound)
			if err != nil {
				t.Fatal(err)
			}
			// Accumulate: its one-pass route against the full loop.
			got := tr.checkAtom(c.v)
			var want error
			for k, x := range c.v {
				if math.IsNaN(x) || math.IsInf(x, 0) {
					want = fmt.Errorf(": coordinate %d is %v", k, x)
					break
				}
			}
			if n := vec.Norm(c.v); want == nil && n > c.bound {
				want = fmt.Errorf(" has norm %v above the bound %v", n, c.bound)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("checkAtom: %v, full check %v", got, want)
			}
			// AccumulateOuter of the 2-vector (v[0], v[2]) against the full check.
			to, _ := newTree(4, SymDim(2), c.bound)
			v2 := []float64{c.v[0], c.v[2]}
			want = nil
			for k, x := range v2 { // the full check, in the order of its messages
				if math.IsNaN(x) || math.IsInf(x, 0) {
					want = fmt.Errorf("tree: atom 1: coordinate %d is %v", k, x)
					break
				}
			}
			if nv := vec.Norm(v2); want == nil && (math.IsNaN(c.c) || math.IsInf(c.c, 0)) {
				want = fmt.Errorf("tree: atom 1: scale %v", c.c)
			} else if n := math.Abs(c.c) * nv * nv; want == nil && n > c.bound {
				want = fmt.Errorf("tree: atom 1 has norm %v above the bound %v", n, c.bound)
			}
			if got := to.AccumulateOuter(v2, c.c); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("AccumulateOuter: %v, full check %v", got, want)
			}
		})
	}
}
