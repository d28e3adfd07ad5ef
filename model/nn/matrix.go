package nn

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// matrix is a row-major r×c view of d (len(d) ≥ r·c), stride c.
type matrix struct {
	r, c int
	d    []float64
}

// resize returns a matrix of r×c backed by m's storage when it is large
// enough (contents unspecified), else by a fresh slice.
func (m matrix) resize(r, c int) matrix {
	if cap(m.d) < r*c {
		m.d = make([]float64, r*c)
	}
	return matrix{r: r, c: c, d: m.d[:r*c]}
}

func (m matrix) row(i int) []float64 { return m.d[i*m.c : (i+1)*m.c] }

func (m matrix) general() blas64.General {
	return blas64.General{Rows: m.r, Cols: m.c, Stride: m.c, Data: m.d}
}

// gemm computes c = alpha·op(a)·op(b) + beta·c.
func gemm(ta, tb bool, alpha float64, a, b matrix, beta float64, c matrix) {
	blas64.Gemm(trans(ta), trans(tb), alpha, a.general(), b.general(), beta, c.general())
}

func trans(t bool) blas.Transpose {
	if t {
		return blas.Trans
	}
	return blas.NoTrans
}

func sqNorm(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v * v
	}
	return s
}
