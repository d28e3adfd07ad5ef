package kanon

import (
	"errors"
	"math"
	"math/big"
	"strings"
	"testing"
)

const refPrec = 320

// bigExp returns e^x by its Taylor series at refPrec bits (|x| ≤ a few).
func bigExp(x float64) *big.Float {
	bx := new(big.Float).SetPrec(refPrec).SetFloat64(x)
	sum := new(big.Float).SetPrec(refPrec).SetInt64(1)
	term := new(big.Float).SetPrec(refPrec).SetInt64(1)
	for i := int64(1); i < 400; i++ {
		term.Mul(term, bx)
		term.Quo(term, new(big.Float).SetPrec(refPrec).SetInt64(i))
		sum.Add(sum, term)
	}
	return sum
}

// bigPow returns b^n for n ≥ 0 by repeated squaring.
func bigPow(b *big.Float, n int) *big.Float {
	out := new(big.Float).SetPrec(refPrec).SetInt64(1)
	p := new(big.Float).SetPrec(refPrec).Set(b)
	for ; n > 0; n >>= 1 {
		if n&1 == 1 {
			out.Mul(out, p)
		}
		p.Mul(p, p)
	}
	return out
}

// refDelta is an independent high-precision evaluation of Theorem 5 by the
// definition: γ from a 320-bit e^ε, n_m = ⌈k/γ − 1⌉, and for every n in
// [n_m, n_m + window] the exact tail Σ_{j>γn} C(n,j)β^j(1−β)^{n−j} in
// big.Float with C(n, j) an exact big.Int. It returns the maximum and its n.
func refDelta(beta float64, k int, eps float64, window int) (*big.Float, int) {
	one := new(big.Float).SetPrec(refPrec).SetInt64(1)
	b := new(big.Float).SetPrec(refPrec).SetFloat64(beta)
	q := new(big.Float).SetPrec(refPrec).Sub(one, b)
	e := bigExp(eps)
	gamma := new(big.Float).SetPrec(refPrec).Sub(e, one)
	gamma.Add(gamma, b).Quo(gamma, e)
	nmF := new(big.Float).SetPrec(refPrec).Quo(new(big.Float).SetPrec(refPrec).SetInt64(int64(k)), gamma)
	nmF.Sub(nmF, one)
	nm := ceilInt(nmF)
	best, arg := new(big.Float).SetPrec(refPrec), nm
	for n := nm; n <= nm+window; n++ {
		gn := new(big.Float).SetPrec(refPrec).Mul(gamma, new(big.Float).SetPrec(refPrec).SetInt64(int64(n)))
		j0 := floorInt(gn) + 1
		tail := new(big.Float).SetPrec(refPrec)
		for j := j0; j <= n; j++ {
			c := new(big.Float).SetPrec(refPrec).SetInt(new(big.Int).Binomial(int64(n), int64(j)))
			c.Mul(c, bigPow(b, j)).Mul(c, bigPow(q, n-j))
			tail.Add(tail, c)
		}
		if tail.Cmp(best) > 0 {
			best, arg = tail, n
		}
	}
	return best, arg
}

func floorInt(x *big.Float) int {
	i, _ := x.Int(nil) // truncates toward zero; x ≥ 0 here
	return int(i.Int64())
}

func ceilInt(x *big.Float) int {
	i := floorInt(x)
	if new(big.Float).SetPrec(refPrec).SetInt64(int64(i)).Cmp(x) < 0 {
		i++
	}
	return i
}

// TestDeltaHighPrecision checks δ and the n where it peaks against
// the independent 320-bit evaluation, to 1e-9 relative, from δ ≈ 0.1 down
// past 1e-27 (and to 1e-92, where a float64 sum would underflow).
func TestDeltaHighPrecision(t *testing.T) {
	cases := []struct {
		name   string
		beta   float64
		k      int
		eps    float64
		window int
	}{
		{"beta0.1-k1", 0.1, 1, 0.7, 60},
		{"beta0.1-k20-eps0.5", 0.1, 20, 0.5, 150},
		{"beta0.1-k20-eps1", 0.1, 20, 1, 150},
		{"beta0.05-k20", 0.05, 20, 0.6, 150},
		{"beta0.01-k20-1e-27", 0.01, 20, 0.51, 150},
		{"beta0.3-k100", 0.3, 100, 0.86, 200},
		{"beta0.6-k100-peak-past-nm", 0.6, 100, 1.416290731874155, 200},
		{"beta0.6-k500-peak-past-nm", 0.6, 500, 1.416290731874155, 300},
		{"beta0.9-k200", 0.9, 200, 2.8, 200},
		{"beta0.9-k500-1e-19", 0.9, 500, 2.8, 300},
		{"beta0.2-k60-1e-19", 0.2, 60, 0.75, 200},
		{"beta0.1-k200-1e-90", 0.1, 200, 0.6, 120},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Delta(c.beta, c.k, c.eps)
			if err != nil {
				t.Fatal(err)
			}
			want, arg := refDelta(c.beta, c.k, c.eps, c.window)
			if arg == got.NMin+c.window {
				t.Fatalf("reference peak at the window's edge n = %d: widen it", arg)
			}
			w, _ := want.Float64()
			// Compare in log space so values below float64's range count too.
			lw := bigLog(want)
			if rel := math.Abs(math.Expm1(got.LogDelta - lw)); rel > 1e-9 {
				t.Errorf("delta = %v (ln %v), want %v (ln %v): relative error %v", got.Delta, got.LogDelta, w, lw, rel)
			}
			if got.NMax != arg {
				t.Errorf("n_max = %d, want %d", got.NMax, arg)
			}
		})
	}
}

