package scatter

import (
	"math"
	"math/cmplx"
)

// fft1 is a mixed-radix DFT of one length n, applied to n "lanes" at a
// time: element k of the sequence is a vector of V complex numbers stored
// contiguously, and every arithmetic step loops over the V lanes. A 2-D
// transform is then two passes of long, contiguous loops (rows as lanes,
// then, after a transpose, columns as lanes) instead of many short 1-D
// transforms, which is what makes the small sizes here (36, 18, 9) fast:
// gonum's fftpack, tried first, spent 60% of the time in per-call overhead.
type fft1 struct {
	n       int
	factors []int        // radices, 4 and 3 first, then 2, then any prime
	fwd     []complex128 // e^{−2πi j/n}, j = 0…n−1
	inv     []complex128 // e^{+2πi j/n}
	tmp     []complex128 // scratch for the generic butterfly
}

func newFFT1(n int) *fft1 {
	f := &fft1{n: n, fwd: make([]complex128, n), inv: make([]complex128, n)}
	for j := range n {
		f.fwd[j] = cmplx.Exp(complex(0, -2*math.Pi*float64(j)/float64(n)))
		f.inv[j] = cmplx.Conj(f.fwd[j])
	}
	for m := n; m > 1; {
		p := smallestRadix(m)
		f.factors = append(f.factors, p)
		m /= p
	}
	return f
}

// smallestRadix returns 4 if it divides m, else m's smallest prime factor.
func smallestRadix(m int) int {
	if m%4 == 0 {
		return 4
	}
	for p := 2; p*p <= m; p++ {
		if m%p == 0 {
			return p
		}
	}
	return m
}

// transform writes into dst (n×V) the unnormalised DFT along the first
// axis of src (n×V): forward (e^{−2πi}) unless inv. dst and src must not
// overlap.
func (f *fft1) transform(dst, src []complex128, v int, inv bool) {
	tw := f.fwd
	if inv {
		tw = f.inv
	}
	f.rec(dst, src, f.n, 1, v, 0, tw)
}

// rec is decimation in time: the n-point DFT of src's elements 0, s, 2s, …
// is assembled from p DFTs of length m = n/p of the elements r, r+p, …
// (computed into dst's p consecutive blocks), combined in place by
// X[k+m·q] = Σ_r (W_n^{rk}·Y_r[k])·W_p^{rq}.
func (f *fft1) rec(dst, src []complex128, n, s, v, depth int, tw []complex128) {
	if n == 1 {
		copy(dst[:v], src[:v])
		return
	}
	p := f.factors[depth]
	m := n / p
	if m == 1 && p <= 3 { // the last radix reads src directly: no copy pass
		leaf(dst, src, p, s, v, imag(tw[f.n/p*(p-2)]))
		return
	}
	for r := range p {
		f.rec(dst[r*m*v:], src[r*s*v:], m, s*p, v, depth+1, tw)
	}
	step := f.n / n // W_n^x = tw[x·step]
	for k := range m {
		switch p {
		case 2:
			butterfly2(dst, k, m, v, tw[k*step])
		case 3:
			butterfly3(dst, k, m, v, tw[k*step], tw[2*k*step], imag(tw[f.n/3]))
		case 4:
			butterfly4(dst, k, m, v, tw[k*step], tw[2*k*step], tw[3*k*step], imag(tw[f.n/4]))
		default:
			f.butterfly(dst, k, m, v, p, step, tw)
		}
	}
}

// leaf writes into dst the p-point DFTs (p = 2 or 3) of src's elements 0,
// s, …, (p−1)·s; s3 is the imaginary part of W_3 (unused for p = 2).
func leaf(dst, src []complex128, p, s, v int, s3 float64) {
	a0, a1 := src[:v], src[s*v:s*v+v]
	d0, d1 := dst[:v], dst[v:2*v]
	if p == 2 {
		for i := range d0 {
			x, y := a0[i], a1[i]
			d0[i], d1[i] = x+y, x-y
		}
		return
	}
	a2, d2 := src[2*s*v:2*s*v+v], dst[2*v:3*v]
	for i := range d0 {
		x, y, z := a0[i], a1[i], a2[i]
		t, u := y+z, y-z
		c := complex(real(x)-real(t)/2, imag(x)-imag(t)/2)
		is := complex(-s3*imag(u), s3*real(u))
		d0[i], d1[i], d2[i] = x+t, c+is, c-is
	}
}

