//go:build !purego

package f32

import (
	"runtime"
	"slices"

	"github.com/dpal-dev/dpal/internal/par"
)

// sparseCols is the width of the sparse kernel's tile of C: eight YMM
// accumulators.
const sparseCols = 64

// CanSparse reports whether SparseGemm runs for products n columns wide:
// on the SIMD route (whose sums it reproduces) for n a multiple of 64.
func CanSparse(n int) bool { return simd != nil && n > 0 && n%sparseCols == 0 }

// sparseRowTask is the rows of C per task of a parallel SparseGemm.
const sparseRowTask = 32

// SparseGemm computes C = β·C + A·B for a sparse m×k A (row i of A in
// a.Ptr[i]…), B k×n with row stride ldb, C m×n with row stride ldc, when
// CanSparse(n). Each entry of C is summed as Gemm's SIMD route sums it for
// the dense A: over k in blocks of kc, each block's products added in
// ascending k into an FMA chain from zero and the block's sum then added
// to C. A zero of A adds an exact zero to such a chain (and the chain
// starts at +0 and can never become −0), so leaving A's zeros out gives
// the same bits as the dense product, at the cost of the nonzeros only —
// unless B holds an infinity or NaN, which the dense product would spread
// through a zero of A as NaN and this one does not. Rows of C are spread
// over the cores for large products; each is summed the same way whatever
// the split.
func SparseGemm(m, n int, a *CSR, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if !CanSparse(n) {
		panic("f32: SparseGemm without CanSparse")
	}
	if m == 0 {
		return
	}
	_ = a.Ptr[m]
	scale(beta, m, n, c, ldc)
	rows := func(lo, hi int) {
		for i := lo; i < hi; i++ {
			sparseRow(n, a.Idx[a.Ptr[i]:a.Ptr[i+1]], a.Val[a.Ptr[i]:a.Ptr[i+1]], b, ldb, c[i*ldc:i*ldc+n])
		}
	}
	if runtime.GOMAXPROCS(0) == 1 || 2*len(a.Idx)*n < parallelFlops {
		rows(0, m)
		return
	}
	par.Chunks(m, sparseRowTask, rows)
}

// sparseRow adds the sparse row (idx, val) times B to the row c, n wide,
// one k-block of kc at a time.
func sparseRow(n int, idx []int32, val []float32, b []float32, ldb int, c []float32) {
	if len(idx) == 0 {
		return
	}
	if idx[0] < 0 || len(val) < len(idx) {
		panic("f32: malformed sparse row")
	}
	_ = b[int(idx[len(idx)-1])*ldb+n-1] // every row of B it reads is in b
	for lo := 0; lo < len(idx); {
		hi, blk := lo+1, idx[lo]/kc
		for hi < len(idx) && idx[hi]/kc == blk {
			hi++
		}
		for j := 0; j < n; j += sparseCols {
			sparse64(hi-lo, &idx[lo], &val[lo], &b[j], ldb, &c[j])
		}
		lo = hi
	}
}

// sparse64 adds Σ_{p<k} val[p]·B[idx[p], 0:64] (B's rows ldb floats apart
// from b), an FMA chain from zero per column, to the 64 floats at c
// (k ≥ 1).
//
//go:noescape
func sparse64(k int, idx *int32, val *float32, b *float32, ldb int, c *float32)

// compressSq writes the nonzero entries of row[0:n] (n > 0 a multiple of
// 16) and their columns to val and idx, which must have room for n+16,
// and returns their number and Σ row[i]² as copyAVX2 sums it (the same
// bits), prefetching the n floats at next on the way. It needs AVX-512F.
//
//go:noescape
func compressSq(row *float32, n int, idx *int32, val *float32, next *float32) (k int, sq float64)

// appendNonzeros is AppendRow's SIMD route: compressSq where the CPU has
// AVX-512F, for rows of at least 16 floats (the last len mod 16 by
// appendNonzerosGo), else appendNonzerosGo.
func appendNonzeros(a *CSR, row []float32) {
	n := len(row) &^ 15
	if simd == nil || !hasAVX512 || n == 0 {
		appendNonzerosGo(a, row, 0)
		return
	}
	compressInto(a, row[:n], row)
	appendNonzerosGo(a, row, n)
}

// compressInto appends the nonzeros of row (len a multiple of 16) to a
// with compressSq, prefetching next (as long as row), and returns row's
// squared norm.
func compressInto(a *CSR, row, next []float32) float64 {
	n, at := len(row), len(a.Idx)
	a.Idx, a.Val = slices.Grow(a.Idx, n+16)[:at+n+16], slices.Grow(a.Val, n+16)[:at+n+16]
	next = next[:n]
	k, sq := compressSq(&row[0], n, &a.Idx[at], &a.Val[at], &next[0])
	a.Idx, a.Val = a.Idx[:at+k], a.Val[:at+k]
	return sq
}

// AppendRowSq is AppendRow that also returns Copy(dst, row)'s squared norm
// (the same bits), reading the row once and copying it nowhere: the input
// of a layer that only needs its nonzeros and norm. It prefetches next, a
// row of the same length to be read soon (rows scattered in memory wait on
// cache misses otherwise). It reports false, and appends nothing, where it
// cannot give Copy's bits in one pass (without AVX-512F, or for a row
// whose length is not a positive multiple of 16).
func (a *CSR) AppendRowSq(row, next []float32) (float64, bool) {
	if simdCopy == nil || !hasAVX512 || len(row) == 0 || len(row)%16 != 0 || len(next) < len(row) {
		return 0, false
	}
	sq := compressInto(a, row, next)
	a.Ptr = append(a.Ptr, len(a.Idx))
	return sq, true
}
