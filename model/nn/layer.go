package nn

import (
	"math"

	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/model/nn/internal/f32"
)

// layer is one stage of a Net. A batch flows through forward; backward
// receives the gradient of the per-example losses with respect to the
// layer's output (one row per example) and returns it with respect to the
// input. After backward, sqNorms adds each example's squared parameter-
// gradient norm to acc, and accumulate sets the layer's float32 gradient
// to Σ_i c_i ∇θ_i, or adds that to it when add is set (the later chunks
// of a batch run in chunks, see clipChunk). Buffers returned by forward and backward belong to the layer and
// are valid until its next call.
type layer interface {
	outDim() int
	numParams() int
	// bind points the layer's parameters, their float32 copy and its
	// float32 gradient at slices of the Net's flat vectors (len numParams).
	bind(p []float64, p32, g32 []float32)
	initParams(r *rng.Rand)
	forward(x matrix, train bool, r *rng.Rand) matrix
	backward(g matrix, needIn bool) matrix
	sqNorms(acc []float64)
	accumulate(c []float64, add bool)
}

// noParams is the parameter side of a layer that has none.
type noParams struct{}

func (noParams) numParams() int                       { return 0 }
func (noParams) bind([]float64, []float32, []float32) {}
func (noParams) initParams(*rng.Rand)                 {}
func (noParams) sqNorms([]float64)                    {}
func (noParams) accumulate([]float64, bool)           {}
func uniformInit(r *rng.Rand, w []float64, bound float64) {
	for i := range w {
		w[i] = bound * (2*r.Float64() - 1)
	}
}

// scaleRows sets dst's row i to c[i/per]·g's row i: the clipping factors
// applied to output gradients (per > 1 for a convolution, whose rows are
// positions of one example).
func scaleRows(dst, g matrix, c []float64, per int) {
	for i := range g.r {
		ci := float32(c[i/per])
		src, out := g.row(i), dst.row(i)
		for j, v := range src {
			out[j] = ci * v
		}
	}
}

// addColSums adds the column sums of m to acc (f32.AddColSums: in row
// order, eight columns per AVX2 instruction).
func addColSums(acc []float32, m matrix) { f32.AddColSums(acc, m.d, m.r, m.c) }

// dense is a fully connected layer z = x·W + b, W in×out.
type dense struct {
	in, out    int
	wt         weights
	x, z, g    matrix
	xSq        []float64 // ‖x_i‖², set by the Net for its first layer
	gin, scale matrix
	zeroInit   bool
	// sparseIn, set by the Net for its first layer, tries the sparse
	// products (f32.SparseGemm) on the input: xs holds the batch's
	// nonzeros when sparse is set (the batch was sparse enough), and xt
	// their transpose for the weight gradient.
	sparseIn, sparse bool
	xs, xt           f32.CSR
	// loaded is what the Net's load found about this pass's input, when it
	// built xs itself (loadSparse): then x is not filled in.
	loaded loadedInput
}

// loadedInput is what a Net's load pass found about its batch for the
// first layer's products.
type loadedInput int

const (
	notLoaded    loadedInput = iota // the layer looks at x itself
	loadedSparse                    // xs holds the batch, x does not
	loadedDense                     // too dense for the sparse products
)

// sparseShare is the largest share of nonzero inputs at which the first
// layer takes the sparse products. Each nonzero costs the sparse kernel
// about twice what an entry costs the dense one (MNIST's batch, 19 %
// nonzero: 0.42–0.56 ms against 1.0–1.1 ms for the forward product, 28
// Nov 2026), and the weight gradient also pays a transpose, so the break-even
// is a little under half; Fashion-MNIST (50 % nonzero) stays dense.
var sparseShare = 0.4 // a variable only for TestSparseRouteSameBits

// loadSparse sets d.sparse and, when set, d.xs to x's nonzeros: when the
// layer takes sparse input, the products can run sparse, and x has at most
// sparseShare nonzeros.
func (d *dense) loadSparse(x matrix) {
	loaded := d.loaded
	d.sparse, d.loaded = loaded == loadedSparse, notLoaded
	if loaded != notLoaded || !d.sparseIn || !f32.CanSparse(d.out) {
		return
	}
	limit := int(sparseShare * float64(x.r*x.c))
	d.xs.Reset()
	for i := range x.r {
		if !d.xs.AppendRow(x.row(i), limit) {
			return
		}
	}
	d.sparse = true
}

func (d *dense) outDim() int    { return d.out }
func (d *dense) numParams() int { return d.in*d.out + d.out }

func (d *dense) bind(p []float64, p32, g32 []float32) {
	d.wt.rows, d.wt.cols = d.in, d.out
	d.wt.bind(p, p32, g32)
}

// initParams draws W uniformly in ±1/√in (PyTorch's default for Linear);
// logistic regression starts at zero.
func (d *dense) initParams(r *rng.Rand) {
	n := d.in * d.out
	clear(d.wt.p[n:])
	if d.zeroInit {
		clear(d.wt.p[:n])
		return
	}
	uniformInit(r, d.wt.p[:n], 1/math.Sqrt(float64(d.in)))
}

