//go:build !purego

#include "textflag.h"

// ARGS loads a kernel's arguments (both kernels share one signature):
// CX = k, SI = A (rows 0–2), R11 = A's row 3, R9 = A's row stride and R10
// its k stride in bytes, DI = B, DX = C, R8 = C's row stride in bytes.
#define ARGS \
	MOVQ k+0(FP), CX         \
	MOVQ a+8(FP), SI         \
	MOVQ ars+16(FP), R9      \
	MOVQ aps+24(FP), R10     \
	MOVQ b+32(FP), DI        \
	MOVQ c+40(FP), DX        \
	MOVQ ldc+48(FP), R8      \
	SHLQ $2, R9              \
	SHLQ $2, R10             \
	SHLQ $2, R8              \
	LEAQ (SI)(R9*2), R11     \
	ADDQ R9, R11

// STEP is one k step of the 6×16 tile: B's row (16 floats at DI) is Y0:Y1;
// A's six values, rows R9 bytes apart starting at SI (rows 0–2) and R11
// (rows 3–5), are broadcast in turn and multiplied into their row's two
// accumulators (row r in Y(4+2r), Y(5+2r)). Then A moves R10 bytes on and
// B 64.
#define STEP \
	VMOVUPS      (DI), Y0         \
	VMOVUPS      32(DI), Y1       \
	VBROADCASTSS (SI), Y2         \
	VBROADCASTSS (SI)(R9*1), Y3   \
	VFMADD231PS  Y0, Y2, Y4       \
	VFMADD231PS  Y1, Y2, Y5       \
	VFMADD231PS  Y0, Y3, Y6       \
	VFMADD231PS  Y1, Y3, Y7       \
	VBROADCASTSS (SI)(R9*2), Y2   \
	VBROADCASTSS (R11), Y3        \
	VFMADD231PS  Y0, Y2, Y8       \
	VFMADD231PS  Y1, Y2, Y9       \
	VFMADD231PS  Y0, Y3, Y10      \
	VFMADD231PS  Y1, Y3, Y11      \
	VBROADCASTSS (R11)(R9*1), Y2  \
	VBROADCASTSS (R11)(R9*2), Y3  \
	VFMADD231PS  Y0, Y2, Y12      \
	VFMADD231PS  Y1, Y2, Y13      \
	VFMADD231PS  Y0, Y3, Y14      \
	VFMADD231PS  Y1, Y3, Y15      \
	ADDQ         R10, SI          \
	ADDQ         R10, R11         \
	ADDQ         $64, DI

// ADDROW adds the accumulators lo:hi into the 16 floats at DX and moves DX
// to the next row (R8 bytes on).
#define ADDROW(lo, hi) \
	VADDPS  (DX), lo, lo   \
	VADDPS  32(DX), hi, hi \
	VMOVUPS lo, (DX)       \
	VMOVUPS hi, 32(DX)     \
	ADDQ    R8, DX

// func kernel6x16(k int, a *float32, ars, aps int, b, c *float32, ldc int)
TEXT ·kernel6x16(SB), NOSPLIT, $0-56
	ARGS
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	VXORPS Y12, Y12, Y12
	VXORPS Y13, Y13, Y13
	VXORPS Y14, Y14, Y14
	VXORPS Y15, Y15, Y15

loop4:
	CMPQ CX, $4
	JLT  tail
	STEP
	STEP
	STEP
	STEP
	SUBQ $4, CX
	JMP  loop4

tail:
	TESTQ CX, CX
	JEQ   store
	STEP
	DECQ  CX
	JMP   tail

store:
	ADDROW(Y4, Y5)
	ADDROW(Y6, Y7)
	ADDROW(Y8, Y9)
	ADDROW(Y10, Y11)
	ADDROW(Y12, Y13)
	ADDROW(Y14, Y15)
	VZEROUPPER
	RET

// SUMSQ adds the eight float64 lanes of Y2:Y3 into X2's low lane
// (convertAVX2 and copyAVX2 share this ending).
#define SUMSQ \
	VADDPD       Y3, Y2, Y2 \
	VEXTRACTF128 $1, Y2, X3 \
	VADDPD       X3, X2, X2 \
	VHADDPD      X2, X2, X2

// func convertAVX2(dst *float32, src *float64, n int) float64
// Converts n float64s (n a multiple of 8) to float32 and returns their sum
// of squares, accumulated in float64 over eight lanes.
TEXT ·convertAVX2(SB), NOSPLIT, $0-32
	MOVQ   dst+0(FP), DI
	MOVQ   src+8(FP), SI
	MOVQ   n+16(FP), CX
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3

