//go:build purego || !amd64

package f32

// CanSparse reports whether SparseGemm runs for products n columns wide:
// never without the SIMD route, whose sums it reproduces.
func CanSparse(int) bool { return false }

// SparseGemm is not available without the SIMD route (see CanSparse).
func SparseGemm(int, int, *CSR, []float32, int, float32, []float32, int) {
	panic("f32: SparseGemm without CanSparse")
}

// appendNonzeros is appendNonzerosGo from column 0.
func appendNonzeros(a *CSR, row []float32) { appendNonzerosGo(a, row, 0) }

// AppendRowSq is not available without the SIMD route: it reports false.
func (a *CSR) AppendRowSq(_, _ []float32) (float64, bool) { return 0, false }
