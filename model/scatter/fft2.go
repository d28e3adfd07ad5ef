package scatter

import "gonum.org/v1/gonum/dsp/fourier"

// plan2 computes 2-D DFTs of one size, rows×cols, row-major. It holds
// gonum's work buffers, so one plan serves one goroutine at a time.
type plan2 struct {
	rows, cols int
	rowC       *fourier.CmplxFFT // complex transforms along a row (length cols)
	colC       *fourier.CmplxFFT // complex transforms along a column (length rows)
	rowR       *fourier.FFT      // real transforms along a row
	col        []complex128      // one column, gathered
	half       []complex128      // one row's cols/2+1 real-input coefficients
}

func newPlan2(rows, cols int) *plan2 {
	return &plan2{
		rows: rows, cols: cols,
		rowC: fourier.NewCmplxFFT(cols),
		colC: fourier.NewCmplxFFT(rows),
		rowR: fourier.NewFFT(cols),
		col:  make([]complex128, rows),
		half: make([]complex128, cols/2+1),
	}
}

// forwardReal writes the full unnormalised DFT of the real rows×cols array
// src into dst. Real input has a Hermitian spectrum, X[k,l] = conj X[−k,−l],
// so only columns 0…cols/2 are transformed and the rest are filled in by
// symmetry: about half the work of a complex transform.
func (p *plan2) forwardReal(dst []complex128, src []float64) {
	r, c, h := p.rows, p.cols, p.cols/2+1
	for i := range r {
		p.rowR.Coefficients(p.half, src[i*c:(i+1)*c])
		copy(dst[i*c:i*c+h], p.half)
	}
	for l := range h {
		p.columns(dst, l, false)
	}
	for k := range r {
		nk := (r - k) % r
		for l := h; l < c; l++ {
			v := dst[nk*c+c-l]
			dst[k*c+l] = complex(real(v), -imag(v))
		}
	}
}

// inverse replaces the spectrum a by its normalised inverse DFT.
func (p *plan2) inverse(a []complex128) {
	r, c := p.rows, p.cols
	for i := range r {
		row := a[i*c : (i+1)*c]
		p.rowC.Sequence(row, row)
	}
	for l := range c {
		p.columns(a, l, true)
	}
	s := complex(1/float64(r*c), 0)
	for i := range a {
		a[i] *= s
	}
}

// forward replaces a by its unnormalised DFT (used to build the filters).
func (p *plan2) forward(a []complex128) {
	r, c := p.rows, p.cols
	for i := range r {
		row := a[i*c : (i+1)*c]
		p.rowC.Coefficients(row, row)
	}
	for l := range c {
		p.columns(a, l, false)
	}
}

// columns transforms column l of a in place, forward or inverse.
func (p *plan2) columns(a []complex128, l int, inv bool) {
	c := p.cols
	for k := range p.rows {
		p.col[k] = a[k*c+l]
	}
	if inv {
		p.colC.Sequence(p.col, p.col)
	} else {
		p.colC.Coefficients(p.col, p.col)
	}
	for k := range p.rows {
		a[k*c+l] = p.col[k]
	}
}
