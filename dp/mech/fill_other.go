//go:build !amd64 || purego

package mech

// fillAVX is off: fill runs its Go loop.
var fillAVX = false

func fillAVX512(*[4 * tableSize]uint64, *[4 * tableSize]uint32, uint64, uint64, uint64,
	[]uint64, []float64, float64, float64, float64, int, []float64, []float64, [][]float64, int) (int, int) {
	panic("mech: no AVX-512 route")
}

func packOuterAVX512([]float64, []float64, float64, float64) {
	panic("mech: no AVX-512 route")
}
