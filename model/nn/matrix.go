package nn

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
)

// matrix is a row-major r×c float32 view of d (len(d) ≥ r·c), stride c.
// Batches flow through the layers in float32 (see the package doc); the
// parameters and their gradients are float64.
type matrix struct {
	r, c int
	d    []float32
}

// resize returns a matrix of r×c backed by m's storage when it is large
// enough (contents unspecified), else by a fresh slice.
func (m matrix) resize(r, c int) matrix {
	if cap(m.d) < r*c {
		m.d = make([]float32, r*c)
	}
	return matrix{r: r, c: c, d: m.d[:r*c]}
}

func (m matrix) row(i int) []float32 { return m.d[i*m.c : (i+1)*m.c] }

func (m matrix) general() blas32.General {
	return blas32.General{Rows: m.r, Cols: m.c, Stride: m.c, Data: m.d}
}

// gemm computes c = alpha·op(a)·op(b) + beta·c.
func gemm(ta, tb bool, alpha float32, a, b matrix, beta float32, c matrix) {
	blas32.Gemm(trans(ta), trans(tb), alpha, a.general(), b.general(), beta, c.general())
}

func trans(t bool) blas.Transpose {
	if t {
		return blas.Trans
	}
	return blas.NoTrans
}

// sqNorm is ‖x‖², accumulated in float64.
func sqNorm(x []float32) float64 {
	s := 0.0
	for _, v := range x {
		s += float64(v) * float64(v)
	}
	return s
}

// sqNorm64 is ‖x‖² of a float64 vector.
func sqNorm64(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v * v
	}
	return s
}

// weights is a layer's parameter block: W (rows×cols, row-major) then cols
// biases, as float64 master values and gradient (slices of the Net's flat
// vectors), and the float32 copies the products use, which hold Wᵀ
// (cols×rows) so that every product runs along the long rows dimension:
// gonum's kernels are slow on short rows (logistic regression has 10
// columns, a convolution 16 or 32).
type weights struct {
	rows, cols int
	p, g       []float64
	p32, g32   []float32
}

func (w *weights) bind(p, g []float64) {
	w.p, w.g = p, g
	w.p32, w.g32 = make([]float32, len(p)), make([]float32, len(p))
}

func (w *weights) size() int     { return w.rows * w.cols }
func (w *weights) wT() matrix    { return matrix{w.cols, w.rows, w.p32[:w.size()]} }
func (w *weights) b() []float32  { return w.p32[w.size():] }
func (w *weights) gT() matrix    { return matrix{w.cols, w.rows, w.g32[:w.size()]} }
func (w *weights) gb() []float32 { return w.g32[w.size():] }

// sync copies W transposed, and b, into the float32 copy.
func (w *weights) sync() {
	n := w.size()
	for i := range w.rows {
		for o, v := range w.p[i*w.cols : (i+1)*w.cols] {
			w.p32[o*w.rows+i] = float32(v)
		}
	}
	for o, v := range w.p[n:] {
		w.p32[n+o] = float32(v)
	}
}

// flush adds the float32 gradient (∇Wᵀ and ∇b in g32) to the master
// gradient, transposing back.
func (w *weights) flush() {
	n := w.size()
	for o := range w.cols {
		for i, v := range w.g32[o*w.rows : (o+1)*w.rows] {
			w.g[i*w.cols+o] += float64(v)
		}
	}
	for o, v := range w.g32[n:] {
		w.g[n+o] += float64(v)
	}
}
