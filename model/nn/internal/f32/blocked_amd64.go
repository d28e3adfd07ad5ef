//go:build !purego

package f32

import (
	"runtime"
	"sync"

	"golang.org/x/sys/cpu"

	"github.com/dpal-dev/dpal/internal/par"
)

// Tile and block sizes: a kernel's 6×16 (AVX2) or 6×64 (AVX-512) tile of
// C fills twelve YMM or twenty-four ZMM registers; a kc×nr panel of B
// (16 or 64 KiB) stays in L1 or L2 while the mc×kc block of A (120 KiB)
// stays in L2, and the kc×nc block of B in L3.
const (
	mr    = 6
	nrMax = 64
	kc    = 256
	mc    = 120
	nc    = 4096
)

// hasAVX512 turns on the 6×64 kernel for products at least wideN columns
// wide (narrower ones would pad too much of its tile).
var hasAVX512 = cpu.X86.HasAVX512F

const wideN = 128

// kernel runs the micro-kernel of width nr (see kernel6x16).
func kernel(nr, k int, a *float32, ars, aps int, b, c *float32, ldc int) {
	if nr == 64 {
		kernel6x64(k, a, ars, aps, b, c, ldc)
		return
	}
	kernel6x16(k, a, ars, aps, b, c, ldc)
}

// parallelFlops is the smallest product (2mnk) split over the cores: below
// it handing out tasks costs more than it saves.
const parallelFlops = 1 << 22

// blocked is Gemm's SIMD route.
func blocked(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	scale(beta, m, n, c, ldc)
	if k == 0 || alpha == 0 {
		return
	}
	nr := 16
	if hasAVX512 && n >= wideN {
		nr = 64
	}
	if runtime.GOMAXPROCS(0) == 1 || 2*m*n*k < parallelFlops || (!byRows(m) && n <= nr) {
		serial(nr, transA, transB, m, n, k, alpha, a, lda, b, ldb, c, ldc)
		return
	}
	parallel(nr, transA, transB, m, n, k, alpha, a, lda, b, ldb, c, ldc)
}

// rowTask is the fewest rows of C one task of a parallel product covers
// (a multiple of mr): 24 rows of the MLP's forward product (256 columns,
// k = 784) are 9.6 MFLOP, ≈ 100 µs, long enough to amortise handing the
// task out and short enough that the last task leaves a core idle for
// little. Narrow or shallow products (a convolution's 16 columns at
// k = 64) take more rows per task, enough for taskFlops.
const (
	rowTask   = 24
	taskFlops = 1 << 22
)

// byRows reports whether a parallel product with m rows is split by rows
// of C (at least two tasks) rather than by panels of B.
func byRows(m int) bool { return m >= 2*rowTask }

// taskRows is the rows per task of a parallel product whose C is nb wide
// and k deep: at least rowTask and taskFlops, in whole 6-row panels.
func taskRows(nb, k int) int {
	return roundUp(max(rowTask, taskFlops/(2*nb*k)), mr)
}

