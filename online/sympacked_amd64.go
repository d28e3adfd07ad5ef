//go:build !purego

package online

import "golang.org/x/sys/cpu"

// symPackedMul adds (shift·I + D + scale·U)·x to dst for the packed upper
// triangle D + U (D its diagonal; mulPacked, floorSolver.update). With
// AVX2 and FMA it is one assembly loop (symPackedMulFMA) with one pass per
// two rows, the diagonal and the scaling inside, instead of gonum's two
// passes (Dot, then AddScaled, each SSE2) behind a call per row: at d = 90,
// 0.70 µs a product, against 1.0 µs for one pass per row and 2.2 µs for
// gonum's (go test -bench, a micro-benchmark not kept). The sums are
// grouped differently, so results differ from symPackedMulGo at rounding
// level.
var symPackedMul = symPackedMulGo

// symPackedMulDist is symPackedMul that also returns Σ (packed_k − ref_k)²
// (symPackedMulDistGo): with AVX2 and FMA one assembly loop
// (symPackedMulDistFMA) that reuses the product's loads of packed, so the
// Weyl distance costs one extra read (ref) instead of a pass over both.
var symPackedMulDist = symPackedMulDistGo

// cgUpdate is conjugateGradients' vector step (cgUpdateGo): with AVX2 and
// FMA one assembly pass (cgUpdateFMA) instead of four of gonum's.
var cgUpdate = cgUpdateGo

// symRank2 adds α·(p·qᵀ + r·sᵀ) to a packed upper triangle (symRank2Go;
// floorSolver.update, floorSolver.cholesky): with AVX2 and FMA one
// assembly pass per row (symRank2FMA) instead of two of gonum's.
var symRank2 = symRank2Go

func init() {
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		symPackedMul, symPackedMulDist, cgUpdate, symRank2 = symPackedMulAVX, symPackedMulDistAVX, cgUpdateAVX, symRank2AVX
	}
}

func symRank2AVX(b, p, q, r, s []float64, alpha float64) {
	m := len(p)
	if m == 0 {
		return
	}
	_, _, _, _ = b[m*(m+1)/2-1], q[m-1], r[m-1], s[m-1] // the kernel reads and writes this much
	symRank2FMA(&b[0], &p[0], &q[0], &r[0], &s[0], m, alpha)
}

//go:noescape
func symRank2FMA(b, p, q, r, s *float64, m int, alpha float64)

func cgUpdateAVX(y, r, p, q []float64, step float64) (rr, yy float64) {
	n := len(y)
	if n == 0 {
		return 0, 0
	}
	_, _, _ = r[n-1], p[n-1], q[n-1]
	return cgUpdateFMA(&y[0], &r[0], &p[0], &q[0], n, step)
}

//go:noescape
func cgUpdateFMA(y, r, p, q *float64, n int, step float64) (rr, yy float64)

func symPackedMulDistAVX(dst, packed, ref, x []float64, scale, shift float64) float64 {
	d := len(dst)
	if d == 0 {
		return 0
	}
	n := d * (d + 1) / 2
	_, _, _ = packed[n-1], ref[n-1], x[d-1] // the kernel reads this much
	return symPackedMulDistFMA(&packed[0], &ref[0], &x[0], &dst[0], d, scale, shift)
}

//go:noescape
func symPackedMulDistFMA(packed, ref, x, dst *float64, d int, scale, shift float64) float64

func symPackedMulAVX(dst, packed, x []float64, scale, shift float64) {
	d := len(dst)
	if d == 0 {
		return
	}
	_, _ = packed[d*(d+1)/2-1], x[d-1] // the kernel reads this much
	symPackedMulFMA(&packed[0], &x[0], &dst[0], d, scale, shift)
}

//go:noescape
func symPackedMulFMA(packed, x, dst *float64, d int, scale, shift float64)
