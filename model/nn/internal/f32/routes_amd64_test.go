//go:build !purego

package f32

// simdRoutes are the SIMD kernels this CPU can run, each forced on its
// own: "avx2" alone, and "avx512" (its 6×64 kernel for wide products).
func simdRoutes() map[string]gemmFunc {
	if simd == nil {
		return nil
	}
	with := func(on bool) gemmFunc {
		return func(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
			defer func(old bool) { hasAVX512 = old }(hasAVX512)
			hasAVX512 = on
			blocked(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		}
	}
	out := map[string]gemmFunc{"avx2": with(false)}
	if hasAVX512 {
		out["avx512"] = with(true)
	}
	return out
}
