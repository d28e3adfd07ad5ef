//go:build !purego

package grid

import "golang.org/x/sys/cpu"

// simd turns on the assembly loop (AVX: four float64 lanes, VROUNDPD).
var simd = cpu.X86.HasAVX

// noisyMeanAVX is NoisyMean's loop over n coordinates (n a multiple of 4)
// in AVX; it reports false if some sum[i] is not finite.
//
//go:noescape
func noisyMeanAVX(out *float64, sum *float32, z *float64, n int, step, ig, ib float64) bool