loop8:
	TESTQ       CX, CX
	JEQ         done
	VMOVUPD     (SI), Y0
	VMOVUPD     32(SI), Y1
	VCVTPD2PSY  Y0, X4
	VCVTPD2PSY  Y1, X5
	VMOVUPS     X4, (DI)
	VMOVUPS     X5, 16(DI)
	VFMADD231PD Y0, Y0, Y2
	VFMADD231PD Y1, Y1, Y3
	ADDQ        $64, SI
	ADDQ        $32, DI
	SUBQ        $8, CX
	JMP         loop8

done:
	SUMSQ
	VMOVSD     X2, ret+24(FP)
	VZEROUPPER
	RET

// func copyAVX2(dst, src *float32, n int) float64
// Copies n float32s (n a multiple of 8) and returns their sum of squares,
// accumulated in float64 over eight lanes.
TEXT ·copyAVX2(SB), NOSPLIT, $0-32
	MOVQ   dst+0(FP), DI
	MOVQ   src+8(FP), SI
	MOVQ   n+16(FP), CX
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3

copy8:
	TESTQ        CX, CX
	JEQ          copydone
	VMOVUPS      (SI), Y0
	VMOVUPS      Y0, (DI)
	VCVTPS2PD    X0, Y4
	VEXTRACTF128 $1, Y0, X1
	VCVTPS2PD    X1, Y5
	VFMADD231PD  Y4, Y4, Y2
	VFMADD231PD  Y5, Y5, Y3
	ADDQ         $32, SI
	ADDQ         $32, DI
	SUBQ         $8, CX
	JMP          copy8

copydone:
	SUMSQ
	VMOVSD     X2, ret+24(FP)
	VZEROUPPER
	RET

// func sqNormAVX(acc *[4]float64, x *float32, n int)
// Adds x[4k+j]² to acc[j] for n floats (n a multiple of 4), each square
// and sum rounded on its own (no FMA), in the order of SqNorm's Go loop.
TEXT ·sqNormAVX(SB), NOSPLIT, $0-24
	MOVQ    acc+0(FP), DI
	MOVQ    x+8(FP), SI
	MOVQ    n+16(FP), CX
	VMOVUPD (DI), Y2

sq4:
	TESTQ     CX, CX
	JEQ       sqdone
	VCVTPS2PD (SI), Y0
	VMULPD    Y0, Y0, Y0
	VADDPD    Y0, Y2, Y2
	ADDQ      $16, SI
	SUBQ      $4, CX
	JMP       sq4

sqdone:
	VMOVUPD Y2, (DI)
	VZEROUPPER
	RET

// ROW64 broadcasts A's value at addr into br and multiplies it by B's row
// (Z0–Z3) into one row's four accumulators.
#define ROW64(addr, br, a, b, c, d) \
	VBROADCASTSS addr, br     \
	VFMADD231PS  Z0, br, a    \
	VFMADD231PS  Z1, br, b    \
	VFMADD231PS  Z2, br, c    \
	VFMADD231PS  Z3, br, d

// STEP64 is one k step of the 6×64 tile (AVX-512): B's row (64 floats at
// DI) is Z0–Z3; A's six values, addressed as in STEP, are broadcast in turn
// into Z4/Z5 and multiplied into their row's four accumulators (row r in
// Z(8+4r) … Z(11+4r)).
#define STEP64 \
	VMOVUPS (DI), Z0                             \
	VMOVUPS 64(DI), Z1                           \
	VMOVUPS 128(DI), Z2                          \
	VMOVUPS 192(DI), Z3                          \
	ROW64((SI), Z4, Z8, Z9, Z10, Z11)            \
	ROW64((SI)(R9*1), Z5, Z12, Z13, Z14, Z15)    \
	ROW64((SI)(R9*2), Z4, Z16, Z17, Z18, Z19)    \
	ROW64((R11), Z5, Z20, Z21, Z22, Z23)         \
	ROW64((R11)(R9*1), Z4, Z24, Z25, Z26, Z27)   \
	ROW64((R11)(R9*2), Z5, Z28, Z29, Z30, Z31)   \
	ADDQ R10, SI                                 \
	ADDQ R10, R11                                \
	ADDQ $256, DI

// ZERO4 clears four accumulators.
#define ZERO4(a, b, c, d) \
	VPXORD a, a, a \
	VPXORD b, b, b \
	VPXORD c, c, c \
	VPXORD d, d, d

