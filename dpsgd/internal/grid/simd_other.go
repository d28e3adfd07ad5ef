//go:build !amd64 || purego

package grid

// simd is off: NoisyMean runs in Go.
var simd = false

func noisyMeanAVX(*float64, *float32, *float64, int, float64, float64, float64) bool {
	panic("grid: no SIMD route")
}
