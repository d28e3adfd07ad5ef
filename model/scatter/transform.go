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
	u2a, u2b []complex128 // a pair of second-order moduli's spectra
	ba, bb   []complex128 // a pair of band-pass outputs
	ma, mb   []float64    // their moduli
	z        []complex128 // scratch for spectraOfPair
	low      []complex128 // a pair of low-pass outputs at resolution 2^J
}

func (s *Scattering) newWork() *work {
	n := s.mp * s.np
	c := func() []complex128 { return make([]complex128, n) }
	w := &work{xp: make([]float64, n), x: c(), u1a: c(), u1b: c(), u2a: c(), u2b: c(),
		ba: c(), bb: c(), ma: make([]float64, n), mb: make([]float64, n), z: c(),
		low: make([]complex128, (s.mp>>s.j)*(s.np>>s.j))}
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
	w := s.pool.Get().(*work)
	defer s.pool.Put(w)
	s.pad(w.xp, img)
	w.plans[0].spectraOfPair(w.x, nil, w.xp, nil, w.z)
	oh, ow := s.OutSize()
	channel := func(c int) []float64 { return dst[c*oh*ow : (c+1)*oh*ow] }
	s.lowpass(channel(0), nil, w, w.x, nil, 0)
	second := 1 + len(s.psi) // the next second-order channel
	for _, pr := range s.pairs(0) {
		a, b := pr[0], pr[1]
		s.moduli(w.u1a, w.u1b, w, w.x, s.hat(a, 0), s.hat(b, 0), 0, s.psi[a].j)
		u1s, outB, ub := [][]complex128{w.u1a}, []float64(nil), []complex128(nil)
		if b >= 0 {
			u1s, outB, ub = append(u1s, w.u1b), channel(1+b), w.u1b
		}
		s.lowpass(channel(1+a), outB, w, w.u1a, ub, s.psi[a].j)
		for _, u1 := range u1s {
			j1 := s.psi[a].j
			for _, pr2 := range s.pairs(j1 + 1) {
				c, d := pr2[0], pr2[1]
				s.moduli(w.u2a, w.u2b, w, u1, s.hat(c, j1), s.hat(d, j1), j1, s.psi[c].j)
				outB, ub := []float64(nil), []complex128(nil)
				if d >= 0 {
					outB, ub = channel(second+1), w.u2b
				}
				s.lowpass(channel(second), outB, w, w.u2a, ub, s.psi[c].j)
				second += 2
				if d < 0 {
					second--
				}
			}
		}
	}
	return dst, nil
}

// pairs lists the wavelets of scales ≥ j in Kymatio's order, two at a time
// within a scale (the second −1 when L is odd), so that one complex DFT
// serves two real arrays.
func (s *Scattering) pairs(j int) [][2]int {
	var out [][2]int
	for n := j * s.l; n < len(s.psi); n += 2 {
		if n+1 < len(s.psi) && s.psi[n+1].j == s.psi[n].j {
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

// moduli writes into ha (and hb) the spectra of |u⋆ψa| (and |u⋆ψb|)
// subsampled to resolution 2^to, given u's spectrum at resolution 2^from
// and the wavelets' at the same resolution; ψb may be nil.
func (s *Scattering) moduli(ha, hb []complex128, w *work, u []complex128, psiA, psiB []float64, from, to int) {
	rows, cols := s.mp>>to, s.np>>to
	n := rows * cols
	band := func(b []complex128, m []float64, psi []float64) []float64 {
		if psi == nil {
			return nil
		}
		b = b[:n]
		multFold(b, u, nil, psi, s.mp>>from, s.np>>from, 1<<(to-from))
		w.plans[to].transform(b, true)
		m = m[:n]
		for i, v := range b {
			m[i] = math.Sqrt(real(v)*real(v) + imag(v)*imag(v))
		}
		return m
	}
	ma, mb := band(w.ba, w.ma, psiA), band(w.bb, w.mb, psiB)
	w.plans[to].spectraOfPair(ha, hb, ma, mb, w.z)
}

// lowpass writes into outA (and outB) the channel (u⋆φ_J) subsampled to
// resolution 2^J with the border cropped, given u's spectrum at resolution
// 2^r; ub and outB may be nil. Both channels are real, so one inverse DFT
// of ûa + i·ûb gives them as its real and imaginary parts.
func (s *Scattering) lowpass(outA, outB []float64, w *work, ua, ub []complex128, r int) {
	multFold(w.low, ua, ub, s.phi[r], s.mp>>r, s.np>>r, 1<<(s.j-r))
	w.plans[s.j].transform(w.low, true)
	cols := s.np >> s.j
	oh, ow := s.OutSize()
	for a := range oh {
		row := w.low[(a+1)*cols+1 : (a+1)*cols+1+ow]
		for b, v := range row {
			outA[a*ow+b] = real(v)
		}
		if outB != nil {
			for b, v := range row {
				outB[a*ow+b] = imag(v)
			}
		}
	}
}

// multFold writes into dst ((rows/k)×(cols/k)) the spectrum (ua + i·ub)·f
// (rows×cols; ub may be nil) subsampled by k: the mean of its k×k aliased
// copies, which is the DFT of the product's inverse DFT sampled at every
// k-th pixel.
func multFold(dst, ua, ub []complex128, f []float64, rows, cols, k int) {
	rs, cs := rows/k, cols/k
	dst = dst[:rs*cs]
	clear(dst)
	for i := range rows {
		d := dst[(i%rs)*cs : (i%rs+1)*cs]
		for jb := i * cols; jb < (i+1)*cols; jb += cs {
			a, g := ua[jb:jb+cs], f[jb:jb+cs]
			a, g = a[:len(d)], g[:len(d)] // one bounds check per block, not per element
			for j, x := range d {
				d[j] = complex(real(x)+real(a[j])*g[j], imag(x)+imag(a[j])*g[j])
			}
			if ub == nil {
				continue
			}
			b := ub[jb : jb+cs]
			b = b[:len(d)]
			for j, x := range d {
				d[j] = complex(real(x)-imag(b[j])*g[j], imag(x)+real(b[j])*g[j]) // + i·b·g
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
