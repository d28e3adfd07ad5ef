package scatter

import (
	"math"
	"math/cmplx"
	"math/rand/v2"
	"testing"
)

// spatial returns the r×c filter whose DFT is the real spectrum f, by a
// direct inverse DFT (no FFT), for the direct-convolution reference.
func spatial(f []float64, r, c int) []complex128 {
	out := make([]complex128, r*c)
	for a := range r {
		for b := range c {
			var sum complex128
			for k := range r {
				for l := range c {
					ph := 2 * math.Pi * (float64(a*k)/float64(r) + float64(b*l)/float64(c))
					sum += complex(f[k*c+l], 0) * cmplx.Exp(complex(0, ph))
				}
			}
			out[a*c+b] = sum / complex(float64(r*c), 0)
		}
	}
	return out
}

// circConv returns the circular convolution x⋆f on an r×c grid, summed
// directly.
func circConv(x []float64, f []complex128, r, c int) []complex128 {
	y := make([]complex128, r*c)
	for a := range r {
		for b := range c {
			var sum complex128
			for p := range r {
				for q := range c {
					sum += complex(x[p*c+q], 0) * f[((a-p+r)%r)*c+(b-q+c)%c]
				}
			}
			y[a*c+b] = sum
		}
	}
	return y
}

// every returns y (r×c) sampled at every k-th row and column.
func every(y []complex128, r, c, k int) []complex128 {
	out := make([]complex128, 0, (r/k)*(c/k))
	for a := 0; a < r; a += k {
		for b := 0; b < c; b += k {
			out = append(out, y[a*c+b])
		}
	}
	return out
}

func abs(y []complex128) []float64 {
	out := make([]float64, len(y))
	for i, v := range y {
		out[i] = cmplx.Abs(v)
	}
	return out
}

// reference computes the transform the slow, obvious way: reflection
// padding by index arithmetic, spatial filters, convolutions summed
// directly, subsampling by taking every 2^k-th pixel.
func reference(s *Scattering, img []float64) []float64 {
	mp, np, J := s.mp, s.np, s.j
	xp := make([]float64, mp*np)
	mirror := func(i, m int) int {
		i -= (s.padded(m) - m) / 2
		if i < 0 {
			i = -i
		}
		if i >= m {
			i = 2*(m-1) - i
		}
		return i
	}
	for a := range mp {
		for b := range np {
			xp[a*np+b] = img[mirror(a, s.height)*s.width+mirror(b, s.width)]
		}
	}
	size := func(r int) (int, int) { return mp >> r, np >> r }
	var out []float64
	emit := func(u []float64, r int) {
		rr, cc := size(r)
		phi := spatial(s.phi[r], rr, cc)
		y := every(circConv(u, phi, rr, cc), rr, cc, 1<<(J-r))
		cs := np >> J
		for a := 1; a < mp>>J-1; a++ {
			for b := 1; b < cs-1; b++ {
				out = append(out, real(y[a*cs+b]))
			}
		}
	}
	emit(xp, 0)
	var u1s [][]float64
	for _, p := range s.psi {
		rr, cc := size(0)
		u1 := abs(every(circConv(xp, spatial(p.hat[0], rr, cc), rr, cc), rr, cc, 1<<p.j))
		u1s = append(u1s, u1)
		emit(u1, p.j)
	}
	for n1, p1 := range s.psi {
		for _, p2 := range s.psi {
			if p2.j <= p1.j {
				continue
			}
			rr, cc := size(p1.j)
			u2 := abs(every(circConv(u1s[n1], spatial(p2.hat[p1.j], rr, cc), rr, cc), rr, cc, 1<<(p2.j-p1.j)))
			emit(u2, p2.j)
		}
	}
	return out
}

func (s *Scattering) padded(m int) int { return padded(m, s.j) }

func randomImage(rng *rand.Rand, h, w int) []float64 {
	x := make([]float64, h*w)
	for i := range x {
		x[i] = rng.Float64()
	}
	return x
}

func TestMatchesDirectConvolution(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct{ h, w, j, l int }{
		{8, 8, 2, 8}, {16, 16, 2, 8}, {12, 10, 2, 6}, {16, 16, 3, 4}, {9, 11, 2, 5},
	} {
		s, err := New(tc.h, tc.w, tc.j, tc.l)
		if err != nil {
			t.Fatal(err)
		}
		img := randomImage(rng, tc.h, tc.w)
		got, err := s.Transform(nil, img)
		if err != nil {
			t.Fatal(err)
		}
		want := reference(s, img)
		if len(got) != len(want) {
			t.Fatalf("%v: %d coefficients, reference %d", tc, len(got), len(want))
		}
		worst := 0.0
		for i := range got {
			worst = max(worst, math.Abs(got[i]-want[i]))
		}
		t.Logf("%v: max difference %.2g, S0[0] = %.4g", tc, worst, got[0])
		if worst > 1e-9 {
			t.Errorf("%v: FFT path differs from direct convolution by %g", tc, worst)
		}
	}
}
