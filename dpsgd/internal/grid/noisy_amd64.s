//go:build !purego

#include "textflag.h"

// func noisyMeanAVX(out *float64, sum *float32, z *float64, n int, step, ig, ib float64) bool
// Four coordinates per step: v = float64(sum) + 0; y = v·ig;
// t = trunc(y); r = t + trunc(2(y − t)); out = (step·r + z)·ib, each operation
// rounded on its own as in the Go loop. v − v is ORed into Y15, which stays
// all zero bits exactly when every v is finite.
TEXT ·noisyMeanAVX(SB), NOSPLIT, $0-57
	MOVQ         out+0(FP), DI
	MOVQ         sum+8(FP), SI
	MOVQ         z+16(FP), DX
	MOVQ         n+24(FP), CX
	LEAQ         step+32(FP), AX
	VBROADCASTSD (AX), Y12
	VBROADCASTSD 8(AX), Y13
	VBROADCASTSD 16(AX), Y14
	VXORPD       Y15, Y15, Y15
	VXORPD       Y11, Y11, Y11

loop4:
	TESTQ     CX, CX
	JEQ       done
	VCVTPS2PD (SI), Y0
	VADDPD    Y11, Y0, Y0
	VSUBPD    Y0, Y0, Y1
	VORPD     Y1, Y15, Y15
	VMULPD    Y13, Y0, Y0
	VROUNDPD  $3, Y0, Y2
	VSUBPD    Y2, Y0, Y3
	VADDPD    Y3, Y3, Y3
	VROUNDPD  $3, Y3, Y3
	VADDPD    Y3, Y2, Y2
	VMULPD    Y12, Y2, Y2
	VADDPD    (DX), Y2, Y2
	VMULPD    Y14, Y2, Y2
	VMOVUPD   Y2, (DI)
	ADDQ      $16, SI
	ADDQ      $32, DX
	ADDQ      $32, DI
	SUBQ      $4, CX
	JMP       loop4

done:
	VPTEST     Y15, Y15
	SETEQ      ret+56(FP)
	VZEROUPPER
	RET
