package nn

import "github.com/dpal-dev/dpal/model/nn/internal/f32"

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

// gemm computes c = alpha·op(a)·op(b) + beta·c (package f32: SIMD
// kernels where the CPU has them, blas32 elsewhere).
func gemm(ta, tb bool, alpha float32, a, b matrix, beta float32, c matrix) {
	k := a.c
	if ta {
		k = a.r
	}
	f32.Gemm(ta, tb, c.r, c.c, k, alpha, a.d, a.c, b.d, b.c, beta, c.d, c.c)
}

// sqNorm is ‖x‖², accumulated in float64.
func sqNorm(x []float32) float64 { return f32.SqNorm(x) }

// sqNorm64 is ‖x‖² of a float64 vector.
func sqNorm64(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v * v
	}
	return s
}

// weights is a layer's parameter block: W (rows×cols, row-major) then cols
// biases, as float64 master values, their float32 copy that the products
// use and the float32 gradient, all slices of the Net's flat vectors.
type weights struct {
	rows, cols int
	p          []float64
	p32, g32   []float32
}

func (w *weights) bind(p []float64, p32, g32 []float32) {
	w.p, w.p32, w.g32 = p, p32, g32
}

func (w *weights) size() int     { return w.rows * w.cols }
func (w *weights) w() matrix     { return matrix{w.rows, w.cols, w.p32[:w.size()]} }
func (w *weights) b() []float32  { return w.p32[w.size():] }
func (w *weights) gw() matrix    { return matrix{w.rows, w.cols, w.g32[:w.size()]} }
func (w *weights) gb() []float32 { return w.g32[w.size():] }
