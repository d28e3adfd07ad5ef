//go:build !purego

#include "textflag.h"

// func fillAVX512(pairs *[4096]uint64, sub *[4096]uint32, offMask, subShift, wBits uint64,
//	w []uint64, dst []float64, step, grid, inv float64, op int, src, pre []float64, levs [][]float64, levOff int) (words, outs int)
//
// Eight words u per group, one per lane, as fastWord computes them:
//
//	j = u>>54, coin = u>>38 & 0xffff, off = u & offMask, q = off>>subShift,
//	e = pairs[j<<2 | q] (alias[j]^j | lowA<<16 | lowJ<<32 | P<<48),
//	alias when coin >= P: item = j ^ (alias[j]^j), low = lowA; else item = j, low = lowJ,
//	n = item<<wBits | off, v16 = u>>22 & 0xffff,
//	accept: v16 < low and n != 0; reject: v16 > s>>16, s = sub[item<<2 | q]; else slow,
//	X = n, negated when bit 21 of u is set.
//
// (P is prob[j] capped at 0xffff; a bucket with prob[j] = 2^16 has lowA = lowJ
// and alias[j]^j = 0, so its coin = 0xffff lane gets j as fastWord does.)
// The 16-bit comparisons are made on whole words, the two fields moved to
// the top: coin ≥ P is coin<<48 | (2^48 − 1) ≥ e, v16 < low is
// v16<<48 | (2^48 − 1) < low<<48 | r for any r < 2^48 (ties go the right
// way because the left side's low bits are all ones), and v16 > high − 1
// likewise with (high − 1)<<48 | (2^48 − 1).
//
// The fast loop takes a group whose eight lanes all accept (about 96 % of
// them) with one table gather and stores its eight values. Any other group
// goes to the careful group below (from the fast loop at its second table
// read, keeping what the fast loop computed), as does one with fewer than
// eight words left in w or slots in dst. It classifies each lane exactly
// (a gather of sub for the reject bound): lanes before the first slow one
// are consumed (all eight when none is slow, fewer at the end of w); when
// dst cannot take all their accepted values, the group ends just after the
// lane of the last value dst takes. The function returns after a group
// that stopped at a slow lane, so that Go decides that word next.
//
// The accepted values step·X are compressed in lane order into dst (op 0),
// added to it (op 1), or added to grid·round(src·inv) (op 2, round half
// away from zero, see below); op 3 is op 2 and then adds the value written
// to pre; op 4 is op 3 after src += levs[2k] and pre −= levs[2k+1] for each
// k in turn (a tree's lower levels, see fillVectorFrom; levs holds at
// least one pair, each vector read from byte levOff on). src, pre and levs
// are read, src and pre written, at dst's indices.
//
// Round half away from zero is trunc(v + copysign(h, v)), h = 0.5 − 2^−54
// (the double below 1/2), for every finite v; by symmetry take v ≥ 0. If
// v < 1/2, v ≤ h and v + h ≤ 1 − 2^−53, a double: trunc gives 0. If
// v ≥ 2^52, v is an integer and h below half its ulp: v. Otherwise
// v = k + f with 0 ≤ f < 1 and k + 1/2 a double of v's binade (or the next
// power of two): f ≥ 1/2 puts v + h at or above k + 1 − 2^−54, at most half
// an ulp below k + 1, which it rounds to (a tie only at k = 0, to the even
// 1); f < 1/2 means v ≤ k + 1/2 − ulp(v), so v + h lies below
// k + 1 − ulp(v), a double: trunc gives k. Signed zeros come out as
// math.Round's (−0.3 → −0).
//
// Registers: AX pairs, BX sub, SI next word, CX words left, DI next dst,
// DX room left in dst, R8 src − dst, R9 pre − dst, R10 lanes of the
// group, R14 op; on the stack, 0(SP) keeps R10 while op 4 walks levs and
// 8(SP) holds the end of levs.
TEXT ·fillAVX512(SB), NOSPLIT, $16-216
	MOVQ pairs+0(FP), AX
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
	MOVQ op+112(FP), R14
	MOVQ $0xffffffffffff, R11
	VPBROADCASTQ R11, Z22
	MOVQ $0x3ff, R11
	VPBROADCASTQ R11, Z26
	MOVQ $0x8000000000000000, R11
	VPBROADCASTQ R11, Z23
	MOVQ $0x3fdfffffffffffff, R11   // h = 0.5 − 2^−54
	VPBROADCASTQ R11, Z21
	MOVQ src_base+120(FP), R8
	SUBQ DI, R8
	MOVQ pre_base+144(FP), R9
	SUBQ DI, R9
	MOVQ levs_len+176(FP), R11
	LEAQ (R11)(R11*2), R11
	SHLQ $3, R11
	ADDQ levs_base+168(FP), R11
	MOVQ R11, 8(SP)                 // the end of levs

