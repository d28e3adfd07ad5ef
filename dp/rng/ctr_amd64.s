//go:build !purego

#include "textflag.h"

// Round keys are the 15 128-bit words of the FIPS-197 AES-256 key
// schedule, byte for byte as crypto/aes's encryption schedule (rk[0..1] is
// the key). Every instruction below runs in time independent of the key
// and data: AESKEYGENASSIST, AESENC and their VAES forms are the hardware
// S-box, and nothing indexes memory by a secret.

// expandStep: X1 ← expand(X1) ⊕ PSHUFD(imm, X2), expand(x) = x ⊕ x«32 ⊕
// x«64 ⊕ x«96 (the running XOR of the four words w[i-4]…), X4 scratch.
#define EXPAND(sel, prev, t) \
	PSHUFD $sel, t, t \
	MOVO   prev, X4   \
	PSLLO  $4, X4     \
	PXOR   X4, prev   \
	PSLLO  $4, X4     \
	PXOR   X4, prev   \
	PSLLO  $4, X4     \
	PXOR   X4, prev   \
	PXOR   t, prev

// ROUNDPAIR stores round keys 2i and 2i+1 (X1 even, X3 odd).
#define ROUNDPAIR(rcon, off) \
	AESKEYGENASSIST $rcon, X3, X2 \
	EXPAND(0xff, X1, X2)          \
	MOVOU X1, off(DI)             \
	AESKEYGENASSIST $0x00, X1, X2 \
	EXPAND(0xaa, X3, X2)          \
	MOVOU X3, (off+16)(DI)

// func expandKey256(key *[32]byte, rk *[240]byte)
TEXT ·expandKey256(SB), NOSPLIT, $0-16
	MOVQ  key+0(FP), SI
	MOVQ  rk+8(FP), DI
	MOVOU (SI), X1
	MOVOU 16(SI), X3
	MOVOU X1, (DI)
	MOVOU X3, 16(DI)
	ROUNDPAIR(0x01, 32)
	ROUNDPAIR(0x02, 64)
	ROUNDPAIR(0x04, 96)
	ROUNDPAIR(0x08, 128)
	ROUNDPAIR(0x10, 160)
	ROUNDPAIR(0x20, 192)
	AESKEYGENASSIST $0x40, X3, X2
	EXPAND(0xff, X1, X2)
	MOVOU X1, 224(DI)
	// Leave no key material in registers.
	PXOR X1, X1
	PXOR X2, X2
	PXOR X3, X3
	PXOR X4, X4
	RET

// bswap128 reverses the 16 bytes of each 128-bit lane: a lane holding the
// counter as a little-endian 128-bit integer becomes its big-endian block.
DATA bswap128<>+0(SB)/8, $0x08090a0b0c0d0e0f
DATA bswap128<>+8(SB)/8, $0x0001020304050607
GLOBL bswap128<>(SB), RODATA|NOPTR, $16

// laneCtr is the counter offset of each lane (low qword; high qword 0).
DATA laneCtr<>+0(SB)/8, $0
DATA laneCtr<>+8(SB)/8, $0
DATA laneCtr<>+16(SB)/8, $1
DATA laneCtr<>+24(SB)/8, $0
DATA laneCtr<>+32(SB)/8, $2
DATA laneCtr<>+40(SB)/8, $0
DATA laneCtr<>+48(SB)/8, $3
DATA laneCtr<>+56(SB)/8, $0
GLOBL laneCtr<>(SB), RODATA|NOPTR, $64

// four is 4 in the low qword of a lane.
DATA four<>+0(SB)/8, $4
DATA four<>+8(SB)/8, $0
GLOBL four<>(SB), RODATA|NOPTR, $16

#define ROUND(k) \
	VAESENC k, Z20, Z20 \
	VAESENC k, Z21, Z21 \
	VAESENC k, Z22, Z22 \
	VAESENC k, Z23, Z23 \
	VAESENC k, Z24, Z24 \
	VAESENC k, Z25, Z25 \
	VAESENC k, Z26, Z26 \
	VAESENC k, Z27, Z27

