//go:build !purego

package f32

import "golang.org/x/sys/cpu"

// poolSIMD turns on MaxPairs's and MaxKeyPairs's assembly loops.
var poolSIMD = cpu.X86.HasAVX2

// maxPairsAVX2 is MaxPairs for n values (n a positive multiple of 8).
//
//go:noescape
func maxPairsAVX2(k, a *int32, src *float32, n, d, base int)

// maxKeyPairsAVX2 is MaxKeyPairs for n values (n a positive multiple of 8).
//
//go:noescape
func maxKeyPairsAVX2(y *float32, arg, k, a *int32, n, d int)

// addColSumsAVX2 is AddColSums for the first n columns (n a positive
// multiple of 8, rows > 0).
//
//go:noescape
func addColSumsAVX2(acc, m *float32, rows, cols, n int)

// gatherAVX2 is Gather for n > 0 runs, whose extents the caller checked.
//
//go:noescape
func gatherAVX2(dst, src *float32, runs *Span, n int)
