package scatter

import (
	"math"
	"math/cmplx"
)

// gabor returns the m×n Gabor filter g_σ(u)·e^{i ξ·u} of Kymatio's
// gabor_2d: an elliptic Gaussian envelope (axes σ and σ/slant, rotated by
// θ) modulated at frequency ξ along direction θ, periodised by summing 5×5
// copies of the grid (u = (x, y), x the row), and divided by 2πσ²/slant so
// that the plain Gaussian (ξ = 0, slant = 1) sums to 1.
func gabor(m, n int, sigma, theta, xi, slant float64) []complex128 {
	c, s := math.Cos(theta), math.Sin(theta)
	// curv = R·diag(1, slant²)·R⁻¹ / (2σ²)
	d := slant * slant
	a := (c*c + d*s*s) / (2 * sigma * sigma)
	b := (c*s - d*s*c) / (2 * sigma * sigma) // the off-diagonal entry; both appear in x·y
	e := (s*s + d*c*c) / (2 * sigma * sigma)
	g := make([]complex128, m*n)
	for ex := -2; ex <= 2; ex++ {
		for ey := -2; ey <= 2; ey++ {
			for i := range m {
				x := float64(i + ex*m)
				for j := range n {
					y := float64(j + ey*n)
					arg := complex(-(a*x*x + 2*b*x*y + e*y*y), xi*(x*c+y*s))
					g[i*n+j] += cmplx.Exp(arg)
				}
			}
		}
	}
	norm := complex(2*math.Pi*sigma*sigma/slant, 0)
	for i := range g {
		g[i] /= norm
	}
	return g
}

// morlet returns Kymatio's morlet_2d: the Gabor filter minus the multiple
// K of its envelope that makes its sum zero, ψ = g·(e^{iξ·u} − K), so ψ̂(0) = 0.
func morlet(m, n int, sigma, theta, xi, slant float64) []complex128 {
	wv := gabor(m, n, sigma, theta, xi, slant)
	env := gabor(m, n, sigma, theta, 0, slant)
	var sw, se complex128
	for i := range wv {
		sw += wv[i]
		se += env[i]
	}
	k := sw / se
	for i := range wv {
		wv[i] -= k * env[i]
	}
	return wv
}

// realDFT returns the real part of the m×n DFT of f. Kymatio keeps only the
// real part (the imaginary part vanishes up to the periodisation's
// asymmetry); it is the DFT of f's Hermitian-symmetric part.
func realDFT(m, n int, f []complex128) []float64 {
	newPlan2(m, n).transform(f, false)
	out := make([]float64, m*n)
	for i, v := range f {
		out[i] = real(v)
	}
	return out
}

// periodize returns Kymatio's periodize_filter_fft of the m×n spectrum x at
// resolution res: the spectrum to use on a grid subsampled by 2^res. Rows
// and columns at or above the new Nyquist frequency on the positive side
// are zeroed and the 2^res×2^res aliased copies are summed, which crops
// the spectrum to the frequencies the coarser grid can represent.
func periodize(x []float64, m, n, res int) []float64 {
	k := 1 << res
	mr, nr := m/k, n/k
	rowStart, rowLen := int(float64(m)/float64(2*k)), int(float64(m)*(1-1/float64(k)))
	colStart, colLen := int(float64(n)/float64(2*k)), int(float64(n)*(1-1/float64(k)))
	out := make([]float64, mr*nr)
	for i := range m {
		if i >= rowStart && i < rowStart+rowLen {
			continue
		}
		for j := range n {
			if j >= colStart && j < colStart+colLen {
				continue
			}
			out[(i%mr)*nr+j%nr] += x[i*n+j]
		}
	}
	return out
}