fast:
	CMPQ CX, $8
	JLO  group
	CMPQ DX, $8
	JLO  group
	VMOVDQU64 (SI), Z0               // u
	VPSRLQ    $54, Z0, Z1            // j
	VPANDQ    Z31, Z0, Z6            // off
	VPSRLQ    X30, Z6, Z7
	VPSLLQ    $2, Z1, Z8
	VPORQ     Z7, Z8, Z8             // j<<2 | off>>subShift
	KXNORB    K2, K2, K2
	VPGATHERQQ (AX)(Z8*8), K2, Z9    // alias^j | lowA<<16 | lowJ<<32 | P<<48
	VPSLLQ    $10, Z0, Z2
	VPORQ     Z22, Z2, Z2            // coin<<48 | (2^48 − 1)
	VPCMPUQ   $5, Z9, Z2, K3         // coin >= P: alias
	VPANDQ    Z26, Z9, Z5            // alias^j
	VPXORQ    Z5, Z1, K3, Z1         // item
	VPSLLQ    $16, Z9, Z10
	VPSLLQ    $32, Z9, K3, Z10       // low<<48 | less than 2^48
	VPSLLQ    $26, Z0, Z13
	VPORQ     Z22, Z13, Z13          // v16<<48 | (2^48 − 1)
	VPSLLQ    X29, Z1, Z12
	VPORQ     Z6, Z12, Z12           // n
	VPCMPUQ   $1, Z10, Z13, K4       // v16 < low
	VPTESTMQ  Z12, Z12, K4, K4       // and n != 0
	KORTESTB  K4, K4
	JCC       careful8               // a lane that does not accept: the careful group

	// y = ±step·float64(n), the sign from bit 21 of u.
	VCVTQQ2PD  Z12, Z15
	VMULPD     Z27, Z15, Z15
	VPSLLQ     $42, Z0, Z14
	VPTERNLOGQ $0x78, Z23, Z14, Z15  // y ^ (u<<42 & sign bit)
	CMPQ       R14, $1
	JLO        faststore
	JEQ        fastadd
	VMOVUPD    (DI)(R8*1), Z17       // ops 2–4: y + grid·round(src·inv)
	CMPQ       R14, $4
	JNE        fastround
	VMOVUPD    (DI)(R9*1), Z19       // op 4: the levels in turn
	MOVQ       R10, 0(SP)
	MOVQ       DI, R13
	SUBQ       dst_base+64(FP), R13
	ADDQ       levOff+192(FP), R13   // the group's byte index in levs
	MOVQ       levs_base+168(FP), R11

fastlev:
	MOVQ       (R11), R10
	VADDPD     (R10)(R13*1), Z17, Z17 // src + exact node
	MOVQ       24(R11), R10
	VSUBPD     (R10)(R13*1), Z19, Z19 // pre − its noisy value
	ADDQ       $48, R11
	CMPQ       R11, 8(SP)
	JNE        fastlev
	MOVQ       0(SP), R10
	VMOVUPD    Z17, (DI)(R8*1)

