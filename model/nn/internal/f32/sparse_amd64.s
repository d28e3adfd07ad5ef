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
