package scatter

import (
	"fmt"
	"math"
)

// work is one goroutine's buffers for Transform.
type work struct {
	plans []*plan2     // plans[r]: the padded grid subsampled by 2^r, r = 0…J
	xp    []float64    // the padded image, later each modulus
	x     []complex128 // the padded image's spectrum
	u1    []complex128 // a first-order modulus' spectrum
	band  []complex128 // a band-pass output, later its modulus' spectrum
	low   []complex128 // a low-pass output at resolution 2^J
}

func (s *Scattering) newWork() *work {
	w := &work{
		xp:   make([]float64, s.mp*s.np),
		x:    make([]complex128, s.mp*s.np),
		u1:   make([]complex128, s.mp*s.np),
		band: make([]complex128, s.mp*s.np),
		low:  make([]complex128, (s.mp>>s.j)*(s.np>>s.j)),
	}
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
	w.plans[0].forwardReal(w.x, w.xp)
	oh, ow := s.OutSize()
	channel := func(c int) []float64 { return dst[c*oh*ow : (c+1)*oh*ow] }
	s.lowpass(channel(0), w, w.x, 0)
	second := 1 + len(s.psi) // the next second-order channel
	for n1, p1 := range s.psi {
		s.bandModulus(w.u1, w, w.x, p1.hat[0], 0, p1.j)
		s.lowpass(channel(1+n1), w, w.u1, p1.j)
		for _, p2 := range s.psi {
			if p2.j <= p1.j {
				continue
			}
			s.bandModulus(w.band, w, w.u1, p2.hat[p1.j], p1.j, p2.j)
			s.lowpass(channel(second), w, w.band, p2.j)
			second++
		}
	}
	return dst, nil
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

// bandModulus writes into dst the spectrum of |u⋆ψ| subsampled to
// resolution 2^to, given u's spectrum at resolution 2^from and ψ's at the
// same resolution. It uses w.xp for the modulus; dst must not be u.
func (s *Scattering) bandModulus(dst []complex128, w *work, u []complex128, psi []float64, from, to int) {
	rows, cols := s.mp>>to, s.np>>to
	b := dst[:rows*cols]
	multFold(b, u, psi, s.mp>>from, s.np>>from, 1<<(to-from))
	w.plans[to].inverse(b)
	m := w.xp[:rows*cols]
	for i, v := range b {
		m[i] = math.Sqrt(real(v)*real(v) + imag(v)*imag(v))
	}
	w.plans[to].forwardReal(b, m)
}

// lowpass writes into out the channel (u⋆φ_J) subsampled to resolution 2^J
// with the border cropped, given u's spectrum at resolution 2^r.
func (s *Scattering) lowpass(out []float64, w *work, u []complex128, r int) {
	multFold(w.low, u, s.phi[r], s.mp>>r, s.np>>r, 1<<(s.j-r))
	w.plans[s.j].inverse(w.low)
	cols := s.np >> s.j
	oh, ow := s.OutSize()
	for a := range oh {
		for b := range ow {
			out[a*ow+b] = real(w.low[(a+1)*cols+b+1])
		}
	}
}

// multFold writes into dst ((rows/k)×(cols/k)) the spectrum u·f (rows×cols)
// subsampled by k: the mean of its k×k aliased copies, which is the DFT of
// the product's inverse DFT sampled at every k-th pixel.
func multFold(dst, u []complex128, f []float64, rows, cols, k int) {
	rs, cs := rows/k, cols/k
	clear(dst[:rs*cs])
	for i := range rows {
		d := dst[(i%rs)*cs : (i%rs+1)*cs]
		ur, fr := u[i*cols:(i+1)*cols], f[i*cols:(i+1)*cols]
		for j := range cols {
			d[j%cs] += ur[j] * complex(fr[j], 0)
		}
	}
	if k > 1 {
		sc := complex(1/float64(k*k), 0)
		for i := range dst[:rs*cs] {
			dst[i] *= sc
		}
	}
}
