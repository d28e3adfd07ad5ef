package scatter

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestShapeMNIST(t *testing.T) {
	s, err := New(28, 28, 2, 8)
	if err != nil {
		t.Fatal(err)
	}
	if h, w := s.OutSize(); s.Channels() != 81 || h != 7 || w != 7 || s.Len() != 81*49 {
		t.Errorf("28×28, J = 2, L = 8: %d channels of %d×%d, want 81 of 7×7", s.Channels(), h, w)
	}
	if s.mp != 36 || s.np != 36 {
		t.Errorf("padded to %d×%d, Kymatio pads to 36×36", s.mp, s.np)
	}
	if _, err := s.Transform(nil, make([]float64, 27*28)); err == nil {
		t.Error("a 27×28 image was accepted")
	}
}

func TestNewRejects(t *testing.T) {
	for _, tc := range []struct{ h, w, j, l int }{
		{28, 28, 0, 8}, {28, 28, 2, 0}, {3, 28, 2, 8}, {4, 4, 2, 8},
	} {
		if _, err := New(tc.h, tc.w, tc.j, tc.l); err == nil {
			t.Errorf("New%v accepted", tc)
		}
	}
}

// littlewoodPaley returns, at each frequency of the padded grid,
// |φ̂(ω)|² + ½Σ_λ(|ψ̂_λ(ω)|² + |ψ̂_λ(−ω)|²): the fraction of a real
// signal's energy at ω that one layer (low pass and all wavelets) keeps.
func littlewoodPaley(s *Scattering) []float64 {
	m, n := s.mp, s.np
	a := make([]float64, m*n)
	for k := range m {
		for l := range n {
			i, ni := k*n+l, ((m-k)%m)*n+(n-l)%n
			a[i] = s.phi[0][i] * s.phi[0][i]
			for _, p := range s.psi {
				a[i] += (p.hat[0][i]*p.hat[0][i] + p.hat[0][ni]*p.hat[0][ni]) / 2
			}
		}
	}
	return a
}

func TestFilterNormalisation(t *testing.T) {
	s, err := New(28, 28, 2, 8)
	if err != nil {
		t.Fatal(err)
	}
	if d := math.Abs(s.phi[0][0] - 1); d > 1e-12 {
		t.Errorf("φ̂(0) = %v, want 1", s.phi[0][0])
	}
	for _, p := range s.psi {
		if math.Abs(p.hat[0][0]) > 1e-12 {
			t.Errorf("ψ̂_{%d,%d}(0) = %v, want 0 (Morlet wavelets have zero mean)", p.j, p.theta, p.hat[0][0])
		}
	}
	lp := littlewoodPaley(s)
	lo, hi := math.Inf(1), 0.0
	for _, v := range lp {
		lo, hi = min(lo, v), max(hi, v)
	}
	// One layer never adds energy (hi ≤ 1: non-expansive, so the whole
	// transform is) and loses at most ~88% of it at any frequency of the
	// padded grid (lo ≈ 0.12, near the Nyquist corners the L = 8 wavelets
	// cover least).
	t.Logf("Littlewood–Paley sum in [%.4f, %.4f]", lo, hi)
	if hi > 1+1e-6 || lo < 0.1 {
		t.Errorf("Littlewood–Paley sum in [%.4f, %.4f], want within [0.1, 1]", lo, hi)
	}
}

// blob returns a smooth digit-like image: a ring of Gaussian strokes in
// the middle of an h×w frame with a zero border of at least border pixels.
func blob(rng *rand.Rand, h, w, border int) []float64 {
	x := make([]float64, h*w)
	for range 6 {
		cy := float64(border) + 2 + rng.Float64()*float64(h-2*border-4)
		cx := float64(border) + 2 + rng.Float64()*float64(w-2*border-4)
		for i := border; i < h-border; i++ {
			for j := border; j < w-border; j++ {
				d := (float64(i)-cy)*(float64(i)-cy) + (float64(j)-cx)*(float64(j)-cx)
				x[i*w+j] += math.Exp(-d / 4)
			}
		}
	}
	return x
}

func norm2(x []float64) float64 {
	var s float64
	for _, v := range x {
		s += v * v
	}
	return s
}

// TestEnergy checks that the transform nearly conserves the energy of a
// digit-like image: each coefficient stands for 2^J×2^J pixels, so
// 4^J‖Sx‖² is comparable with ‖x‖². It cannot exceed it (non-expansive
// filters; the image's zero border makes the padding add nothing) and
// keeps most of it (measured 0.78–0.87; the rest is in orders above 2 and
// in the frequencies the wavelets cover partly).
func TestEnergy(t *testing.T) {
	s, _ := New(28, 28, 2, 8)
	rng := rand.New(rand.NewPCG(3, 4))
	for range 5 {
		x := blob(rng, 28, 28, 5)
		sx, _ := s.Transform(nil, x)
		r := 16 * norm2(sx) / norm2(x)
		if r < 0.7 || r > 1 {
			t.Errorf("16‖Sx‖²/‖x‖² = %.4f, want within [0.7, 1]", r)
		}
	}
}

func shift(x []float64, h, w, dy, dx int) []float64 {
	y := make([]float64, h*w)
	for i := range h {
		for j := range w {
			if si, sj := i-dy, j-dx; si >= 0 && si < h && sj >= 0 && sj < w {
				y[i*w+j] = x[si*w+sj]
			}
		}
	}
	return y
}

func dist(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += (a[i] - b[i]) * (a[i] - b[i])
	}
	return math.Sqrt(s)
}

// TestTranslationInvariance checks the invariance to translations small
// against 2^J = 4 pixels: shifting a digit-like image by 1 or 2 pixels
// changes its scattering coefficients, relatively, much less than its
// pixels (the non-invariant baseline). Measured: ratio 0.42–0.68.
func TestTranslationInvariance(t *testing.T) {
	s, _ := New(28, 28, 2, 8)
	rng := rand.New(rand.NewPCG(5, 6))
	var sum float64
	var n int
	for range 5 {
		x := blob(rng, 28, 28, 5)
		sx, _ := s.Transform(nil, x)
		for _, d := range [][2]int{{1, 0}, {0, -1}, {0, 2}, {-2, 2}} {
			y := shift(x, 28, 28, d[0], d[1])
			sy, _ := s.Transform(nil, y)
			rs := dist(sx, sy) / math.Sqrt(norm2(sx))
			rx := dist(x, y) / math.Sqrt(norm2(x))
			if rs > 0.75*rx {
				t.Errorf("shift %v: ‖Sx−Sτx‖/‖Sx‖ = %.3f, not well below ‖x−τx‖/‖x‖ = %.3f", d, rs, rx)
			}
			sum += rs / rx
			n++
		}
	}
	if mean := sum / float64(n); mean > 0.65 {
		t.Errorf("mean ratio of relative changes (scattering / pixels) %.3f, want ≤ 0.65", mean)
	}
}

// BenchmarkScatter transforms one 28×28 image (J = 2, L = 8) per op;
// run with -cpu 1 and multiply by 70 000 for a whole MNIST.
func BenchmarkScatter(b *testing.B) {
	s, _ := New(28, 28, 2, 8)
	x := blob(rand.New(rand.NewPCG(7, 8)), 28, 28, 4)
	dst := make([]float64, s.Len())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Transform(dst, x); err != nil {
			b.Fatal(err)
		}
	}
}
