//go:build !purego

#include "textflag.h"

// func fillAVX512(lanes *[1024]uint32, sub *[4096]uint32, offMask, subShift, wBits uint64,
//	w []uint64, dst []float64, step, grid, inv float64, op int) (words, outs int)
//
// Eight words u per group, one per lane, as fastWord computes them:
//
//	j = u>>54, coin = u>>38 & 0xffff, e = lanes[j] (alias[j] | prob[j]<<10),
//	item = coin >= e>>10 ? e & 0x3ff : j, off = u & offMask,
//	s = sub[item<<2 | off>>subShift], n = item<<wBits | off, v16 = u>>22 & 0xffff,
//	accept: v16 < s&0xffff and n != 0; reject: v16 > s>>16; else slow,
//	X = n, negated when bit 21 of u is set.
//
// Lanes before the first slow one are consumed (all eight when none is
// slow, fewer at the end of w); when dst cannot take all their accepted
// values, the group ends just after the lane of the last value dst takes.
// The accepted values step·X are compressed in lane order into dst (op 0),
// added to it (op 1), or added to grid·round(dst·inv) (op 2, round half
// away from zero as t + trunc(2(v − t)), t = trunc(v)). The function
// returns after a group that stopped at a slow lane, so that Go decides
// that word next.
//
// Registers: AX lanes, BX sub, SI next word, CX words left, DI next dst,
// DX room left in dst, R8 words consumed, R9 values written, R10 lanes of the group.
TEXT ·fillAVX512(SB), NOSPLIT, $0-136
	MOVQ lanes+0(FP), AX
	MOVQ sub+8(FP), BX
	VPBROADCASTQ offMask+16(FP), Z31
	MOVQ subShift+24(FP), R11
	VMOVQ R11, X30
	MOVQ wBits+32(FP), R11
	VMOVQ R11, X29
	MOVQ w_base+40(FP), SI
	MOVQ w_len+48(FP), CX
	MOVQ dst_base+64(FP), DI
	MOVQ dst_len+72(FP), DX
	VBROADCASTSD step+88(FP), Z27
	VBROADCASTSD grid+96(FP), Z25
	VBROADCASTSD inv+104(FP), Z24
	MOVQ $0xffff, R11
	VPBROADCASTQ R11, Z28
	MOVQ $0x3ff, R11
	VPBROADCASTQ R11, Z26
	XORQ R8, R8
	XORQ R9, R9

group:
	TESTQ CX, CX
	JEQ   done
	TESTQ DX, DX
	JEQ   done

	// K1: the lanes holding a word (min(CX, 8) of them).
	MOVQ    $8, R10
	CMPQ    CX, R10
	CMOVQCS CX, R10                 // lanes to consume if none is slow
	MOVQ    $0xff, R11
	BZHIQ   R10, R11, R11           // (BZHI reads only 8 bits of its index)
	KMOVB   R11, K1
	VMOVDQU64.Z (SI), K1, Z0        // u

	// item: bucket j, or its alias when coin >= prob[j].
	VPSRLQ     $54, Z0, Z1          // j
	VPSRLQ     $38, Z0, Z2
	VPANDQ     Z28, Z2, Z2          // coin
	KMOVB      K1, K2
	VPXORD     Y3, Y3, Y3
	VPGATHERQD (AX)(Z1*4), K2, Y3   // alias | prob<<10
	VPMOVZXDQ  Y3, Z3
	VPSRLQ     $10, Z3, Z4          // prob
	VPCMPUQ    $5, Z4, Z2, K1, K3   // coin >= prob
	VPANDQ     Z26, Z3, Z3          // alias
	VMOVDQA64  Z3, K3, Z1           // item

	// The quarter block's squeezes s and the proposal n.
	VPANDQ     Z31, Z0, Z6          // off
	VPSRLQ     X30, Z6, Z7
	VPSLLQ     $2, Z1, Z8
	VPORQ      Z7, Z8, Z8           // item<<2 | off>>subShift
	KMOVB      K1, K2
	VPXORD     Y9, Y9, Y9
	VPGATHERQD (BX)(Z8*4), K2, Y9
	VPMOVZXDQ  Y9, Z9
	VPANDQ     Z28, Z9, Z10         // low squeeze
	VPSRLQ     $16, Z9, Z11         // high squeeze − 1
	VPSLLQ     X29, Z1, Z12
	VPORQ      Z6, Z12, Z12         // n
	VPSRLQ     $22, Z0, Z13
	VPANDQ     Z28, Z13, Z13        // v16

	// Verdicts: R13 accepted lanes, R12 slow ones.
	VPCMPUQ  $1, Z10, Z13, K1, K4   // v16 < low
	VPTESTMQ Z12, Z12, K4, K4       // and n != 0
	VPCMPUQ  $6, Z11, Z13, K1, K5   // v16 > high − 1: rejected
	KMOVB    K4, R13
	KMOVB    K5, R12
	ORQ      R13, R12
	ANDNQ    R11, R12, R12          // lanes neither accepted nor rejected
	TESTQ    R12, R12
	JEQ      counted
	TZCNTQ   R12, R10               // consume the lanes before the first slow one
	BZHIQ    R10, R13, R13

counted:
	POPCNTQ R13, R15                // values of the group
	CMPQ    R15, DX
	JLO     values

	// dst takes DX of them: stop after the lane of the DX-th.
	MOVQ R13, R11
	MOVQ DX, R15

trim:
	DECQ  R15
	JEQ   trimmed
	BLSRQ R11, R11
	JMP   trim

trimmed:
	TZCNTQ R11, R10
	INCQ   R10
	BZHIQ  R10, R13, R13
	MOVQ   DX, R15

values:
	// X = n, negated for the sign bit (bit 21); y = step·float64(X).
	VPSLLQ      $42, Z0, Z14
	VPSRAQ      $63, Z14, Z14
	VPXORQ      Z14, Z12, Z15
	VPSUBQ      Z14, Z15, Z15
	VCVTQQ2PD   Z15, Z15
	VMULPD      Z27, Z15, Z15
	KMOVB       R13, K4
	VCOMPRESSPD Z15, K4, Z16        // accepted values in lane order
	MOVQ        $0xff, R11
	BZHIQ       R15, R11, R11
	KMOVB       R11, K5             // the R15 slots of dst they go to
	CMPQ        op+112(FP), $1
	JLO         store
	JEQ         add
	VMOVUPD.Z   (DI), K5, Z17       // op 2: y + grid·round(dst·inv)
	VMULPD      Z24, Z17, Z17
	VRNDSCALEPD $3, Z17, Z18        // t = trunc(v)
	VSUBPD      Z18, Z17, Z17
	VADDPD      Z17, Z17, Z17
	VRNDSCALEPD $3, Z17, Z17
	VADDPD      Z17, Z18, Z18       // t + trunc(2(v − t))
	VMULPD      Z25, Z18, Z18
	VADDPD      Z18, Z16, Z16
	JMP         store

add:
	VMOVUPD.Z (DI), K5, Z17
	VADDPD    Z17, Z16, Z16

store:
	VMOVUPD Z16, K5, (DI)
	LEAQ    (SI)(R10*8), SI
	SUBQ    R10, CX
	ADDQ    R10, R8
	LEAQ    (DI)(R15*8), DI
	SUBQ    R15, DX
	ADDQ    R15, R9
	TESTQ   R12, R12
	JEQ     group

done:
	MOVQ R8, words+120(FP)
	MOVQ R9, outs+128(FP)
	VZEROUPPER
	RET
