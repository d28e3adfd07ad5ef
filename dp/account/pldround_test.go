package account

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// bigPrec is ample for sums of products of float64s within 2⁻⁴⁰⁰ of 1
// (the test masses' range): the reference is exact to far below the
// bounds tested.
const bigPrec = 1024

// bigConvolve returns the convolution of a and b in big.Float (exact to
// bigPrec bits).
func bigConvolve(a, b []*big.Float) []*big.Float {
	out := make([]*big.Float, len(a)+len(b)-1)
	for i := range out {
		out[i] = new(big.Float).SetPrec(bigPrec)
	}
	t := new(big.Float).SetPrec(bigPrec)
	for i, x := range a {
		for j, y := range b {
			out[i+j].Add(out[i+j], t.Mul(x, y))
		}
	}
	return out
}

func toBig(m []float64) []*big.Float {
	out := make([]*big.Float, len(m))
	for i, x := range m {
		out[i] = new(big.Float).SetPrec(bigPrec).SetFloat64(x)
	}
	return out
}

// maxBigErr returns max_i |got_i − want_i|.
func maxBigErr(got []float64, want []*big.Float) float64 {
	var worst float64
	d := new(big.Float).SetPrec(bigPrec)
	for i, w := range want {
		d.Sub(new(big.Float).SetPrec(bigPrec).SetFloat64(got[i]), w)
		e, _ := d.Float64()
		worst = math.Max(worst, math.Abs(e))
	}
	return worst
}

// testMasses returns n non-negative masses of total ≤ 1 shaped like a
// privacy-loss grid (a peak with Gaussian tails, some far below the
// peak) or, if flat, uniform random.
func testMasses(r *rand.Rand, n int, flat bool) []float64 {
	m := make([]float64, n)
	var s float64
	for i := range m {
		x := r.Float64()
		if !flat {
			z := (float64(i) - float64(n)/3) / (float64(n) / 10)
			x *= math.Exp(-z * z / 2)
		}
		m[i] = x
		s += x
	}
	for i := range m {
		m[i] /= s * 1.0000001
	}
	return m
}

func TestFFTConvolveErrorCertified(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		name   string
		na, nb int
		flat   bool
	}{
		{"peaked 300x200", 300, 200, false},
		{"flat 257x129", 257, 129, true},
		{"peaked 640x17 (length 3·2^a)", 640, 17, false},
		{"peaked 600x41 (length 5·2^a)", 600, 41, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, b := testMasses(r, c.na, c.flat), testMasses(r, c.nb, c.flat)
			n := c.na + c.nb - 1
			got, bound := fftConvolve(a, b, n)
			err := maxBigErr(got, bigConvolve(toBig(a), toBig(b)))
			t.Logf("FFT length %d: measured error %.3g, certified %.3g (ratio %.2g)", fftSize(n), err, bound, err/bound)
			if !(err <= bound) {
				t.Fatalf("measured error %v exceeds the certified bound %v", err, bound)
			}
			if bound > 1e-12 {
				t.Fatalf("certified bound %v is useless", bound)
			}
		})
	}
}

func TestFFTPowerErrorCertified(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct {
		name string
		n, k int
		flat bool
	}{
		{"peaked 64, k=9", 64, 9, false},
		{"flat 40, k=2", 40, 2, true},
		{"peaked 32, k=16", 32, 16, false},
		{"peaked 24, k=31", 24, 31, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := testMasses(r, c.n, c.flat)
			width := c.k*(c.n-1) + 1
			got, bound := fftPower(grid{mass: m}, c.k, 0, width)
			want := toBig(m)
			for range c.k - 1 {
				want = bigConvolve(want, toBig(m))
			}
			err := maxBigErr(got, want)
			t.Logf("FFT length %d: measured error %.3g, certified %.3g (ratio %.2g)", fftSize(width), err, bound, err/bound)
			if !(err <= bound) {
				t.Fatalf("measured error %v exceeds the certified bound %v", err, bound)
			}
		})
	}
}

// TestFFTDirectErrorCertified checks the direct convolution's bound.
func TestFFTDirectErrorCertified(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	a, b := testMasses(r, 300, false), testMasses(r, 200, true)
	g, err := convolve(grid{mass: a}, grid{mass: b}, 1e-3)
	if err != nil {
		t.Fatal(err)
	}
	if e := maxBigErr(g.mass, bigConvolve(toBig(a), toBig(b))); !(e <= g.noise) {
		t.Fatalf("measured error %v exceeds the certified bound %v", e, g.noise)
	}
}

// bigPi is π to 80 digits.
var bigPi, _ = new(big.Float).SetPrec(bigPrec).SetString("3.14159265358979323846264338327950288419716939937510582097494459230781640628620899")

