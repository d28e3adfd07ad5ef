//go:build !purego

#include "textflag.h"

// func sparse64(k int, idx *int32, val *float32, b *float32, ldb int, c *float32)
//
// Y0–Y7 hold the 64 sums; per step, val[p] is broadcast into Y8 and
// multiplied by B's row idx[p] (at BX + idx[p]·ldb·4) into them.
TEXT ·sparse64(SB), NOSPLIT, $0-48
	MOVQ   k+0(FP), CX
	MOVQ   idx+8(FP), SI
	MOVQ   val+16(FP), DI
	MOVQ   b+24(FP), BX
	MOVQ   ldb+32(FP), R9
	MOVQ   c+40(FP), DX
	SHLQ   $2, R9
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7

loop:
	MOVLQSX      (SI), AX
	IMULQ        R9, AX
	ADDQ         BX, AX
	VBROADCASTSS (DI), Y8
	VFMADD231PS  (AX), Y8, Y0
	VFMADD231PS  32(AX), Y8, Y1
	VFMADD231PS  64(AX), Y8, Y2
	VFMADD231PS  96(AX), Y8, Y3
	VFMADD231PS  128(AX), Y8, Y4
	VFMADD231PS  160(AX), Y8, Y5
	VFMADD231PS  192(AX), Y8, Y6
	VFMADD231PS  224(AX), Y8, Y7
	ADDQ         $4, SI
	ADDQ         $4, DI
	DECQ         CX
	JNZ          loop

	VADDPS  (DX), Y0, Y0
	VADDPS  32(DX), Y1, Y1
	VADDPS  64(DX), Y2, Y2
	VADDPS  96(DX), Y3, Y3
	VADDPS  128(DX), Y4, Y4
	VADDPS  160(DX), Y5, Y5
	VADDPS  192(DX), Y6, Y6
	VADDPS  224(DX), Y7, Y7
	VMOVUPS Y0, (DX)
	VMOVUPS Y1, 32(DX)
	VMOVUPS Y2, 64(DX)
	VMOVUPS Y3, 96(DX)
	VMOVUPS Y4, 128(DX)
	VMOVUPS Y5, 160(DX)
	VMOVUPS Y6, 192(DX)
	VMOVUPS Y7, 224(DX)
	VZEROUPPER
	RET

DATA iota<>+0(SB)/4, $0
DATA iota<>+4(SB)/4, $1
DATA iota<>+8(SB)/4, $2
DATA iota<>+12(SB)/4, $3
DATA iota<>+16(SB)/4, $4
DATA iota<>+20(SB)/4, $5
DATA iota<>+24(SB)/4, $6
DATA iota<>+28(SB)/4, $7
DATA iota<>+32(SB)/4, $8
DATA iota<>+36(SB)/4, $9
DATA iota<>+40(SB)/4, $10
DATA iota<>+44(SB)/4, $11
DATA iota<>+48(SB)/4, $12
DATA iota<>+52(SB)/4, $13
DATA iota<>+56(SB)/4, $14
DATA iota<>+60(SB)/4, $15
GLOBL iota<>(SB), RODATA|NOPTR, $64

// func compress16(row *float32, n int, idx *int32, val *float32) int
//
// Per 16 floats: K1 marks the nonzeros (compare not-equal to zero, NaN
// included); VCOMPRESSPS and VPCOMPRESSD pack them and their columns
// (Z2 = i … i+15) to the front of Z1 and Z6, whose full 64 bytes are
// stored at the next free entry (the register forms: the memory forms are
// slow on some CPUs), and the count moves on by the popcount.
TEXT ·compress16(SB), NOSPLIT, $0-40
	MOVQ         row+0(FP), SI
	MOVQ         n+8(FP), CX
	MOVQ         idx+16(FP), DI
	MOVQ         val+24(FP), R8
	XORQ         R9, R9
	VMOVDQU32    iota<>(SB), Z2
	MOVL         $16, AX
	VPBROADCASTD AX, Z4
	VXORPS       Z5, Z5, Z5

cloop:
	VMOVUPS     (SI), Z0
	VCMPPS      $4, Z5, Z0, K1
	KMOVW       K1, AX
	TESTL       AX, AX
	JZ          cnext
	VCOMPRESSPS Z0, K1, Z1
	VPCOMPRESSD Z2, K1, Z6
	VMOVUPS     Z1, (R8)(R9*4)
	VMOVDQU32   Z6, (DI)(R9*4)
	POPCNTL     AX, AX
	ADDQ        AX, R9

cnext:
	VPADDD Z4, Z2, Z2
	ADDQ   $64, SI
	SUBQ   $16, CX
	JNZ    cloop
	VZEROUPPER
	MOVQ   R9, ret+32(FP)
	RET
