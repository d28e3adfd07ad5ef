package scatter

// plan2 computes 2-D DFTs of one size, rows×cols, row-major, as two lane
// passes (fft1) with transposes between. It holds scratch buffers, so one
// plan serves one goroutine at a time.
type plan2 struct {
	rows, cols int
	along      *fft1 // length cols: the DFT along each row
	down       *fft1 // length rows: the DFT down each column
	s1, s2     []complex128
}

func newPlan2(rows, cols int) *plan2 {
	return &plan2{rows: rows, cols: cols,
		along: newFFT1(cols), down: newFFT1(rows),
		s1: make([]complex128, rows*cols), s2: make([]complex128, rows*cols)}
}

// transform replaces a by its unnormalised DFT, or its normalised inverse
// DFT if inv.
func (p *plan2) transform(a []complex128, inv bool) {
	r, c := p.rows, p.cols
	p.down.transform(p.s1, a, c, inv) // columns, rows of c lanes
	transpose(p.s2, p.s1, r, c)
	p.along.transform(p.s1, p.s2, r, inv) // rows, now columns of r lanes
	transpose(a, p.s1, c, r)
	if inv {
		sc := 1 / float64(r*c)
		for i, v := range a {
			a[i] = complex(real(v)*sc, imag(v)*sc)
		}
	}
}

// transpose writes the transpose of the r×c array src into dst (c×r).
func transpose(dst, src []complex128, r, c int) {
	for i := range r {
		row := src[i*c : (i+1)*c]
		for j, v := range row {
			dst[j*r+i] = v
		}
	}
}

// spectraOfPair writes into ha and hb the DFTs of the real arrays a and b
// (rows×cols; b may be nil, then hb is ignored) with one complex transform
// of z = a + i·b, using z's buffer as scratch: a real array's spectrum is
// Hermitian, so A[k] = (Z[k] + conj Z[−k])/2 and B[k] = (Z[k] − conj Z[−k])/2i.
func (p *plan2) spectraOfPair(ha, hb []complex128, a, b []float64, z []complex128) {
	r, c := p.rows, p.cols
	z = z[:r*c]
	if b == nil {
		for i, v := range a {
			z[i] = complex(v, 0)
		}
		p.transform(z, false)
		copy(ha, z)
		return
	}
	for i, v := range a {
		z[i] = complex(v, b[i])
	}
	p.transform(z, false)
	for k := range r {
		nk := (r - k) % r
		for l := range c {
			zk, zn := z[k*c+l], z[nk*c+(c-l)%c]
			ha[k*c+l] = complex((real(zk)+real(zn))/2, (imag(zk)-imag(zn))/2)
			hb[k*c+l] = complex((imag(zk)+imag(zn))/2, (real(zn)-real(zk))/2)
		}
	}
}