func (d *dense) forward(x matrix, _ bool, _ *rng.Rand) matrix {
	d.x = x
	d.z = d.z.resize(x.r, d.out)
	for i := range x.r {
		copy(d.z.row(i), d.wt.b())
	}
	if d.loadSparse(x); d.sparse {
		w := d.wt.w()
		f32.SparseGemm(x.r, d.out, &d.xs, w.d, w.c, 1, d.z.d, d.z.c)
		return d.z
	}
	gemm(false, false, 1, x, d.wt.w(), 1, d.z)
	return d.z
}

func (d *dense) backward(g matrix, needIn bool) matrix {
	d.g = g
	if !needIn {
		return matrix{}
	}
	d.gin = d.gin.resize(g.r, d.in)
	gemm(false, true, 1, g, d.wt.w(), 0, d.gin)
	return d.gin
}

// sqNorms uses ‖∇W_i‖² + ‖∇b_i‖² = (‖x_i‖² + 1)·‖g_i‖², as ∇W_i = x_i g_iᵀ.
// The network's first layer takes ‖x_i‖² from xSq, read while its float64
// input was converted (the norm of the input before rounding to float32,
// within ~1e-7 relative of the rounded one's).
func (d *dense) sqNorms(acc []float64) {
	for i := range d.x.r {
		xsq := 0.0
		if len(d.xSq) == d.x.r {
			xsq = d.xSq[i]
		} else {
			xsq = sqNorm(d.x.row(i))
		}
		acc[i] += (xsq + 1) * sqNorm(d.g.row(i))
	}
}

// accumulate sets (or with add, adds to) the gradient Xᵀ·diag(c)·G = ∇W
// and Σ c_i g_i.
func (d *dense) accumulate(c []float64, add bool) {
	d.scale = d.scale.resize(d.g.r, d.g.c)
	scaleRows(d.scale, d.g, c, 1)
	if d.sparse {
		gw := d.wt.gw()
		d.xs.Transpose(d.in, &d.xt)
		f32.SparseGemm(d.in, d.out, &d.xt, d.scale.d, d.scale.c, beta(add), gw.d, gw.c)
	} else {
		gemm(true, false, 1, d.x, d.scale, beta(add), d.wt.gw())
	}
	if !add {
		clear(d.wt.gb())
	}
	addColSums(d.wt.gb(), d.scale)
}

// beta is the β of a product that sets its result (0) or adds to it (1).
func beta(add bool) float32 {
	if add {
		return 1
	}
	return 0
}

// activation is an elementwise tanh or ReLU.
type activation struct {
	noParams
	dim    int
	tanh   bool
	y, gin matrix
}

func (a *activation) outDim() int { return a.dim }

func (a *activation) forward(x matrix, _ bool, _ *rng.Rand) matrix {
	a.y = a.y.resize(x.r, x.c)
	if !a.tanh {
		for i, v := range x.d[:x.r*x.c] {
			a.y.d[i] = max(v, 0)
		}
		return a.y
	}
	// f32.Tanh gives float32(math.Tanh(float64(v))) bit for bit.
	parallel(x.r, func(i int) { f32.Tanh(a.y.row(i), x.row(i)) })
	return a.y
}

func (a *activation) backward(g matrix, needIn bool) matrix {
	if !needIn {
		return matrix{}
	}
	a.gin = a.gin.resize(g.r, g.c)
	n := g.r * g.c
	y, gin := a.y.d[:n], a.gin.d[:n]
	if a.tanh {
		for i, v := range g.d[:n] {
			gin[i] = v * (1 - y[i]*y[i])
		}
		return a.gin
	}
	// ReLU passes v where y > 0. ReLU outputs are ≥ 0 (or NaN), whose
	// bits order as integers: a mask from the sign of 0 − bits(y) selects
	// without the branch that would mispredict on half the units.
	for i, v := range g.d[:n] {
		mask := uint32(-int32(math.Float32bits(y[i])) >> 31)
		gin[i] = math.Float32frombits(math.Float32bits(v) & mask)
	}
	return a.gin
}

// dropout zeroes each unit with probability p in training and scales the
// rest by 1/(1−p) (inverted dropout); at prediction it is the identity.
// Its randomness is independent of the data, so DP-SGD's guarantee is
// unaffected.
type dropout struct {
	noParams
	dim    int
	p      float64
	train  bool
	mask   []float32
	y, gin matrix
}

func (d *dropout) outDim() int { return d.dim }

func (d *dropout) forward(x matrix, train bool, r *rng.Rand) matrix {
	d.train = train && d.p > 0
	if !d.train {
		return x
	}
	n := x.r * x.c
	if cap(d.mask) < n {
		d.mask = make([]float32, n)
	}
	d.mask = d.mask[:n]
	keep := float32(1 / (1 - d.p))
	d.y = d.y.resize(x.r, x.c)
	for i, v := range x.d[:n] {
		d.mask[i] = 0
		if r.Float64() >= d.p {
			d.mask[i] = keep
		}
		d.y.d[i] = v * d.mask[i]
	}
	return d.y
}

func (d *dropout) backward(g matrix, needIn bool) matrix {
	if !needIn || !d.train {
		return g
	}
	d.gin = d.gin.resize(g.r, g.c)
	for i, v := range g.d[:g.r*g.c] {
		d.gin.d[i] = v * d.mask[i]
	}
	return d.gin
}
