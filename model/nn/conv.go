package nn

import (
	"math"
	"runtime"
	"sync"

	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/model/nn/internal/f32"
)

// shape is an image's height, width and channels; an example's features
// are its pixels in channels-last order ((y·W + x)·C + c).
type shape struct{ h, w, c int }

func (s shape) size() int { return s.h * s.w * s.c }

// conv is a 2-D convolution with a square kernel, stride and zero padding,
// computed through im2col: the unfolded input U (one row per example and
// output position, one column per kernel tap and input channel) times the
// kernel matrix W (taps·channels × out channels). Channels-last layout makes
// the product's rows exactly the output's positions, so the batch output is
// U·W viewed as B × (positions·out).
type conv struct {
	in                  shape
	k, stride, pad, out int
	oh, ow              int
	wt                  weights
	u, z, g, gu, gin    matrix
	scale, per          matrix
	batch               int
	// copies are unfold's runs in its order, each from an example's
	// features (Src) to its block of U (Dst = row·taps + col): the same
	// for every example, so listed once.
	copies f32.Spans
}

func newConv(in shape, k, stride, pad, out int) *conv {
	c := &conv{in: in, k: k, stride: stride, pad: pad, out: out}
	c.oh = (in.h+2*pad-k)/stride + 1
	c.ow = (in.w+2*pad-k)/stride + 1
	c.plan()
	return c
}

// plan lists unfold's runs, so that neither pass walks the window
// geometry per example.
func (c *conv) plan() {
	t := c.taps()
	var runs []f32.Span
	c.unfold(func(row, col, src, n int) { runs = append(runs, f32.Span{Dst: row*t + col, Src: src, N: n}) })
	c.copies = f32.NewSpans(runs)
}

func (c *conv) outShape() shape { return shape{c.oh, c.ow, c.out} }
func (c *conv) outDim() int     { return c.outShape().size() }
func (c *conv) positions() int  { return c.oh * c.ow }
func (c *conv) taps() int       { return c.k * c.k * c.in.c }
func (c *conv) numParams() int  { return c.taps()*c.out + c.out }

func (c *conv) bind(p []float64, p32, g32 []float32) {
	c.wt.rows, c.wt.cols = c.taps(), c.out
	c.wt.bind(p, p32, g32)
}

// initParams draws W and b uniformly in ±1/√fan_in (PyTorch's default).
func (c *conv) initParams(r *rng.Rand) {
	uniformInit(r, c.wt.p, 1/math.Sqrt(float64(c.taps())))
}

// unfold visits, for example i, every run of taps of one kernel row whose
// input pixels lie inside the image: row is U's row, col the run's first
// column, src its first feature in the example's features and n its length
// in floats (taps × channels; channels-last makes a run contiguous on both
// sides).
func (c *conv) unfold(visit func(row, col, src, n int)) {
	cin := c.in.c
	for oy := range c.oh {
		for ox := range c.ow {
			row := oy*c.ow + ox
			x0 := ox*c.stride - c.pad
			lo, hi := max(0, -x0), min(c.k, c.in.w-x0) // kx with 0 ≤ x0+kx < W
			if lo >= hi {
				continue
			}
			for ky := range c.k {
				iy := oy*c.stride - c.pad + ky
				if iy < 0 || iy >= c.in.h {
					continue
				}
				visit(row, (ky*c.k+lo)*cin, (iy*c.in.w+x0+lo)*cin, (hi-lo)*cin)
			}
		}
	}
}

func (c *conv) forward(x matrix, _ bool, _ *rng.Rand) matrix {
	c.batch = x.r
	p, t := c.positions(), c.taps()
	// U's taps in the padding are never written: every example's block
	// has them at the same offsets whatever the batch size, and only the
	// copies below write U, so they stay zero from the allocation.
	c.u = c.u.resize(x.r*p, t)
	parallel(x.r, func(i int) {
		c.copies.Gather(c.u.d[i*p*t:(i+1)*p*t], x.row(i))
	})
	c.z = c.z.resize(x.r, p*c.out)
	zv := matrix{x.r * p, c.out, c.z.d}
	for i := range zv.r {
		copy(zv.row(i), c.wt.b())
	}
	gemm(false, false, 1, c.u, c.wt.w(), 1, zv)
	return c.z
}