fastround:
	VMULPD     Z24, Z17, Z17
	VMOVAPD    Z21, Z18
	VPTERNLOGQ $0xf8, Z23, Z17, Z18  // copysign(h, v)
	VADDPD     Z18, Z17, Z17
	VRNDSCALEPD $3, Z17, Z18         // round(v) = trunc(v + copysign(h, v))
	VMULPD     Z25, Z18, Z18
	VADDPD     Z18, Z15, Z15
	CMPQ       R14, $3
	JLO        faststore
	JNE        fastpre
	VMOVUPD    (DI)(R9*1), Z19

fastpre:
	VADDPD     Z15, Z19, Z19         // ops 3, 4: pre + that
	VMOVUPD    Z19, (DI)(R9*1)
	JMP        faststore

fastadd:
	VADDPD (DI), Z15, Z15

faststore:
	VMOVUPD Z15, (DI)
	ADDQ    $64, SI
	SUBQ    $8, CX
	ADDQ    $64, DI
	SUBQ    $8, DX
	JMP     fast

careful8:
	// From the fast loop, eight lanes with u, off, q, item and low in
	// place: the careful group from its second table read on.
	MOVQ  $8, R10
	MOVQ  $0xff, R11
	KMOVB R11, K1
	JMP   squeeze

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

	// item and low as in the fast loop, in the lanes of K1.
	VPSRLQ     $54, Z0, Z1          // j
	VPANDQ     Z31, Z0, Z6          // off
	VPSRLQ     X30, Z6, Z7
	VPSLLQ     $2, Z1, Z8
	VPORQ      Z7, Z8, Z8           // j<<2 | off>>subShift
	KMOVB      K1, K2
	VPXORQ     Z9, Z9, Z9
	VPGATHERQQ (AX)(Z8*8), K2, Z9
	VPSLLQ     $10, Z0, Z2
	VPORQ      Z22, Z2, Z2          // coin<<48 | (2^48 − 1)
	VPCMPUQ    $5, Z9, Z2, K1, K3   // coin >= P: alias
	VPANDQ     Z26, Z9, Z5          // alias^j
	VPXORQ     Z5, Z1, K3, Z1       // item
	VPSLLQ     $16, Z9, Z10
	VPSLLQ     $32, Z9, K3, Z10     // low<<48 | less than 2^48

squeeze:
	// The quarter block's high squeeze and the proposal n.
	VPSLLQ     $2, Z1, Z8
	VPORQ      Z7, Z8, Z8           // item<<2 | off>>subShift
	KMOVB      K1, K2
	VPXORD     Y9, Y9, Y9
	VPGATHERQD (BX)(Z8*4), K2, Y9
	VPMOVZXDQ  Y9, Z9
	VPSLLQ     $32, Z9, Z11
	VPORQ      Z22, Z11, Z11        // (high squeeze − 1)<<48 | (2^48 − 1)
	VPSLLQ     X29, Z1, Z12
	VPORQ      Z6, Z12, Z12         // n
	VPSLLQ     $26, Z0, Z13
	VPORQ      Z22, Z13, Z13        // v16<<48 | (2^48 − 1)

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
	VCVTQQ2PD   Z12, Z15
	VMULPD      Z27, Z15, Z15
	VPSLLQ      $42, Z0, Z14
	VPTERNLOGQ  $0x78, Z23, Z14, Z15 // ±step·float64(n)
	KMOVB       R13, K4
	VCOMPRESSPD Z15, K4, Z16        // accepted values in lane order
	MOVQ        $0xff, R11
	BZHIQ       R15, R11, R11
	KMOVB       R11, K5             // the R15 slots of dst they go to
	CMPQ        R14, $1
	JLO         store
	JEQ         add
	VMOVUPD.Z   (DI)(R8*1), K5, Z17 // ops 2–4: y + grid·round(src·inv)
	CMPQ        R14, $4
	JNE         round
	VMOVUPD.Z   (DI)(R9*1), K5, Z19 // op 4: the levels in turn
	MOVQ        R10, 0(SP)
	MOVQ        DI, R13
	SUBQ        dst_base+64(FP), R13
	ADDQ        levOff+192(FP), R13
	MOVQ        levs_base+168(FP), R11

