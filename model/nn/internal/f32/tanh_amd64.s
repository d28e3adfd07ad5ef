//go:build !purego

#include "textflag.h"

// Tanh's constants, each in four float64 (or int64) lanes.

// tanhAbs: clears the sign
DATA tanhAbs<>+0(SB)/8, $0x7fffffffffffffff
DATA tanhAbs<>+8(SB)/8, $0x7fffffffffffffff
DATA tanhAbs<>+16(SB)/8, $0x7fffffffffffffff
DATA tanhAbs<>+24(SB)/8, $0x7fffffffffffffff
GLOBL tanhAbs<>(SB), RODATA|NOPTR, $32

// tanhSign: keeps only the sign
DATA tanhSign<>+0(SB)/8, $0x8000000000000000
DATA tanhSign<>+8(SB)/8, $0x8000000000000000
DATA tanhSign<>+16(SB)/8, $0x8000000000000000
DATA tanhSign<>+24(SB)/8, $0x8000000000000000
GLOBL tanhSign<>(SB), RODATA|NOPTR, $32

// tanhTiny: 2⁻¹²⁰, below which math.Tanh serves
DATA tanhTiny<>+0(SB)/8, $0x3870000000000000
DATA tanhTiny<>+8(SB)/8, $0x3870000000000000
DATA tanhTiny<>+16(SB)/8, $0x3870000000000000
DATA tanhTiny<>+24(SB)/8, $0x3870000000000000
GLOBL tanhTiny<>(SB), RODATA|NOPTR, $32

// tanhClamp: 9.5, past which tanh rounds to 1 in float32
DATA tanhClamp<>+0(SB)/8, $0x4023000000000000
DATA tanhClamp<>+8(SB)/8, $0x4023000000000000
DATA tanhClamp<>+16(SB)/8, $0x4023000000000000
DATA tanhClamp<>+24(SB)/8, $0x4023000000000000
GLOBL tanhClamp<>(SB), RODATA|NOPTR, $32

// tanhInvLn2: 1/ln 2
DATA tanhInvLn2<>+0(SB)/8, $0x3ff71547652b82fe
DATA tanhInvLn2<>+8(SB)/8, $0x3ff71547652b82fe
DATA tanhInvLn2<>+16(SB)/8, $0x3ff71547652b82fe
DATA tanhInvLn2<>+24(SB)/8, $0x3ff71547652b82fe
GLOBL tanhInvLn2<>(SB), RODATA|NOPTR, $32

// tanhMagic: 1.5·2⁵² + 1023
DATA tanhMagic<>+0(SB)/8, $0x43380000000003ff
DATA tanhMagic<>+8(SB)/8, $0x43380000000003ff
DATA tanhMagic<>+16(SB)/8, $0x43380000000003ff
DATA tanhMagic<>+24(SB)/8, $0x43380000000003ff
GLOBL tanhMagic<>(SB), RODATA|NOPTR, $32

// tanhLn2Hi + tanhLn2Lo = ln 2, the high part with trailing zero bits
// so that k·ln2Hi is exact (fdlibm's split)
DATA tanhLn2Hi<>+0(SB)/8, $0x3fe62e42fee00000
DATA tanhLn2Hi<>+8(SB)/8, $0x3fe62e42fee00000
DATA tanhLn2Hi<>+16(SB)/8, $0x3fe62e42fee00000
DATA tanhLn2Hi<>+24(SB)/8, $0x3fe62e42fee00000
GLOBL tanhLn2Hi<>(SB), RODATA|NOPTR, $32

DATA tanhLn2Lo<>+0(SB)/8, $0x3dea39ef35793c76
DATA tanhLn2Lo<>+8(SB)/8, $0x3dea39ef35793c76
DATA tanhLn2Lo<>+16(SB)/8, $0x3dea39ef35793c76
DATA tanhLn2Lo<>+24(SB)/8, $0x3dea39ef35793c76
GLOBL tanhLn2Lo<>(SB), RODATA|NOPTR, $32

// tanhOne: 1
DATA tanhOne<>+0(SB)/8, $0x3ff0000000000000
DATA tanhOne<>+8(SB)/8, $0x3ff0000000000000
DATA tanhOne<>+16(SB)/8, $0x3ff0000000000000
DATA tanhOne<>+24(SB)/8, $0x3ff0000000000000
GLOBL tanhOne<>(SB), RODATA|NOPTR, $32

// tanhTwo: 2
DATA tanhTwo<>+0(SB)/8, $0x4000000000000000
DATA tanhTwo<>+8(SB)/8, $0x4000000000000000
DATA tanhTwo<>+16(SB)/8, $0x4000000000000000
DATA tanhTwo<>+24(SB)/8, $0x4000000000000000
GLOBL tanhTwo<>(SB), RODATA|NOPTR, $32

