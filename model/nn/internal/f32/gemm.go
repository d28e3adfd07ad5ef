package f32

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
)

// Gemm computes C = α·op(A)·op(B) + β·C, where op(A) is m×k (A itself, or
// A's transpose when transA), op(B) is k×n, and C is m×n. Matrices are
// row-major with leading dimensions (row strides) lda, ldb and ldc. It uses
// the SIMD kernels when the CPU has them and gonum's blas32 otherwise.
func Gemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if simd != nil {
		simd(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	Blas32(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// Blas32 is Gemm through gonum's blas32 (or the implementation installed
// with blas32.Use): the portable route, and the reference the SIMD route is
// tested against.
func Blas32(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	ra, ca := m, k
	if transA {
		ra, ca = k, m
	}
	rb, cb := k, n
	if transB {
		rb, cb = n, k
	}
	blas32.Gemm(trans(transA), trans(transB), alpha,
		blas32.General{Rows: ra, Cols: ca, Stride: lda, Data: a},
		blas32.General{Rows: rb, Cols: cb, Stride: ldb, Data: b},
		beta, blas32.General{Rows: m, Cols: n, Stride: ldc, Data: c})
}

func trans(t bool) blas.Transpose {
	if t {
		return blas.Trans
	}
	return blas.NoTrans
}

// Route names the implementation Gemm uses: "avx512" (with "avx2" for
// narrow products), "avx2" or "blas32".
func Route() string {
	if simd != nil {
		return simdName
	}
	return "blas32"
}

// gemmFunc is Gemm's signature.
type gemmFunc func(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int)

// simd and simdConvert are the assembly routes, nil where the build or
// the CPU lacks them.
var (
	simd        gemmFunc
	simdConvert convertFunc
	simdCopy    copyFunc
	simdSqNorm  sqNormFunc
	simdName    string
)

// convertFunc is Convert's signature.
type convertFunc func(dst []float32, src []float64) float64

// Convert sets dst[i] = float32(src[i]) (len(dst) ≥ len(src)) and returns
// Σ src[i]² in float64: the conversion of a batch's inputs, with the squared
// norm each example's clipping needs read on the way.
func Convert(dst []float32, src []float64) float64 {
	if simdConvert != nil {
		return simdConvert(dst, src)
	}
	return convertGo(dst, src)
}

// convertGo is Convert in Go, over four independent sums (one chain of
// dependent additions would cost an add's latency per entry).
func convertGo(dst []float32, src []float64) float64 {
	dst = dst[:len(src)]
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(src); i += 4 {
		v, d := src[i:i+4:i+4], dst[i:i+4:i+4]
		d[0], d[1], d[2], d[3] = float32(v[0]), float32(v[1]), float32(v[2]), float32(v[3])
		s0 += v[0] * v[0]
		s1 += v[1] * v[1]
		s2 += v[2] * v[2]
		s3 += v[3] * v[3]
	}
	for ; i < len(src); i++ {
		dst[i] = float32(src[i])
		s0 += src[i] * src[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// copyFunc is Copy's signature.
type copyFunc func(dst, src []float32) float64

// Copy sets dst[i] = src[i] (len(dst) ≥ len(src)) and returns Σ src[i]² in
// float64: Convert for inputs already in float32.
func Copy(dst, src []float32) float64 {
	if simdCopy != nil {
		return simdCopy(dst, src)
	}
	return copyGo(dst, src)
}

// copyGo is Copy in Go.
func copyGo(dst, src []float32) float64 {
	copy(dst[:len(src)], src)
	return SqNorm(src)
}

// sqNormFunc is SqNorm's signature.
type sqNormFunc func(x []float32) float64

// SqNorm is ‖x‖², accumulated in float64 over four independent sums (one
// chain of dependent additions would cost an add's latency per entry); the
// SIMD route keeps the sums and their order, so both give the same bits.
func SqNorm(x []float32) float64 {
	if simdSqNorm != nil {
		return simdSqNorm(x)
	}
	return sqNormGo(x)
}

// sqNormGo is SqNorm in Go.
func sqNormGo(x []float32) float64 {
	var s [4]float64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		v := x[i : i+4 : i+4]
		a, b, c, d := float64(v[0]), float64(v[1]), float64(v[2]), float64(v[3])
		s[0] += a * a
		s[1] += b * b
		s[2] += c * c
		s[3] += d * d
	}
	return sqNormTail(s, x[i:])
}

// sqNormTail adds the squares of the tail to the first sum and adds the
// four sums up.
func sqNormTail(s [4]float64, tail []float32) float64 {
	for _, v := range tail {
		s[0] += float64(v) * float64(v)
	}
	return (s[0] + s[1]) + (s[2] + s[3])
}

// SetSIMD turns the SIMD route off (false) or back on where available, and
// returns whether it is on: for tests and benchmarks of both routes.
func SetSIMD(on bool) bool {
	if !on {
		simd, simdConvert, simdCopy, simdSqNorm = nil, nil, nil, nil
	} else {
		simd, simdConvert, simdCopy, simdSqNorm, simdName = detect()
	}
	return simd != nil
}

func init() { SetSIMD(true) }