func butterfly2(d []complex128, k, m, v int, w1 complex128) {
	a0, a1 := d[k*v:(k+1)*v], d[(k+m)*v:(k+m+1)*v]
	if k == 0 {
		for i := range a0 {
			x, y := a0[i], a1[i]
			a0[i], a1[i] = x+y, x-y
		}
		return
	}
	for i := range a0 {
		x, y := a0[i], a1[i]*w1
		a0[i], a1[i] = x+y, x-y
	}
}

// butterfly3 combines three sub-DFTs; s = ±√3/2, the imaginary part of W_3.
func butterfly3(d []complex128, k, m, v int, w1, w2 complex128, s float64) {
	a0, a1, a2 := d[k*v:(k+1)*v], d[(k+m)*v:(k+m+1)*v], d[(k+2*m)*v:(k+2*m+1)*v]
	if k == 0 { // unit twiddles: a third of the work at the top level of 9
		for i := range a0 {
			x, y, z := a0[i], a1[i], a2[i]
			t, u := y+z, y-z
			c := complex(real(x)-real(t)/2, imag(x)-imag(t)/2)
			is := complex(-s*imag(u), s*real(u)) // i·s·(y−z)
			a0[i], a1[i], a2[i] = x+t, c+is, c-is
		}
		return
	}
	for i := range a0 {
		x, y, z := a0[i], a1[i]*w1, a2[i]*w2
		t, u := y+z, y-z
		c := complex(real(x)-real(t)/2, imag(x)-imag(t)/2) // not x − t/2: complex division is a runtime call
		is := complex(-s*imag(u), s*real(u))
		a0[i], a1[i], a2[i] = x+t, c+is, c-is
	}
}

// butterfly4 combines four sub-DFTs; s = ±1, the imaginary part of W_4.
func butterfly4(d []complex128, k, m, v int, w1, w2, w3 complex128, s float64) {
	a0 := d[k*v : (k+1)*v]
	a1 := d[(k+m)*v : (k+m+1)*v]
	a2 := d[(k+2*m)*v : (k+2*m+1)*v]
	a3 := d[(k+3*m)*v : (k+3*m+1)*v]
	if k == 0 {
		w1, w2, w3 = 1, 1, 1
	}
	for i := range a0 {
		x0, x1, x2, x3 := a0[i], a1[i]*w1, a2[i]*w2, a3[i]*w3
		e, o := x0+x2, x0-x2
		f, g := x1+x3, x1-x3
		ig := complex(-s*imag(g), s*real(g)) // W_4·(x1−x3)
		a0[i], a1[i], a2[i], a3[i] = e+f, o+ig, e-f, o-ig
	}
}

// butterfly is the generic p-point combination, O(p²) per lane, for
// sizes with a prime factor above 3 (not the MNIST path).
func (f *fft1) butterfly(d []complex128, k, m, v, p, step int, tw []complex128) {
	if len(f.tmp) < p*v {
		f.tmp = make([]complex128, p*v)
	}
	t := f.tmp[:p*v]
	n := m * p
	for r := range p {
		w := tw[(r*k*step)%f.n]
		src := d[(k+r*m)*v : (k+r*m+1)*v]
		for i := range v {
			t[r*v+i] = src[i] * w
		}
	}
	for q := range p {
		out := d[(k+q*m)*v : (k+q*m+1)*v]
		clear(out)
		for r := range p {
			w := tw[(r*q*(n/p)*step)%f.n] // W_p^{rq}
			for i := range v {
				out[i] += t[r*v+i] * w
			}
		}
	}
}
