//go:build !purego

package f32

import "golang.org/x/sys/cpu"

// detect picks the AVX2+FMA kernels when the CPU (and OS) support them,
// and the AVX-512 one for wide products where AVX-512F is there too.
func detect() (gemmFunc, convertFunc, copyFunc, sqNormFunc, string) {
	switch {
	case cpu.X86.HasAVX2 && cpu.X86.HasFMA && hasAVX512:
		return blocked, convertSIMD, copySIMD, sqNormSIMD, "avx512"
	case cpu.X86.HasAVX2 && cpu.X86.HasFMA:
		return blocked, convertSIMD, copySIMD, sqNormSIMD, "avx2"
	}
	return nil, nil, nil, nil, ""
}

// sqNormSIMD is SqNorm's SIMD route: the same four sums, four lanes at a
// time, so the same bits.
func sqNormSIMD(x []float32) float64 {
	var s [4]float64
	n := len(x) &^ 3
	if n > 0 {
		sqNormAVX(&s, &x[0], n)
	}
	return sqNormTail(s, x[n:])
}

// sqNormAVX adds x[4k+j]² to acc[j] for n floats (n a multiple of 4).
//
//go:noescape
func sqNormAVX(acc *[4]float64, x *float32, n int)

// copyAVX2 copies n float32s (n a multiple of 8) from src to dst and
// returns their sum of squares in float64.
//
//go:noescape
func copyAVX2(dst, src *float32, n int) float64

// convertSIMD is Convert's SIMD route.
func convertSIMD(dst []float32, src []float64) float64 {
	return byEights(dst, src, convertAVX2, convertGo)
}

// copySIMD is Copy's SIMD route.
func copySIMD(dst, src []float32) float64 {
	return byEights(dst, src, copyAVX2, copyGo)
}

// byEights runs the assembly loop asm over src's whole groups of eight and
// the Go loop tail over the rest, and adds their sums of squares.
func byEights[T float32 | float64](dst []float32, src []T, asm func(*float32, *T, int) float64, tail func([]float32, []T) float64) float64 {
	dst = dst[:len(src)]
	n := len(src) &^ 7
	s := 0.0
	if n > 0 {
		s = asm(&dst[0], &src[0], n)
	}
	return s + tail(dst[n:], src[n:])
}

// kernel6x16 adds the product of a 6×k panel of A and a packed k×16 panel
// of B (16 floats per k step) to the 6×16 tile at c, whose rows are ldc
// floats apart. A's element (i, p) is at a + i·ars + p·aps floats: ars = 1,
// aps = 6 for a packed panel, or A's own strides when it is read in place.
//
//go:noescape
func kernel6x16(k int, a *float32, ars, aps int, b, c *float32, ldc int)

// convertAVX2 converts n float64s (n a multiple of 8) from src to float32
// at dst and returns their sum of squares.
//
//go:noescape
func convertAVX2(dst *float32, src *float64, n int) float64

// kernel6x64 is kernel6x16 for a 6×64 tile in AVX-512 registers, B packed
// 64 floats per k step.
//
//go:noescape
func kernel6x64(k int, a *float32, ars, aps int, b, c *float32, ldc int)