// parallel is serial spread over the cores with par.For, in two rounds of
// tasks: first op(B) is packed into a shared buffer, all its kc-deep slices
// at once (one task per slice and panel); then each task multiplies its own
// rows of op(A) (taskRows of them, read in place or packed by the task) by
// every panel, slice after slice (a convolution's first weight gradient,
// 64 rows deep in examples × positions, gets three tasks). A product with
// too few rows for two tasks is split by panels of B instead, or stays on
// one core if it has one panel. Every entry of C is summed exactly as
// serial sums it (the same kc slices in the same order, each a kernel's
// FMA chain from zero, then added to C), so the result does not depend on
// the number of cores or on which goroutine ran which task.
func parallel(nr int, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	shared := pool.Get().(*buffers)
	defer pool.Put(shared)
	slices := (k + kc - 1) / kc
	for jc := 0; jc < n; jc += nc {
		nb := min(nc, n-jc)
		panels := (nb + nr - 1) / nr
		bp := grow(shared.b, k*panels*nr)
		shared.b = bp
		// packed is slice pc of op(B), kb deep: its panels, kb·nr floats each.
		packed := func(pc, kb int) []float32 { return bp[pc*panels*nr:][:kb*panels*nr] }
		par.For(slices*panels, func(t int) {
			pc, p := t/panels*kc, t%panels
			kb := min(kc, k-pc)
			packB(nr, transB, kb, min(nr, nb-p*nr), b, ldb, pc, jc+p*nr, packed(pc, kb)[p*nr*kb:])
		})
		// rows multiplies rows ic… (mb ≤ mc of them) by panels j0…j1−1.
		rows := func(ic, mb, j0, j1 int) {
			buf := pool.Get().(*buffers)
			defer pool.Put(buf)
			for pc := 0; pc < k; pc += kc {
				kb := min(kc, k-pc)
				blk := buf.block(transA, mb, kb, alpha, a, lda, ic, pc)
				blk.c, blk.ldc = c[ic*ldc+jc+j0*nr:], ldc
				blk.run(nr, mb, min(j1*nr, nb)-j0*nr, packed(pc, kb)[j0*nr*kb:])
			}
		}
		if byRows(m) {
			par.Chunks(m, taskRows(nb, k), func(lo, hi int) {
				for ic := lo; ic < hi; ic += mc {
					rows(ic, min(mc, hi-ic), 0, panels)
				}
			})
			continue
		}
		par.For(panels, func(p int) {
			for ic := 0; ic < m; ic += mc {
				rows(ic, min(mc, m-ic), p, p+1)
			}
		})
	}
}

// scale sets C = β·C (zero for β = 0, whatever C held).
func scale(beta float32, m, n int, c []float32, ldc int) {
	if beta == 1 {
		return
	}
	for i := range m {
		row := c[i*ldc : i*ldc+n]
		if beta == 0 {
			clear(row)
			continue
		}
		for j := range row {
			row[j] *= beta
		}
	}
}

// buffers holds one goroutine's packed blocks.
type buffers struct{ a, b, edge []float32 }

var pool = sync.Pool{New: func() any { return new(buffers) }}

func roundUp(x, unit int) int { return (x + unit - 1) / unit * unit }

// serial adds α·op(A)·op(B) to C on the calling goroutine, with the
// kernel of width nr.
func serial(nr int, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	buf := pool.Get().(*buffers)
	defer pool.Put(buf)
	for jc := 0; jc < n; jc += nc {
		nb := min(nc, n-jc)
		for pc := 0; pc < k; pc += kc {
			kb := min(kc, k-pc)
			var pb []float32
			if !transB && nb == nr && ldb == nr {
				// B is one panel's width and dense: its rows are the
				// packed panel already (the CNN's 16-channel products).
				pb = b[pc*ldb : (pc+kb)*ldb]
			} else {
				buf.b = grow(buf.b, kb*roundUp(nb, nr))
				packB(nr, transB, kb, nb, b, ldb, pc, jc, buf.b)
				pb = buf.b
			}
			for ic := 0; ic < m; ic += mc {
				mb := min(mc, m-ic)
				blk := buf.block(transA, mb, kb, alpha, a, lda, ic, pc)
				blk.c, blk.ldc = c[ic*ldc+jc:], ldc
				blk.run(nr, mb, nb, pb)
			}
		}
	}
}

// block returns the mb×kb block of α·op(A) at (ic, pc): read in place for
// α = 1, with its last mb mod 6 rows packed into buf.edge, else packed
// into buf.a with α applied. The caller sets the block's C. Reading A in
// place costs the kernel nothing measurable at dpal's shapes (its six rows
// or columns are six short streams from L2, as the packed panels would
// be), and spares the packing: 18 % of the CPU time of the MLP's forward
// product and 33 % of its weight gradient's (docs/dpsgd.md).
func (buf *buffers) block(transA bool, mb, kb int, alpha float32, a []float32, lda, ic, pc int) block {
	blk := block{kb: kb}
	if alpha != 1 {
		buf.a = grow(buf.a, kb*roundUp(mb, mr))
		packA(transA, mb, kb, a, lda, ic, pc, alpha, buf.a)
		blk.a, blk.ars, blk.aps, blk.packed = buf.a, 1, mr, true
		return blk
	}
	if transA {
		blk.a, blk.ars, blk.aps = a[pc*lda+ic:], 1, lda
	} else {
		blk.a, blk.ars, blk.aps = a[ic*lda+pc:], lda, 1
	}
	if h := mb % mr; h > 0 { // the last rows are packed
		buf.edge = grow(buf.edge, kb*mr)
		packA(transA, h, kb, a, lda, ic+mb-h, pc, alpha, buf.edge)
		blk.edge = buf.edge
	}
	return blk
}