// bigLog returns ln x for x > 0 at float64 accuracy: mantissa and exponent.
func bigLog(x *big.Float) float64 {
	m := new(big.Float)
	exp := x.MantExp(m)
	f, _ := m.Float64()
	return math.Log(f) + float64(exp)*math.Ln2
}

// TestPeakNotAtNMin pins the point of the issue: the maximum over
// n ≥ n_m is not always at n_m.
func TestPeakNotAtNMin(t *testing.T) {
	r, err := Delta(0.6, 100, 1.416290731874155)
	if err != nil {
		t.Fatal(err)
	}
	if r.NMax == r.NMin {
		t.Fatalf("peak at n_m = %d; expected past it", r.NMin)
	}
	atNm := math.Exp(logUpperTail(r.NMin, int(math.Floor(float64(r.NMin)*(-math.Expm1(math.Log1p(-0.6)-1.416290731874155))))+1, math.Log(0.6), math.Log1p(-0.6)))
	if !(r.Delta > atNm) {
		t.Fatalf("delta %v should exceed the tail at n_m, %v", r.Delta, atNm)
	}
}

func TestBoundInverses(t *testing.T) {
	t.Run("epsilon", func(t *testing.T) {
		for _, c := range []struct {
			beta  float64
			k     int
			delta float64
		}{{0.1, 20, 1e-6}, {0.3, 100, 1e-10}, {0.05, 5, 1e-3}, {0.6, 200, 1e-20}} {
			r, err := Epsilon(c.beta, c.k, c.delta)
			if err != nil {
				t.Fatal(err)
			}
			if r.Delta > c.delta {
				t.Errorf("%+v: delta %v above target", c, r.Delta)
			}
			if below := r.Epsilon * (1 - 1e-9); below >= MinEpsilon(c.beta) {
				if s, _ := Delta(c.beta, c.k, below); s.Delta <= c.delta {
					t.Errorf("%+v: a smaller epsilon %v also meets the target (delta %v)", c, below, s.Delta)
				}
			}
		}
	})
	t.Run("k", func(t *testing.T) {
		for _, c := range []struct{ beta, eps, delta float64 }{{0.1, 1, 1e-6}, {0.3, 1, 1e-10}, {0.6, 2, 1e-30}, {0.01, 0.1, 1e-8}} {
			r, err := SmallestK(c.beta, c.eps, c.delta)
			if err != nil {
				t.Fatal(err)
			}
			if r.Delta > c.delta {
				t.Errorf("%+v: delta %v above target", c, r.Delta)
			}
			if r.K > 1 {
				if s, _ := Delta(c.beta, r.K-1, c.eps); s.Delta <= c.delta {
					t.Errorf("%+v: k = %d also meets the target", c, r.K-1)
				}
			}
		}
	})
	t.Run("beta", func(t *testing.T) {
		for _, c := range []struct {
			k          int
			eps, delta float64
		}{{20, 1, 1e-6}, {100, 0.5, 1e-10}, {500, 1, 1e-30}} {
			r, err := LargestBeta(c.k, c.eps, c.delta)
			if err != nil {
				t.Fatal(err)
			}
			if r.Delta > c.delta || r.Epsilon < c.eps*(1-1e-12) || r.Epsilon > c.eps*(1+1e-12) {
				t.Errorf("%+v: got %+v", c, r)
			}
			if up := r.Beta * (1 + 1e-9); up < -math.Expm1(-c.eps) {
				if s, _ := Delta(up, c.k, c.eps); s.Delta <= c.delta {
					t.Errorf("%+v: a larger beta %v also meets the target", c, up)
				}
			}
		}
	})
}