func (c *conv) backward(g matrix, needIn bool) matrix {
	p, t := c.positions(), c.taps()
	c.g = matrix{g.r * p, c.out, g.d}
	if !needIn {
		return matrix{}
	}
	c.gu = c.gu.resize(g.r*p, t)
	gemm(false, true, 1, c.g, c.wt.w(), 0, c.gu)
	c.gin = c.gin.resize(g.r, c.in.size())
	parallel(g.r, func(i int) {
		gi := c.gin.row(i)
		clear(gi)
		ui := c.gu.d[i*p*t : (i+1)*p*t]
		for _, s := range c.copies.Runs() { // in unfold's order: the same sums
			dst := gi[s.Src : s.Src+s.N]
			for j, v := range ui[s.Dst : s.Dst+s.N] {
				dst[j] += v
			}
		}
	})
	return c.gin
}

// sqNorms materialises each example's kernel gradient U_iᵀG_i (taps × out)
// for its norm; the bias gradient is the column sum of G_i.
// Examples are spread over the cores, each worker with its own scratch;
// every example's norm is computed alone, so the result does not depend on
// the core count.
func (c *conv) sqNorms(acc []float64) {
	p, t := c.positions(), c.taps()
	workers := min(runtime.GOMAXPROCS(0), c.batch)
	c.per = c.per.resize(workers*c.out, t)
	parallelChunks(c.batch, workers, func(w, lo, hi int) {
		per := matrix{t, c.out, c.per.d[w*c.out*t : (w+1)*c.out*t]}
		bias := make([]float32, c.out)
		for i := lo; i < hi; i++ {
			ui := matrix{p, t, c.u.d[i*p*t : (i+1)*p*t]}
			gi := matrix{p, c.out, c.g.d[i*p*c.out : (i+1)*p*c.out]}
			gemm(true, false, 1, ui, gi, 0, per)
			clear(bias)
			addColSums(bias, gi)
			acc[i] += sqNorm(per.d) + sqNorm(bias)
		}
	})
}

// accumulate sets (or with add, adds to) the gradient Uᵀ·diag(c)·G = ∇W
// (each example's rows scaled by its c_i) and the bias gradient.
func (c *conv) accumulate(cl []float64, add bool) {
	c.scale = c.scale.resize(c.g.r, c.g.c)
	scaleRows(c.scale, c.g, cl, c.positions())
	gemm(true, false, 1, c.u, c.scale, beta(add), c.wt.gw())
	if !add {
		clear(c.wt.gb())
	}
	addColSums(c.wt.gb(), c.scale)
}

// maxPool takes the maximum over size×size windows at the given stride,
// per channel.
type maxPool struct {
	noParams
	in                   shape
	size, stride, oh, ow int
	arg                  []int32
	y, gin               matrix
}

func newMaxPool(in shape, size, stride int) *maxPool {
	return &maxPool{in: in, size: size, stride: stride,
		oh: (in.h-size)/stride + 1, ow: (in.w-size)/stride + 1}
}

func (m *maxPool) outShape() shape { return shape{m.oh, m.ow, m.in.c} }
func (m *maxPool) outDim() int     { return m.outShape().size() }