lev:
	MOVQ        (R11), R10
	VMOVUPD.Z   (R10)(R13*1), K5, Z20
	VADDPD      Z20, Z17, Z17       // src + exact node
	MOVQ        24(R11), R10
	VMOVUPD.Z   (R10)(R13*1), K5, Z20
	VSUBPD      Z20, Z19, Z19       // pre − its noisy value
	ADDQ        $48, R11
	CMPQ        R11, 8(SP)
	JNE         lev
	MOVQ        0(SP), R10
	VMOVUPD     Z17, K5, (DI)(R8*1)

round:
	VMULPD      Z24, Z17, Z17
	VMOVAPD     Z21, Z18
	VPTERNLOGQ  $0xf8, Z23, Z17, Z18 // copysign(h, v)
	VADDPD      Z18, Z17, Z17
	VRNDSCALEPD $3, Z17, Z18        // round(v) = trunc(v + copysign(h, v))
	VMULPD      Z25, Z18, Z18
	VADDPD      Z18, Z16, Z16
	CMPQ        R14, $3
	JLO         store
	JNE         pre
	VMOVUPD.Z   (DI)(R9*1), K5, Z19

pre:
	VADDPD      Z16, Z19, Z19       // ops 3, 4: pre + that
	VMOVUPD     Z19, K5, (DI)(R9*1)
	JMP         store

add:
	VMOVUPD.Z (DI), K5, Z17
	VADDPD    Z17, Z16, Z16

store:
	VMOVUPD Z16, K5, (DI)
	LEAQ    (SI)(R10*8), SI
	SUBQ    R10, CX
	LEAQ    (DI)(R15*8), DI
	SUBQ    R15, DX
	TESTQ   R12, R12
	JEQ     fast

done:
	SUBQ w_base+40(FP), SI
	SHRQ $3, SI
	MOVQ SI, words+200(FP)
	SUBQ dst_base+64(FP), DI
	SHRQ $3, DI
	MOVQ DI, outs+208(FP)
	VZEROUPPER
	RET

// func packOuterAVX512(dst, v []float64, c, cr2 float64)
//
// PackOuter's loop (cr2 = c·√2): for each i, dst[k] = (c·v[i])·v[i], then
// the row dst[k+1 : k+n−i] = (cr2·v[i])·v[i+1:], eight products at a time
// (the row's tail under a mask). The same products as the Go loop.
TEXT ·packOuterAVX512(SB), NOSPLIT, $0-64
	MOVQ   dst_base+0(FP), DI
	MOVQ   v_base+24(FP), SI
	MOVQ   v_len+32(FP), CX
	VMOVSD c+48(FP), X1
	VMOVSD cr2+56(FP), X2
	XORQ   R8, R8                   // i

outerRow:
	CMPQ         R8, CX
	JGE          outerDone
	VMOVSD       (SI)(R8*8), X3     // a = v[i]
	VMULSD       X1, X3, X4
	VMULSD       X3, X4, X4         // (c·a)·a
	VMOVSD       X4, (DI)
	ADDQ         $8, DI
	VMULSD       X2, X3, X5         // cr2·a
	VBROADCASTSD X5, Z5
	LEAQ         1(R8), R9
	MOVQ         CX, R10
	SUBQ         R9, R10            // the row's length
	LEAQ         (SI)(R9*8), R11

outerEight:
	CMPQ    R10, $8
	JLT     outerTail
	VMULPD  (R11), Z5, Z6
	VMOVUPD Z6, (DI)
	ADDQ    $64, R11
	ADDQ    $64, DI
	SUBQ    $8, R10
	JMP     outerEight

outerTail:
	TESTQ     R10, R10
	JEQ       outerNext
	MOVQ      $0xff, R12
	BZHIQ     R10, R12, R12
	KMOVB     R12, K1
	VMOVUPD.Z (R11), K1, Z6
	VMULPD    Z6, Z5, Z6
	VMOVUPD   Z6, K1, (DI)
	LEAQ      (DI)(R10*8), DI

outerNext:
	INCQ R8
	JMP  outerRow

outerDone:
	VZEROUPPER
	RET
