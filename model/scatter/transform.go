package scatter

import (
	"fmt"
	"math"
)

// work is one goroutine's buffers for Transform. Spectra are full-size
// (the padded grid) and used at the size their resolution needs.
type work struct {
	plans    []*plan2     // plans[r]: the padded grid subsampled by 2^r, r = 0…J
	xp       []float64    // the padded image
	x        []complex128 // its spectrum
	u1a, u1b []complex128 // a pair of first-order moduli's spectra
	ba, bb   []complex128 // a pair of band-pass outputs
	ma, mb   []float64    // their moduli
	z        []complex128 // scratch for spectraOfPair
	t        []float64    // scratch for lowpass
}

func (s *Scattering) newWork() *work {
	n := s.mp * s.np
	c := func() []complex128 { return make([]complex128, n) }
	w := &work{xp: make([]float64, n), x: c(), u1a: c(), u1b: c(),
		ba: c(), bb: c(), ma: make([]float64, n), mb: make([]float64, n), z: c(),
		t: make([]float64, n)}
	for r := 0; r <= s.j; r++ {
		w.plans = append(w.plans, newPlan2(s.mp>>r, s.np>>r))
	}
	return w
}

// Transform writes the scattering coefficients of img (height×width,
// row-major) into dst and returns it (allocating when dst is nil): Len()
// values, channel-major, each channel OutSize() row-major. Channels come in
// Kymatio's order: S0 = x⋆φ_J; then S1 for λ1 = (j1, θ1), j1 major; then
// S2 for (λ1, λ2) with j2 > j1, λ1 major.
func (s *Scattering) Transform(dst, img []float64) ([]float64, error) {
	if len(img) != s.height*s.width {
		return nil, fmt.Errorf("scatter: image has %d values, want %d×%d = %d", len(img), s.height, s.width, s.height*s.width)
	}
	if dst == nil {
		dst = make([]float64, s.Len())
	} else if len(dst) != s.Len() {
		return nil, fmt.Errorf("scatter: destination has %d values, want %d", len(dst), s.Len())
	}
	s.transform(dst, img)
	return dst, nil
}

// transform is Transform without the checks of the arguments' sizes.
func (s *Scattering) transform(dst, img []float64) {
	w := s.pool.Get().(*work)
	defer s.pool.Put(w)
	s.pad(w.xp, img)
	w.plans[0].spectraOfPair(w.x, nil, w.xp, nil, w.z)
	oh, ow := s.OutSize()
	channel := func(c int) []float64 { return dst[c*oh*ow : (c+1)*oh*ow] }
	s.lowpass(channel(0), w, w.xp, 0)
	second := 1 + len(s.psi) // the next second-order channel
	for _, pr := range s.pairsFrom[0] {
		a, b := pr[0], pr[1]
		j1 := s.psi[a].j
		ma, mb := s.moduli(w, w.x, s.hat(a, 0), s.hat(b, 0), 0, j1)
		s.lowpass(channel(1+a), w, ma, j1)
		if b >= 0 {
			s.lowpass(channel(1+b), w, mb, j1)
		}
		if j1 == s.j-1 {
			continue // no j2 > j1, and no need for the moduli's spectra
		}
		w.plans[j1].spectraOfPair(w.u1a, w.u1b, ma, mb, w.z)
		u1s := [2][]complex128{w.u1a, w.u1b}
		for i := range 1 + min(b+1, 1) {
			for _, pr2 := range s.pairsFrom[j1+1] {
				c, d := pr2[0], pr2[1]
				j2 := s.psi[c].j
				ma, mb := s.moduli(w, u1s[i], s.hat(c, j1), s.hat(d, j1), j1, j2)
				s.lowpass(channel(second), w, ma, j2)
				second++
				if d >= 0 {
					s.lowpass(channel(second), w, mb, j2)
					second++
				}
			}
		}
	}
}

// pairs lists the wavelets of scales ≥ j in Kymatio's order, two at a time
// within a scale (the second −1 when L is odd), so that one complex DFT
// serves two real arrays.
func pairs(psi []wavelet, l, j int) [][2]int {
	var out [][2]int
	for n := j * l; n < len(psi); n += 2 {
		if n+1 < len(psi) && psi[n+1].j == psi[n].j {
			out = append(out, [2]int{n, n + 1})
		} else {
			out = append(out, [2]int{n, -1})
			n--
		}
	}
	return out
}