// packB copies op(B)[pc:pc+kb, jc:jc+nb] into panels of nr columns, each
// kb rows of nr floats, zero-padding the last panel.
func packB(nr int, trans bool, kb, nb int, b []float32, ldb, pc, jc int, dst []float32) {
	for jp := 0; jp < nb; jp += nr {
		w := min(nr, nb-jp)
		panel := dst[jp*kb : (jp+nr)*kb]
		if !trans {
			for p := range kb {
				d := panel[p*nr : (p+1)*nr]
				copy(d, b[(pc+p)*ldb+jc+jp:][:w])
				clear(d[w:])
			}
			continue
		}
		if w < nr {
			clear(panel)
		}
		for j := range w {
			src := b[(jc+jp+j)*ldb+pc:][:kb]
			for p, v := range src {
				panel[p*nr+j] = v
			}
		}
	}
}

// packA copies α·op(A)[ic:ic+mb, pc:pc+kb] into panels of 6 rows, each kb
// columns of 6 floats, zero-padding the last panel.
func packA(trans bool, mb, kb int, a []float32, lda, ic, pc int, alpha float32, dst []float32) {
	for ip := 0; ip < mb; ip += mr {
		h := min(mr, mb-ip)
		panel := dst[ip*kb : (ip+mr)*kb]
		if trans {
			// One clear for a short panel's padding, not one call per
			// column: the CNN's per-example products pack a 4-row edge
			// panel of each example's U (taps mod 6 = 4).
			if h < mr {
				clear(panel)
			}
			for p := range kb {
				d := panel[p*mr:][:h]
				for i, v := range a[(pc+p)*lda+ic+ip:][:h] {
					d[i] = alpha * v
				}
			}
			continue
		}
		if h < mr {
			clear(panel)
		}
		for i := range h {
			src := a[(ic+ip+i)*lda+pc:][:kb]
			for p, v := range src {
				panel[p*mr+i] = alpha * v
			}
		}
	}
}

// block is one mb×kb block of A, packed into panels or read in place, and
// the block of C it updates.
type block struct {
	kb       int
	a        []float32
	ars, aps int // A's element (i, p) is at a[i·ars + p·aps] when in place
	packed   bool
	edge     []float32 // the packed last panel when A is in place and mb%6 > 0
	c        []float32
	ldc      int
}

// panel returns the start and strides of A's 6-row panel at row ir of
// the block's mb.
func (blk *block) panel(ir, mb int) (*float32, int, int) {
	switch {
	case blk.packed:
		return &blk.a[ir*blk.kb], 1, mr
	case ir+mr > mb:
		return &blk.edge[0], 1, mr
	}
	_ = blk.a[(ir+mr-1)*blk.ars+(blk.kb-1)*blk.aps] // the whole panel is in A
	return &blk.a[ir*blk.ars], blk.ars, blk.aps
}

// run adds the block of A times the packed kb×nb block of B to C, tile by
// tile with the kernel of width nr; edge tiles go through a scratch tile.
func (blk *block) run(nr, mb, nb int, bp []float32) {
	var tile [mr * nrMax]float32
	kb, c, ldc := blk.kb, blk.c, blk.ldc
	for jr := 0; jr < nb; jr += nr {
		w := min(nr, nb-jr)
		bpan := &bp[jr*kb]
		for ir := 0; ir < mb; ir += mr {
			h := min(mr, mb-ir)
			a, ars, aps := blk.panel(ir, mb)
			if w == nr && h == mr {
				_ = c[(ir+mr-1)*ldc+jr+nr-1] // the whole tile is in C
				kernel(nr, kb, a, ars, aps, bpan, &c[ir*ldc+jr], ldc)
				continue
			}
			clear(tile[:mr*nr])
			kernel(nr, kb, a, ars, aps, bpan, &tile[0], nr)
			for i := range h {
				row := c[(ir+i)*ldc+jr:][:w]
				for j := range row {
					row[j] += tile[i*nr+j]
				}
			}
		}
	}
}