// bigSinCos returns sin x and cos x by their Taylor series (|x| < 7).
func bigSinCos(x *big.Float) (sin, cos float64) {
	s := new(big.Float).SetPrec(bigPrec)
	c := new(big.Float).SetPrec(bigPrec).SetInt64(1)
	term := new(big.Float).SetPrec(bigPrec).SetInt64(1)
	for j := 1; j < 80; j++ {
		term.Mul(term, x)
		term.Quo(term, new(big.Float).SetInt64(int64(j)))
		if j%2 == 1 {
			if j%4 == 1 {
				s.Add(s, term)
			} else {
				s.Sub(s, term)
			}
		} else if j%4 == 2 {
			c.Sub(c, term)
		} else {
			c.Add(c, term)
		}
	}
	sin, _ = s.Float64()
	cos, _ = c.Float64()
	return sin, cos
}

// TestTwiddleError checks fftTwiddleErr's assumption about math.Cos and
// math.Sin at the arguments gonum's FFTPACK uses: every twiddle
// cos/sin(fi·(ld·(2π/n))) is within fftTwiddleErr of the exact
// e^{2πi·fi·ld/n}.
func TestTwiddleError(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	var worst float64
	for _, n := range []int{1 << 12, 3 << 15, 5 << 18, 1 << 22} {
		argh := 2 * math.Pi / float64(n)
		for range 150 {
			ld := 1 + r.IntN(n/4)
			fi := 1 + r.IntN(max(1, (n-1)/ld))
			arg := float64(fi) * (float64(ld) * argh)
			exact := new(big.Float).SetPrec(bigPrec).Mul(bigPi, big.NewFloat(2))
			exact.Mul(exact, new(big.Float).SetInt64(int64(fi)*int64(ld)))
			exact.Quo(exact, new(big.Float).SetInt64(int64(n)))
			s, c := bigSinCos(exact)
			e := math.Hypot(math.Cos(arg)-c, math.Sin(arg)-s)
			worst = math.Max(worst, e)
		}
	}
	t.Logf("worst twiddle error %.3g (%.1f u), allowed %.3g", worst, worst/unitRoundoff, fftTwiddleErr)
	if !(worst <= fftTwiddleErr) {
		t.Fatalf("twiddle error %v exceeds fftTwiddleErr %v", worst, fftTwiddleErr)
	}
}

func TestFFTPasses(t *testing.T) {
	for _, c := range []struct{ n, want int }{{1, 0}, {2, 1}, {4, 1}, {8, 2}, {3 << 10, 6}, {5 << 11, 7}, {1 << 22, 11}, {7, 1}} {
		if got := fftPasses(c.n); got != c.want {
			t.Errorf("fftPasses(%d) = %d, want %d", c.n, got, c.want)
		}
	}
	// The documented constant: ρ ≤ 7.2e-14 for every length a grid allows.
	for _, n := range []int{1 << 22, 3 << 20, 5 << 19} {
		if rho := fftCoeffErr(n); rho > 7.2e-14 {
			t.Errorf("fftCoeffErr(%d) = %v, documented ≤ 7.2e-14", n, rho)
		}
	}
}

// TestTiltedPowerErrorCertified: the tilted k-fold power, untilted, is
// within its allowance of the exact k-fold (math/big) on its window: the
// upper grid above it at most by the allowance, never below it by more,
// and the lower grid the other way.
func TestTiltedPowerErrorCertified(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	m := testMasses(r, 48, false)
	const k, step = 9, 0.01
	g := grid{lo: -20, mass: m}
	want := toBig(m)
	for range k - 1 {
		want = bigConvolve(want, toBig(m))
	}
	for _, upper := range []bool{true, false} {
		tg, err := tiltedPower(g, k, step, 3, 1.5, upper)
		if err != nil {
			t.Fatal(err)
		}
		worst := math.Inf(-1)
		for i, x := range tg.mass {
			exact, _ := want[tg.lo+i-k*g.lo].Float64()
			// The shortfall: by how much the exact mass passes the side
			// the grid bounds, in allowances (≤ 1 is sound).
			short := (exact - x) / tg.nz(i, step)
			if !upper {
				short = -short
			}
			if !(short <= 1) {
				t.Fatalf("upper=%v: entry %d: exact %v, got %v, allowance %v", upper, i, exact, x, tg.nz(i, step))
			}
			worst = math.Max(worst, short)
		}
		t.Logf("upper=%v: %d entries, worst shortfall %.2g allowances (≤ 1 is sound)", upper, len(tg.mass), worst)
	}
}