// TestBoundMonotone checks what the table's reading relies on: δ never
// grows with k, nor with ε at fixed (β, k).
func TestBoundMonotone(t *testing.T) {
	for _, beta := range []float64{0.05, 0.1, 0.3, 0.6} {
		prev := 1.0
		for k := 1; k <= 300; k += 7 {
			r, err := Delta(beta, k, MinEpsilon(beta)+0.3)
			if err != nil {
				t.Fatal(err)
			}
			if r.Delta > prev {
				t.Fatalf("beta %v: delta grew from %v to %v at k = %d", beta, prev, r.Delta, k)
			}
			prev = r.Delta
		}
		prev = 1
		for i := 0; i <= 300; i++ {
			r, _ := Delta(beta, 50, MinEpsilon(beta)+float64(i)*0.005)
			if r.Delta > prev*(1+1e-12) {
				t.Fatalf("beta %v: delta grew from %v to %v at epsilon %v", beta, prev, r.Delta, r.Epsilon)
			}
			prev = r.Delta
		}
	}
}

// TestLargeEpsilon checks the limit ε → ∞, where 1 − γ underflows a
// naive γ: δ tends to β^k (n_m falls to k, and the tail there is j = n), and a
// target below it is refused at once.
func TestLargeEpsilon(t *testing.T) {
	for _, eps := range []float64{40, 200, 1e4} {
		r, err := Delta(0.5, 5, eps)
		if err != nil {
			t.Fatal(err)
		}
		if r.NMin != 5 || math.Abs(r.Delta-0.03125) > 1e-12 {
			t.Errorf("epsilon %v: %+v, want n_m = 5 and delta = 0.5^5", eps, r)
		}
	}
	_, err := Epsilon(0.6, 20, 1e-6)
	if !errors.Is(err, ErrNoGuarantee) || !strings.Contains(err.Error(), "least any epsilon") || !strings.Contains(err.Error(), "beta^k") {
		t.Fatalf("unreachable target: %v", err)
	}
}

func TestBoundErrors(t *testing.T) {
	cases := []struct {
		name     string
		beta     float64
		k        int
		eps      float64
		noGuaran bool
	}{
		{"k0", 0.1, 0, 1, false},
		{"k-negative", 0.1, -3, 1, false},
		{"beta0", 0, 5, 1, false},
		{"beta-negative", -0.1, 5, 1, false},
		{"beta-above-1", 1.5, 5, 1, false},
		{"beta-nan", math.NaN(), 5, 1, false},
		{"beta1", 1, 5, 1, true},
		{"eps-below-min", 0.5, 5, 0.5, true},
		{"eps0", 0.1, 5, 0, false},
		{"eps-inf", 0.1, 5, math.Inf(1), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Delta(c.beta, c.k, c.eps)
			if err == nil {
				t.Fatal("accepted")
			}
			if errors.Is(err, ErrNoGuarantee) != c.noGuaran {
				t.Fatalf("ErrNoGuarantee = %v, want %v (%v)", !c.noGuaran, c.noGuaran, err)
			}
		})
	}
	if _, err := Epsilon(0.1, 5, 0); err == nil {
		t.Error("delta 0 accepted")
	}
	if _, err := SmallestK(0.1, 1, 1.5); err == nil {
		t.Error("delta 1.5 accepted")
	}
	if _, err := LargestBeta(0, 1, 1e-6); err == nil {
		t.Error("k 0 accepted")
	}
}

// FuzzDelta feeds arbitrary public inputs: every call either errors
// or returns 0 ≤ δ ≤ 1 with n_max ≥ n_m. Rates below 1e-3 and k above 1e5
// are folded in so that one call stays fast.
func FuzzDelta(f *testing.F) {
	f.Add(0.1, 20, 1.0)
	f.Add(0.6, 100, 1.4)
	f.Add(1.0, 1, 5.0)
	f.Add(0.5, 0, 0.1)
	f.Fuzz(func(t *testing.T, beta float64, k int, eps float64) {
		if beta > 0 && beta < 1e-3 {
			beta += 1e-3
		}
		k %= 100_000
		r, err := Delta(beta, k, eps)
		if err != nil {
			return
		}
		if !(r.Delta >= 0 && r.Delta <= 1) || r.NMax < r.NMin || math.IsNaN(r.LogDelta) {
			t.Fatalf("beta %v k %d eps %v: %+v", beta, k, eps, r)
		}
	})
}
