//go:build !purego

#include "textflag.h"

// func symPackedFMA(packed, w, dst *float64, d int)
// For each row i of the packed upper triangle (diagonal entry first, then
// the d−1−i entries (i, j), j > i): dst[i] += Σ_j row_j·w[j], and
// dst[j] += w[i]·row_j. Two 4-lane FMA accumulators for the dot product, a
// 4-lane step and a scalar tail. SI walks packed, DI w, DX dst[i], R8
// dst[i+1], CX the row length.
TEXT ·symPackedFMA(SB), NOSPLIT, $0-32
	MOVQ packed+0(FP), SI
	MOVQ w+8(FP), DI
	MOVQ dst+16(FP), DX
	MOVQ d+24(FP), CX

row:
	DECQ         CX
	JL           end
	VBROADCASTSD (DI), Y4
	ADDQ         $8, SI
	ADDQ         $8, DI
	LEAQ         8(DX), R8
	VXORPD       Y0, Y0, Y0
	VXORPD       Y1, Y1, Y1
	VXORPD       X7, X7, X7
	XORQ         AX, AX
	MOVQ         CX, BX
	ANDQ         $-8, BX

loop8:
	CMPQ        AX, BX
	JGE         tail4
	VMOVUPD     (SI)(AX*8), Y2
	VMOVUPD     32(SI)(AX*8), Y3
	VFMADD231PD (DI)(AX*8), Y2, Y0
	VFMADD231PD 32(DI)(AX*8), Y3, Y1
	VMOVUPD     (R8)(AX*8), Y5
	VMOVUPD     32(R8)(AX*8), Y6
	VFMADD231PD Y2, Y4, Y5
	VFMADD231PD Y3, Y4, Y6
	VMOVUPD     Y5, (R8)(AX*8)
	VMOVUPD     Y6, 32(R8)(AX*8)
	ADDQ        $8, AX
	JMP         loop8

tail4:
	MOVQ        CX, BX
	ANDQ        $-4, BX
	CMPQ        AX, BX
	JGE         tail1
	VMOVUPD     (SI)(AX*8), Y2
	VFMADD231PD (DI)(AX*8), Y2, Y1
	VMOVUPD     (R8)(AX*8), Y5
	VFMADD231PD Y2, Y4, Y5
	VMOVUPD     Y5, (R8)(AX*8)
	ADDQ        $4, AX

tail1:
	CMPQ        AX, CX
	JGE         sum
	VMOVSD      (SI)(AX*8), X2
	VFMADD231SD (DI)(AX*8), X2, X7
	VMOVSD      (R8)(AX*8), X5
	VFMADD231SD X2, X4, X5
	VMOVSD      X5, (R8)(AX*8)
	INCQ        AX
	JMP         tail1

sum:
	VADDPD       Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPD       X1, X0, X0
	VHADDPD      X0, X0, X0
	VADDSD       X7, X0, X0
	VADDSD       (DX), X0, X0
	VMOVSD       X0, (DX)
	LEAQ         (SI)(CX*8), SI
	MOVQ         R8, DX
	JMP          row

end:
	VZEROUPPER
	RET

// func sqDistFMA(a, b *float64, n int) float64
// Returns Σ (a[k] − b[k])² over n entries: four 4-lane accumulators, then
// a scalar tail.
TEXT ·sqDistFMA(SB), NOSPLIT, $0-32
	MOVQ   a+0(FP), SI
	MOVQ   b+8(FP), DI
	MOVQ   n+16(FP), CX
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	XORQ   AX, AX
	MOVQ   CX, BX
	ANDQ   $-16, BX

dloop16:
	CMPQ        AX, BX
	JGE         dtail
	VMOVUPD     (SI)(AX*8), Y4
	VMOVUPD     32(SI)(AX*8), Y5
	VMOVUPD     64(SI)(AX*8), Y6
	VMOVUPD     96(SI)(AX*8), Y7
	VSUBPD      (DI)(AX*8), Y4, Y4
	VSUBPD      32(DI)(AX*8), Y5, Y5
	VSUBPD      64(DI)(AX*8), Y6, Y6
	VSUBPD      96(DI)(AX*8), Y7, Y7
	VFMADD231PD Y4, Y4, Y0
	VFMADD231PD Y5, Y5, Y1
	VFMADD231PD Y6, Y6, Y2
	VFMADD231PD Y7, Y7, Y3
	ADDQ        $16, AX
	JMP         dloop16

dtail:
	VXORPD X7, X7, X7

dtail1:
	CMPQ        AX, CX
	JGE         dsum
	VMOVSD      (SI)(AX*8), X4
	VSUBSD      (DI)(AX*8), X4, X4
	VFMADD231SD X4, X4, X7
	INCQ        AX
	JMP         dtail1

dsum:
	VADDPD       Y1, Y0, Y0
	VADDPD       Y3, Y2, Y2
	VADDPD       Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPD       X1, X0, X0
	VHADDPD      X0, X0, X0
	VADDSD       X7, X0, X0
	VZEROUPPER
	MOVSD        X0, ret+24(FP)
	RET