// NEXT(z): z ← the big-endian blocks of the counters in Z16, which then
// advance by 4.
#define NEXT(z) \
	VPSHUFB Z15, Z16, z \
	VPADDQ  Z17, Z16, Z16 \
	VPXORQ  Z0, z, z

#define LAST(z) \
	VAESENCLAST Z14, z, z

// func ctrVAES(rk *[240]byte, ctr uint64, dst []byte)
//
// Writes len(dst)/512 chunks of 32 keystream blocks, E(ctr), E(ctr+1), …,
// each block E(n) the encryption of n as a big-endian 128-bit counter whose
// high 64 bits are zero. The low qword of each counter lane is advanced by
// VPADDQ, so modulo 2^64; the caller never lets it wrap (see vaesCTR).
//
// Registers: Z0–Z14 the round keys in every lane, Z15 bswap128, Z16 the
// next counters n..n+3 (little-endian 128-bit lanes), Z17 4 in every
// lane, Z20–Z27 the 32 blocks in flight (eight registers cover VAESENC's
// latency).
TEXT ·ctrVAES(SB), NOSPLIT, $0-40
	MOVQ rk+0(FP), SI
	MOVQ ctr+8(FP), AX
	MOVQ dst_base+16(FP), DI
	MOVQ dst_len+24(FP), CX
	SHRQ $9, CX
	JEQ  done

	VBROADCASTI32X4 0(SI), Z0
	VBROADCASTI32X4 16(SI), Z1
	VBROADCASTI32X4 32(SI), Z2
	VBROADCASTI32X4 48(SI), Z3
	VBROADCASTI32X4 64(SI), Z4
	VBROADCASTI32X4 80(SI), Z5
	VBROADCASTI32X4 96(SI), Z6
	VBROADCASTI32X4 112(SI), Z7
	VBROADCASTI32X4 128(SI), Z8
	VBROADCASTI32X4 144(SI), Z9
	VBROADCASTI32X4 160(SI), Z10
	VBROADCASTI32X4 176(SI), Z11
	VBROADCASTI32X4 192(SI), Z12
	VBROADCASTI32X4 208(SI), Z13
	VBROADCASTI32X4 224(SI), Z14
	VBROADCASTI32X4 bswap128<>(SB), Z15

	VMOVQ           AX, X16                  // lane 0: (ctr, 0)
	VSHUFI64X2      $0, Z16, Z16, Z16        // every lane
	VPADDQ          laneCtr<>(SB), Z16, Z16  // lane k: ctr+k
	VBROADCASTI32X4 four<>(SB), Z17

loop:
	NEXT(Z20)
	NEXT(Z21)
	NEXT(Z22)
	NEXT(Z23)
	NEXT(Z24)
	NEXT(Z25)
	NEXT(Z26)
	NEXT(Z27)
	ROUND(Z1)
	ROUND(Z2)
	ROUND(Z3)
	ROUND(Z4)
	ROUND(Z5)
	ROUND(Z6)
	ROUND(Z7)
	ROUND(Z8)
	ROUND(Z9)
	ROUND(Z10)
	ROUND(Z11)
	ROUND(Z12)
	ROUND(Z13)
	LAST(Z20)
	LAST(Z21)
	LAST(Z22)
	LAST(Z23)
	LAST(Z24)
	LAST(Z25)
	LAST(Z26)
	LAST(Z27)

	VMOVDQU64 Z20, 0(DI)
	VMOVDQU64 Z21, 64(DI)
	VMOVDQU64 Z22, 128(DI)
	VMOVDQU64 Z23, 192(DI)
	VMOVDQU64 Z24, 256(DI)
	VMOVDQU64 Z25, 320(DI)
	VMOVDQU64 Z26, 384(DI)
	VMOVDQU64 Z27, 448(DI)
	ADDQ      $512, DI
	DECQ      CX
	JNE       loop

	// Leave no round keys in registers: VZEROALL clears Z0–Z15 whole.
	VZEROALL

done:
	RET