// hat returns wavelet n's spectrum at resolution 2^r, nil for n = −1.
func (s *Scattering) hat(n, r int) []float64 {
	if n < 0 {
		return nil
	}
	return s.psi[n].hat[r]
}

// pad writes img, padded by reflection to mp×np, into xp.
func (s *Scattering) pad(xp, img []float64) {
	for i, si := range s.rowSrc {
		row := img[si*s.width : (si+1)*s.width]
		for j, sj := range s.colSrc {
			xp[i*s.np+j] = row[sj]
		}
	}
}

// moduli returns |u⋆ψa| and |u⋆ψb| (nil if ψb is) subsampled to
// resolution 2^to, in w.ma and w.mb, given u's spectrum at resolution
// 2^from and the wavelets' at the same resolution.
func (s *Scattering) moduli(w *work, u []complex128, psiA, psiB []float64, from, to int) (ma, mb []float64) {
	n := (s.mp >> to) * (s.np >> to)
	band := func(b []complex128, m []float64, psi []float64) []float64 {
		if psi == nil {
			return nil
		}
		b = b[:n]
		multFold(b, u, psi, s.mp>>from, s.np>>from, 1<<(to-from))
		w.plans[to].transform(b, true)
		m = m[:n]
		for i, v := range b {
			m[i] = math.Sqrt(real(v)*real(v) + imag(v)*imag(v))
		}
		return m
	}
	return band(w.ba, w.ma, psiA), band(w.bb, w.mb, psiB)
}

// lowpass writes into out the channel u⋆φ_J, sampled every 2^(J−r) pixels
// with the border cropped, given u (real) at resolution 2^r. φ_J is a
// separable Gaussian and so are its crops, so this is two small products,
// out = Kr·u·Kcᵀ, with Kr[a][p] = φr((2^(J−r)·(a+1) − p) mod rows) the
// rows' circular-convolution-and-subsampling matrix (lowpassKernels):
// cheaper than a forward DFT of u, a product and an inverse DFT.
func (s *Scattering) lowpass(out []float64, w *work, u []float64, r int) {
	k := s.low[r]
	rows, cols := s.mp>>r, s.np>>r
	oh, ow := s.OutSize()
	t := w.t[:rows*ow] // u·Kcᵀ, rows×ow
	for p := range rows {
		ur := u[p*cols : (p+1)*cols]
		for b := range ow {
			t[p*ow+b] = dot(ur, k.cols[b*cols:(b+1)*cols])
		}
	}
	for a := range oh {
		kr := k.rows[a*rows : (a+1)*rows]
		o := out[a*ow : (a+1)*ow]
		clear(o)
		for p, g := range kr {
			tp := t[p*ow : (p+1)*ow]
			tp = tp[:len(o)]
			for b := range o {
				o[b] += g * tp[b]
			}
		}
	}
}

// dot returns Σ x[i]·y[i] (len(y) ≥ len(x)) with four running sums, so
// that the additions do not wait on one another.
func dot(x, y []float64) float64 {
	y = y[:len(x)]
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += x[i] * y[i]
		s1 += x[i+1] * y[i+1]
		s2 += x[i+2] * y[i+2]
		s3 += x[i+3] * y[i+3]
	}
	for ; i < len(x); i++ {
		s0 += x[i] * y[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// multFold writes into dst ((rows/k)×(cols/k)) the spectrum u·f (rows×cols)
// subsampled by k: the mean of its k×k aliased copies, which is the DFT of
// the product's inverse DFT sampled at every k-th pixel.
func multFold(dst, u []complex128, f []float64, rows, cols, k int) {
	rs, cs := rows/k, cols/k
	dst = dst[:rs*cs]
	clear(dst)
	for i := range rows {
		d := dst[(i%rs)*cs : (i%rs+1)*cs]
		for jb := i * cols; jb < (i+1)*cols; jb += cs {
			a, g := u[jb:jb+cs], f[jb:jb+cs]
			a, g = a[:len(d)], g[:len(d)] // one bounds check per block, not per element
			for j, x := range d {
				d[j] = complex(real(x)+real(a[j])*g[j], imag(x)+imag(a[j])*g[j])
			}
		}
	}
	if k > 1 {
		sc := 1 / float64(k*k)
		for i, v := range dst {
			dst[i] = complex(real(v)*sc, imag(v)*sc)
		}
	}
}
