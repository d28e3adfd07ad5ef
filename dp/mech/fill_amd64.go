//go:build !purego

package mech

import "golang.org/x/sys/cpu"

// fillAVX turns on fillVector, fill's loop in AVX-512 (F; DQ for the
// int64 → float64 conversion and byte masks; VL for EVEX on 256-bit
// registers; BMI1/2 and POPCNT for the lane masks).
var fillAVX = cpu.X86.HasAVX512F && cpu.X86.HasAVX512DQ && cpu.X86.HasAVX512VL &&
	cpu.X86.HasBMI1 && cpu.X86.HasBMI2 && cpu.X86.HasPOPCNT

// fillAVX512 runs fill's common path over the words w, eight at a time,
// writing the accepted values to dst by op (see fillVectorFrom: src, pre
// and levs are read at dst's indices, levs' vectors from byte levOff on,
// only by the ops that use them). It returns
// how many words it consumed and values it wrote; it stops at the end of
// w, when dst is full, or before a word that fastWord does not decide.
//
//go:noescape
func fillAVX512(pairs *[4 * tableSize]uint64, sub *[4 * tableSize]uint32, offMask, subShift, wBits uint64,
	w []uint64, dst []float64, step, grid, inv float64, op int, src, pre []float64, levs [][]float64, levOff int) (words, outs int)

// packOuterAVX512 is PackOuter's loop in AVX-512 (cr2 = c·√2), the same
// products: dst must hold SymDim(len(v)) entries.
//
//go:noescape
func packOuterAVX512(dst, v []float64, c, cr2 float64)