// ADDROW64 adds four accumulators into the 64 floats at DX and moves DX to
// the next row (R8 bytes on).
#define ADDROW64(a, b, c, d) \
	VADDPS  (DX), a, a    \
	VADDPS  64(DX), b, b  \
	VADDPS  128(DX), c, c \
	VADDPS  192(DX), d, d \
	VMOVUPS a, (DX)       \
	VMOVUPS b, 64(DX)     \
	VMOVUPS c, 128(DX)    \
	VMOVUPS d, 192(DX)    \
	ADDQ    R8, DX

// func kernel6x64(k int, a *float32, ars, aps int, b, c *float32, ldc int)
TEXT ·kernel6x64(SB), NOSPLIT, $0-56
	ARGS
	ZERO4(Z8, Z9, Z10, Z11)
	ZERO4(Z12, Z13, Z14, Z15)
	ZERO4(Z16, Z17, Z18, Z19)
	ZERO4(Z20, Z21, Z22, Z23)
	ZERO4(Z24, Z25, Z26, Z27)
	ZERO4(Z28, Z29, Z30, Z31)

loop64:
	CMPQ CX, $2
	JLT  tail64
	STEP64
	STEP64
	SUBQ $2, CX
	JMP  loop64

tail64:
	TESTQ CX, CX
	JEQ   store64
	STEP64
	DECQ  CX
	JMP   tail64

store64:
	ADDROW64(Z8, Z9, Z10, Z11)
	ADDROW64(Z12, Z13, Z14, Z15)
	ADDROW64(Z16, Z17, Z18, Z19)
	ADDROW64(Z20, Z21, Z22, Z23)
	ADDROW64(Z24, Z25, Z26, Z27)
	ADDROW64(Z28, Z29, Z30, Z31)
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

// func compressSq(row *float32, n int, idx *int32, val *float32, next *float32) (k int, sq float64)
//
// Per 16 floats: the squared norm's FMAs exactly as copyAVX2 does them
// (so the same bits), then K1 marks the nonzeros (compare not-equal to
// zero, NaN included); VCOMPRESSPS and VPCOMPRESSD pack them and their
// columns (Z7 = i … i+15) to the front of Z10 and Z11, whose full 64 bytes
// are stored at the next free entry (the register forms: the memory forms
// are slow on some CPUs), and k moves on by the popcount. Each step also
// prefetches the next 64 bytes from next: a row read later, whose cache
// misses then overlap this one's work.
TEXT ·compressSq(SB), NOSPLIT, $0-56
	MOVQ         row+0(FP), SI
	MOVQ         n+8(FP), CX
	MOVQ         idx+16(FP), DI
	MOVQ         val+24(FP), R8
	MOVQ         next+32(FP), R10
	XORQ         R9, R9
	VXORPD       Y2, Y2, Y2
	VXORPD       Y3, Y3, Y3
	VMOVDQU32    iota<>(SB), Z7
	MOVL         $16, AX
	VPBROADCASTD AX, Z8
	VPXORD       Z9, Z9, Z9

cloop:
	PREFETCHT0   (R10)
	VMOVUPS      (SI), Y0
	VMOVUPS      32(SI), Y1
	VCVTPS2PD    X0, Y4
	VEXTRACTF128 $1, Y0, X12
	VCVTPS2PD    X12, Y5
	VFMADD231PD  Y4, Y4, Y2
	VFMADD231PD  Y5, Y5, Y3
	VCVTPS2PD    X1, Y4
	VEXTRACTF128 $1, Y1, X12
	VCVTPS2PD    X12, Y5
	VFMADD231PD  Y4, Y4, Y2
	VFMADD231PD  Y5, Y5, Y3
	VMOVUPS      (SI), Z6
	VCMPPS       $4, Z9, Z6, K1
	KMOVW        K1, AX
	TESTL        AX, AX
	JZ           cnext
	VCOMPRESSPS  Z6, K1, Z10
	VPCOMPRESSD  Z7, K1, Z11
	VMOVUPS      Z10, (R8)(R9*4)
	VMOVDQU32    Z11, (DI)(R9*4)
	POPCNTL      AX, AX
	ADDQ         AX, R9

cnext:
	VPADDD Z8, Z7, Z7
	ADDQ   $64, R10
	ADDQ   $64, SI
	SUBQ   $16, CX
	JNZ    cloop
	SUMSQ
	MOVQ   R9, k+40(FP)
	VMOVSD X2, sq+48(FP)
	VZEROUPPER
	RET