// tanhLow: the mantissa bits float32 rounding drops
DATA tanhLow<>+0(SB)/8, $0x000000001fffffff
DATA tanhLow<>+8(SB)/8, $0x000000001fffffff
DATA tanhLow<>+16(SB)/8, $0x000000001fffffff
DATA tanhLow<>+24(SB)/8, $0x000000001fffffff
GLOBL tanhLow<>(SB), RODATA|NOPTR, $32

// tanhOff: the midpoint 2²⁸ less the window W = 2¹⁴ ulps
DATA tanhOff<>+0(SB)/8, $0x000000000fffc000
DATA tanhOff<>+8(SB)/8, $0x000000000fffc000
DATA tanhOff<>+16(SB)/8, $0x000000000fffc000
DATA tanhOff<>+24(SB)/8, $0x000000000fffc000
GLOBL tanhOff<>(SB), RODATA|NOPTR, $32

// tanhWin2: 2W
DATA tanhWin2<>+0(SB)/8, $0x0000000000008000
DATA tanhWin2<>+8(SB)/8, $0x0000000000008000
DATA tanhWin2<>+16(SB)/8, $0x0000000000008000
DATA tanhWin2<>+24(SB)/8, $0x0000000000008000
GLOBL tanhWin2<>(SB), RODATA|NOPTR, $32

// tanhC0: q's coefficient 1/11!
DATA tanhC0<>+0(SB)/8, $0x3e5ae64567f544e4
DATA tanhC0<>+8(SB)/8, $0x3e5ae64567f544e4
DATA tanhC0<>+16(SB)/8, $0x3e5ae64567f544e4
DATA tanhC0<>+24(SB)/8, $0x3e5ae64567f544e4
GLOBL tanhC0<>(SB), RODATA|NOPTR, $32

// tanhC1: q's coefficient 1/10!
DATA tanhC1<>+0(SB)/8, $0x3e927e4fb7789f5c
DATA tanhC1<>+8(SB)/8, $0x3e927e4fb7789f5c
DATA tanhC1<>+16(SB)/8, $0x3e927e4fb7789f5c
DATA tanhC1<>+24(SB)/8, $0x3e927e4fb7789f5c
GLOBL tanhC1<>(SB), RODATA|NOPTR, $32

// tanhC2: q's coefficient 1/9!
DATA tanhC2<>+0(SB)/8, $0x3ec71de3a556c734
DATA tanhC2<>+8(SB)/8, $0x3ec71de3a556c734
DATA tanhC2<>+16(SB)/8, $0x3ec71de3a556c734
DATA tanhC2<>+24(SB)/8, $0x3ec71de3a556c734
GLOBL tanhC2<>(SB), RODATA|NOPTR, $32

// tanhC3: q's coefficient 1/8!
DATA tanhC3<>+0(SB)/8, $0x3efa01a01a01a01a
DATA tanhC3<>+8(SB)/8, $0x3efa01a01a01a01a
DATA tanhC3<>+16(SB)/8, $0x3efa01a01a01a01a
DATA tanhC3<>+24(SB)/8, $0x3efa01a01a01a01a
GLOBL tanhC3<>(SB), RODATA|NOPTR, $32

// tanhC4: q's coefficient 1/7!
DATA tanhC4<>+0(SB)/8, $0x3f2a01a01a01a01a
DATA tanhC4<>+8(SB)/8, $0x3f2a01a01a01a01a
DATA tanhC4<>+16(SB)/8, $0x3f2a01a01a01a01a
DATA tanhC4<>+24(SB)/8, $0x3f2a01a01a01a01a
GLOBL tanhC4<>(SB), RODATA|NOPTR, $32

// tanhC5: q's coefficient 1/6!
DATA tanhC5<>+0(SB)/8, $0x3f56c16c16c16c17
DATA tanhC5<>+8(SB)/8, $0x3f56c16c16c16c17
DATA tanhC5<>+16(SB)/8, $0x3f56c16c16c16c17
DATA tanhC5<>+24(SB)/8, $0x3f56c16c16c16c17
GLOBL tanhC5<>(SB), RODATA|NOPTR, $32

// tanhC6: q's coefficient 1/5!
DATA tanhC6<>+0(SB)/8, $0x3f81111111111111
DATA tanhC6<>+8(SB)/8, $0x3f81111111111111
DATA tanhC6<>+16(SB)/8, $0x3f81111111111111
DATA tanhC6<>+24(SB)/8, $0x3f81111111111111
GLOBL tanhC6<>(SB), RODATA|NOPTR, $32

// tanhC7: q's coefficient 1/4!
DATA tanhC7<>+0(SB)/8, $0x3fa5555555555555
DATA tanhC7<>+8(SB)/8, $0x3fa5555555555555
DATA tanhC7<>+16(SB)/8, $0x3fa5555555555555
DATA tanhC7<>+24(SB)/8, $0x3fa5555555555555
GLOBL tanhC7<>(SB), RODATA|NOPTR, $32

