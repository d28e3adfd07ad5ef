package scatter

import (
	"fmt"
	"math"
	"sync"
)

// wavelet is one Morlet filter ψ_{j,θ} in the Fourier domain: hat[r] is its
// spectrum on the padded grid subsampled by 2^r (r = 0 the full grid).
type wavelet struct {
	j, theta int
	hat      [][]float64
}

// Scattering is the order-2 scattering transform of images of one size:
// the filter bank, built once by New, and a pool of per-goroutine work
// buffers. Its methods are safe for concurrent use.
type Scattering struct {
	height, width int // image size
	mp, np        int // padded size
	j, l          int
	psi           []wavelet   // ordered by j, then θ (Kymatio's order)
	phi           [][]float64 // φ_J's spectrum at resolutions 0…J−1
	low           []lowKernel // φ_J in space at resolutions 0…J−1, for lowpass
	pairsFrom     [][][2]int  // pairsFrom[j]: pairs(psi, L, j)
	rowSrc        []int       // padded row → image row (reflection)
	colSrc        []int       // padded column → image column
	pool          sync.Pool   // *work
}

// New builds the scattering transform of height×width single-channel
// images with J scales and L angles (Tramèr & Boneh use J = 2, L = 8). It
// needs 2^J ≤ height, width and J ≥ 1, L ≥ 1; Kymatio's reflection padding
// also needs the padding, about 2^J pixels a side, to be narrower than the
// image.
func New(height, width, j, l int) (*Scattering, error) {
	if j < 1 || l < 1 || j > 8 {
		return nil, fmt.Errorf("scatter: need 1 ≤ J ≤ 8 and L ≥ 1, got J = %d, L = %d", j, l)
	}
	k := 1 << j
	if height < k || width < k {
		return nil, fmt.Errorf("scatter: image %d×%d is smaller than 2^J = %d", height, width, k)
	}
	s := &Scattering{height: height, width: width, j: j, l: l,
		mp: padded(height, j), np: padded(width, j)}
	if s.mp-height > 2*(height-1) || s.np-width > 2*(width-1) {
		return nil, fmt.Errorf("scatter: image %d×%d is too small to pad by reflection to %d×%d", height, width, s.mp, s.np)
	}
	s.rowSrc = reflect(height, s.mp)
	s.colSrc = reflect(width, s.np)
	s.buildFilters()
	for r := range s.j {
		s.low = append(s.low, s.lowpassKernel(r))
	}
	for j := range s.j {
		s.pairsFrom = append(s.pairsFrom, pairs(s.psi, l, j))
	}
	s.pool.New = func() any { return s.newWork() }
	return s, nil
}

// padded is Kymatio's compute_padding: the padded side, a multiple of 2^J
// with at least 2^(J−1) pixels of padding on each side.
func padded(m, j int) int {
	k := 1 << j
	return ((m+k)/k + 1) * k
}

// reflect maps each index of the padded side (length mp) to the image index
// (length m) it copies: (mp−m)/2 pixels before, the rest after, mirrored
// about the edge pixels as numpy's and PyTorch's "reflect" padding do.
func reflect(m, mp int) []int {
	before := (mp - m) / 2
	src := make([]int, mp)
	for i := range src {
		x := i - before
		if x < 0 {
			x = -x
		}
		if x >= m {
			x = 2*(m-1) - x
		}
		src[i] = x
	}
	return src
}

// buildFilters computes Kymatio's filter bank on the padded grid: ψ_{j,θ}
// a Morlet of width σ = 0.8·2^j, frequency ξ = 3π/(4·2^j), slant 4/L and
// angle θ = (⌊L/2⌋−1−t)·π/L for t = 0…L−1; φ_J a Gaussian of width
// 0.8·2^(J−1). ψ is needed at resolutions 0…min(j, J−2) (second-order
// filters act on first-order moduli subsampled by 2^j1, j1 ≤ J−2), φ at
// 0…J−1.
func (s *Scattering) buildFilters() {
	m, n := s.mp, s.np
	for j := range s.j {
		for t := range s.l {
			sigma := 0.8 * math.Pow(2, float64(j))
			theta := float64((s.l-2)/2-t) * math.Pi / float64(s.l) // Kymatio: int(L−L/2−1), truncated
			xi := 3.0 / 4.0 * math.Pi / math.Pow(2, float64(j))
			full := realDFT(m, n, morlet(m, n, sigma, theta, xi, 4.0/float64(s.l)))
			w := wavelet{j: j, theta: t}
			for r := 0; r < min(j+1, max(s.j-1, 1)); r++ {
				w.hat = append(w.hat, periodize(full, m, n, r))
			}
			s.psi = append(s.psi, w)
		}
	}
	full := realDFT(m, n, gabor(m, n, 0.8*math.Pow(2, float64(s.j-1)), 0, 0, 1))
	for r := range s.j {
		s.phi = append(s.phi, periodize(full, m, n, r))
	}
}

// lowKernel is φ_J at one resolution as lowpass uses it: rows[a·R+p] =
// f((k·(a+1) − p) mod R), f φ's row factor in space, R the rows at that
// resolution and k the remaining subsampling; cols likewise.
type lowKernel struct {
	rows, cols []float64
}

// lowpassKernel factors φ_J's spectrum at resolution 2^r as A(k)·B(l) (a
// Gaussian and its crops are separable: A(k) = φ̂(k,0)/φ̂(0,0), B(l) =
// φ̂(0,l)), takes each factor back to space by a direct inverse DFT, and
// lays the results out as lowpass's matrices.
func (s *Scattering) lowpassKernel(r int) lowKernel {
	rows, cols := s.mp>>r, s.np>>r
	phi := s.phi[r]
	a, b := make([]float64, rows), make([]float64, cols)
	for k := range rows {
		a[k] = phi[k*cols] / phi[0]
	}
	copy(b, phi[:cols])
	k := 1 << (s.j - r)
	oh, ow := s.OutSize()
	return lowKernel{rows: sampled(idft(a), k, oh), cols: sampled(idft(b), k, ow)}
}

// idft returns the real part of the normalised inverse DFT of a.
func idft(a []float64) []float64 {
	n := len(a)
	out := make([]float64, n)
	for p := range n {
		var sum float64
		for k, v := range a {
			sum += v * math.Cos(2*math.Pi*float64(k*p%n)/float64(n))
		}
		out[p] = sum / float64(n)
	}
	return out
}

// sampled returns the out×n matrix M[a][p] = f((k·(a+1) − p) mod n): row a
// of M·u is (u⊛f) at pixel k·(a+1), output a of the cropped, subsampled
// convolution.
func sampled(f []float64, k, out int) []float64 {
	n := len(f)
	m := make([]float64, out*n)
	for a := range out {
		for p := range n {
			m[a*n+p] = f[((k*(a+1)-p)%n+n)%n]
		}
	}
	return m
}

// Channels returns the number of scattering channels,
// 1 + J·L + L²·J(J−1)/2 (81 for J = 2, L = 8).
func (s *Scattering) Channels() int {
	return 1 + s.j*s.l + s.l*s.l*s.j*(s.j-1)/2
}

// OutSize returns the height and width of each channel: the padded size
// over 2^J less the cropped one-pixel border (7×7 for 28×28, J = 2).
func (s *Scattering) OutSize() (h, w int) {
	return s.mp>>s.j - 2, s.np>>s.j - 2
}

// Len returns the length of one image's output, Channels()·h·w.
func (s *Scattering) Len() int {
	h, w := s.OutSize()
	return s.Channels() * h * w
}
