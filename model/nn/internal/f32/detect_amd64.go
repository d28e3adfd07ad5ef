//go:build !purego

package f32

import "golang.org/x/sys/cpu"

// detect picks the AVX2+FMA kernel when the CPU (and OS) support it.
func detect() (gemmFunc, string) {
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		return blocked, "avx2"
	}
	return nil, ""
}

// kernel6x16 adds the product of a 6×k panel of A and a packed k×16 panel
// of B (16 floats per k step) to the 6×16 tile at c, whose rows are ldc
// floats apart. A's element (i, p) is at a + i·ars + p·aps floats: ars = 1,
// aps = 6 for a packed panel, or A's own strides when it is read in place.
//
//go:noescape
func kernel6x16(k int, a *float32, ars, aps int, b, c *float32, ldc int)