// tanhC8: q's coefficient 1/3!
DATA tanhC8<>+0(SB)/8, $0x3fc5555555555555
DATA tanhC8<>+8(SB)/8, $0x3fc5555555555555
DATA tanhC8<>+16(SB)/8, $0x3fc5555555555555
DATA tanhC8<>+24(SB)/8, $0x3fc5555555555555
GLOBL tanhC8<>(SB), RODATA|NOPTR, $32

// tanhC9: q's coefficient 1/2!
DATA tanhC9<>+0(SB)/8, $0x3fe0000000000000
DATA tanhC9<>+8(SB)/8, $0x3fe0000000000000
DATA tanhC9<>+16(SB)/8, $0x3fe0000000000000
DATA tanhC9<>+24(SB)/8, $0x3fe0000000000000
GLOBL tanhC9<>(SB), RODATA|NOPTR, $32

// func tanhAVX2(dst, src *float32, n int) int
// Tanh's approximation (tanh.go) four lanes at a time, with its rounding
// test and the 2⁻¹²⁰ test; it stops at the first group of four
// with a lane that fails either and returns its index, or n.
TEXT ·tanhAVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	XORQ BX, BX
	VMOVDQU tanhWin2<>(SB), Y11
	VPXOR   Y13, Y13, Y13

tanhloop:
	CMPQ BX, CX
	JGE  tanhdone

	// Y0 = x, Y1 = |x|; Y2 flags !(|x| ≥ tanhTiny) (NaN included), then
	// |x| is clamped (VMINPD gives the clamp for NaN).
	VCVTPS2PD (SI), Y0
	VANDPD    tanhAbs<>(SB), Y0, Y1
	VCMPPD    $9, tanhTiny<>(SB), Y1, Y2
	VMINPD    tanhClamp<>(SB), Y1, Y1

	// t = 2|x| (Y3); Y4 = t/ln2 + 1.5·2⁵² + 1023 (k + 1023 in its low
	// bits), Y5 = k, Y3 = r = t − k·ln2Hi − k·ln2Lo.
	VADDPD       Y1, Y1, Y3
	VMOVUPD      tanhMagic<>(SB), Y4
	VFMADD231PD  tanhInvLn2<>(SB), Y3, Y4
	VSUBPD       tanhMagic<>(SB), Y4, Y5
	VFNMADD231PD tanhLn2Hi<>(SB), Y5, Y3
	VFNMADD231PD tanhLn2Lo<>(SB), Y5, Y3

	// q(r) by Horner (Y6), then p = r + r²·q.
	VMOVUPD     tanhC0<>(SB), Y6
	VFMADD213PD tanhC1<>(SB), Y3, Y6
	VFMADD213PD tanhC2<>(SB), Y3, Y6
	VFMADD213PD tanhC3<>(SB), Y3, Y6
	VFMADD213PD tanhC4<>(SB), Y3, Y6
	VFMADD213PD tanhC5<>(SB), Y3, Y6
	VFMADD213PD tanhC6<>(SB), Y3, Y6
	VFMADD213PD tanhC7<>(SB), Y3, Y6
	VFMADD213PD tanhC8<>(SB), Y3, Y6
	VFMADD213PD tanhC9<>(SB), Y3, Y6
	VMULPD      Y3, Y3, Y7
	VFMADD213PD Y3, Y7, Y6

	// s = 2^k (Y4), e = s·p + (s − 1) (Y7), y = e/(e + 2) (Y9).
	VPSLLQ      $52, Y4, Y4
	VSUBPD      tanhOne<>(SB), Y4, Y7
	VFMADD231PD Y6, Y4, Y7
	VADDPD      tanhTwo<>(SB), Y7, Y8
	VDIVPD      Y8, Y7, Y9

	// Rounding test: u = low29(y) − (2²⁸ − W) flags 0 ≤ u < 2W.
	VPAND     tanhLow<>(SB), Y9, Y10
	VPSUBQ    tanhOff<>(SB), Y10, Y10
	VPCMPGTQ  Y10, Y11, Y12
	VPCMPGTQ  Y10, Y13, Y14
	VPANDN    Y12, Y14, Y12
	VPOR      Y2, Y12, Y12
	VMOVMSKPD Y12, AX
	TESTQ     AX, AX
	JNE       tanhdone

	// The sign of x, then float32.
	VANDPD     tanhSign<>(SB), Y0, Y0
	VORPD      Y0, Y9, Y9
	VCVTPD2PSY Y9, X9
	VMOVUPS    X9, (DI)
	ADDQ       $16, SI
	ADDQ       $16, DI
	ADDQ       $4, BX
	JMP        tanhloop

tanhdone:
	MOVQ BX, ret+24(FP)
	VZEROUPPER
	RET
