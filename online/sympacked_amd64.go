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

// sqDist is Σ (a_k − b_k)² (len(b) ≥ len(a)): with AVX2 and FMA one
// assembly loop (sqDistFMA) in sixteen lanes, else sqDistGo.
var sqDist = sqDistGo

func init() {
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		symPackedMul, sqDist = symPackedMulAVX, sqDistAVX
	}
}

func sqDistAVX(a, b []float64) float64 {
	if len(a) == 0 {
		return 0
	}
	b = b[:len(a)]
	return sqDistFMA(&a[0], &b[0], len(a))
}

//go:noescape
func sqDistFMA(a, b *float64, n int) float64

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