func (m *maxPool) forward(x matrix, _ bool, _ *rng.Rand) matrix {
	od, ch := m.outDim(), m.in.c
	m.y = m.y.resize(x.r, od)
	if cap(m.arg) < x.r*od {
		m.arg = make([]int32, x.r*od)
	}
	m.arg = m.arg[:x.r*od]
	if m.size == 2 && m.stride == 1 {
		m.forward2(x, od)
		return m.y
	}
	parallel(x.r, func(i int) {
		xi, yi, ai := x.row(i), m.y.row(i), m.arg[i*od:(i+1)*od]
		for oy := range m.oh {
			for ox := range m.ow {
				// All channels of one window at once: the first pixel
				// seeds the maximum, later ones replace it only when
				// larger (the first maximum wins ties).
				o := (oy*m.ow + ox) * ch
				y, a := yi[o:o+ch], ai[o:o+ch]
				for ky := range m.size {
					for kx := range m.size {
						s := ((oy*m.stride+ky)*m.in.w + ox*m.stride + kx) * ch
						src := xi[s : s+ch]
						if ky == 0 && kx == 0 {
							copy(y, src)
							for c := range a {
								a[c] = int32(s + c)
							}
							continue
						}
						// Compared as order-preserving integers, the
						// selects compile to conditional moves: a branch
						// here mispredicts on half the pixels.
						for c, v := range src {
							ky, kv, ac := f32.OrderKey(y[c]), f32.OrderKey(v), a[c]
							if kv > ky {
								ky, ac = kv, int32(s+c)
							}
							y[c], a[c] = f32.KeyFloat(ky), ac
						}
					}
				}
			}
		}
	})
	return m.y
}

// forward2 is forward for 2×2 windows at stride 1 (the CNN's pools), in
// two passes per example: the maximum of each horizontal pair of pixels
// (kept as order keys, with its index), then of each vertical pair of
// those. Each pair is compared once rather than once for each of the two
// windows that share it, and the keys are computed once. A window's
// maximum is still its first in row-major order on ties: the first
// pass keeps the left pixel of a tied pair and the second the upper
// pair, so the result, arguments included, is forward's general loop's.
func (m *maxPool) forward2(x matrix, od int) {
	ch, w := m.in.c, m.in.w
	rowLen := m.ow * ch // one row of pairs
	parallelChunks(x.r, min(runtime.GOMAXPROCS(0), x.r), func(_, lo, hi int) {
		hk := make([]int32, m.in.h*rowLen) // pair maxima's keys
		ha := make([]int32, m.in.h*rowLen) // and their pixels
		for i := lo; i < hi; i++ {
			xi, yi, ai := x.row(i), m.y.row(i), m.arg[i*od:(i+1)*od]
			for iy := range m.in.h {
				f32.MaxPairs(hk[iy*rowLen:(iy+1)*rowLen], ha[iy*rowLen:(iy+1)*rowLen],
					xi[iy*w*ch:(iy+1)*w*ch], ch, int32(iy*w*ch))
			}
			f32.MaxKeyPairs(yi, ai, hk, ha, rowLen)
		}
	})
}

func (m *maxPool) backward(g matrix, needIn bool) matrix {
	if !needIn {
		return matrix{}
	}
	od := m.outDim()
	m.gin = m.gin.resize(g.r, m.in.size())
	clear(m.gin.d)
	for i := range g.r {
		gi, ai, out := g.row(i), m.arg[i*od:(i+1)*od], m.gin.row(i)
		for o, s := range ai {
			out[s] += gi[o]
		}
	}
	return m.gin
}

// parallel calls f(i) for i in [0, n), spread over the cores; the calls
// must write disjoint memory.
func parallel(n int, f func(i int)) {
	parallelChunks(n, min(runtime.GOMAXPROCS(0), n), func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			f(i)
		}
	})
}

// parallelChunks splits [0, n) into workers contiguous chunks and calls
// f(worker, lo, hi) for each on its own goroutine (inline for one).
func parallelChunks(n, workers int, f func(w, lo, hi int)) {
	if workers <= 1 {
		f(0, 0, n)
		return
	}
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := w*n/workers, (w+1)*n/workers
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(w, lo, hi)
		}()
	}
	wg.Wait()
}
