//go:build !amd64 || purego

package f32

// simdRoutes is empty where there are no SIMD kernels.
func simdRoutes() map[string]gemmFunc { return nil }
