//go:build !purego

#include "textflag.h"

// poolMask: the bits OrderKey flips in a negative float
DATA poolMask<>+0(SB)/4, $0x7fffffff
GLOBL poolMask<>(SB), RODATA|NOPTR, $4

// poolEight: the step of the index lanes
DATA poolEight<>+0(SB)/4, $8
GLOBL poolEight<>(SB), RODATA|NOPTR, $4

// poolIota: 0…7, the lanes' offsets
DATA poolIota<>+0(SB)/4, $0
DATA poolIota<>+4(SB)/4, $1
DATA poolIota<>+8(SB)/4, $2
DATA poolIota<>+12(SB)/4, $3
DATA poolIota<>+16(SB)/4, $4
DATA poolIota<>+20(SB)/4, $5
DATA poolIota<>+24(SB)/4, $6
DATA poolIota<>+28(SB)/4, $7
GLOBL poolIota<>(SB), RODATA|NOPTR, $32

// func maxPairsAVX2(k, a *int32, src *float32, n, d, base int)
//
// Eight lanes of maxPairsGo per step: each float's key is
// b ^ ((b >> 31) & 0x7fffffff) (VPSRAD, VPAND, VPXOR), the larger key is
// VPMAXSD's, and the index takes the right pixel's only where its key is
// strictly greater (VPCMPGTD, VPBLENDVB), as the Go loop's branch does.
TEXT ·maxPairsAVX2(SB), NOSPLIT, $0-48
	MOVQ k+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ src+16(FP), DX
	MOVQ n+24(FP), CX
	MOVQ d+32(FP), R8
	MOVQ base+40(FP), AX
	LEAQ (DX)(R8*4), R9 // src + d
	VPBROADCASTD poolMask<>(SB), Y15
	VPBROADCASTD poolEight<>(SB), Y12
	MOVQ R8, X13
	VPBROADCASTD X13, Y13 // d in every lane
	MOVQ AX, X14
	VPBROADCASTD X14, Y14
	VPADDD poolIota<>(SB), Y14, Y14 // base + j + lane
	XORQ BX, BX

pairs:
	VMOVDQU (DX)(BX*4), Y0
	VMOVDQU (R9)(BX*4), Y1
	VPSRAD $31, Y0, Y2
	VPAND Y15, Y2, Y2
	VPXOR Y0, Y2, Y0 // left keys
	VPSRAD $31, Y1, Y3
	VPAND Y15, Y3, Y3
	VPXOR Y1, Y3, Y1 // right keys
	VPCMPGTD Y0, Y1, Y4 // right > left
	VPMAXSD Y0, Y1, Y5
	VPADDD Y13, Y14, Y6 // right indices
	VPBLENDVB Y4, Y6, Y14, Y7
	VMOVDQU Y5, (DI)(BX*4)
	VMOVDQU Y7, (SI)(BX*4)
	VPADDD Y12, Y14, Y14
	ADDQ $8, BX
	CMPQ BX, CX
	JB pairs
	VZEROUPPER
	RET

// func maxKeyPairsAVX2(y *float32, arg, k, a *int32, n, d int)
//
// Eight lanes of maxKeyPairsGo per step: VPMAXSD of the two keys, the
// lower one's index only where its key is strictly greater, and the key
// turned back into a float (the same flip as the key's).
TEXT ·maxKeyPairsAVX2(SB), NOSPLIT, $0-48
	MOVQ y+0(FP), DI
	MOVQ arg+8(FP), SI
	MOVQ k+16(FP), DX
	MOVQ a+24(FP), R10
	MOVQ n+32(FP), CX
	MOVQ d+40(FP), R8
	LEAQ (DX)(R8*4), R9   // k + d
	LEAQ (R10)(R8*4), R11 // a + d
	VPBROADCASTD poolMask<>(SB), Y15
	XORQ BX, BX

keys:
	VMOVDQU (DX)(BX*4), Y0
	VMOVDQU (R9)(BX*4), Y1
	VPCMPGTD Y0, Y1, Y2 // lower > upper
	VPMAXSD Y0, Y1, Y3
	VMOVDQU (R10)(BX*4), Y4
	VMOVDQU (R11)(BX*4), Y5
	VPBLENDVB Y2, Y5, Y4, Y6
	VPSRAD $31, Y3, Y7
	VPAND Y15, Y7, Y7
	VPXOR Y3, Y7, Y3
	VMOVDQU Y3, (DI)(BX*4)
	VMOVDQU Y6, (SI)(BX*4)
	ADDQ $8, BX
	CMPQ BX, CX
	JB keys
	VZEROUPPER
	RET

// func addColSumsAVX2(acc, m *float32, rows, cols, n int)
//
// Sixteen columns at a time (two accumulators, so two add chains in
// flight), then eight: each column's sum runs down the rows in order.
TEXT ·addColSumsAVX2(SB), NOSPLIT, $0-40
	MOVQ acc+0(FP), DI
	MOVQ m+8(FP), SI
	MOVQ rows+16(FP), CX
	MOVQ cols+24(FP), R8
	MOVQ n+32(FP), R9
	SHLQ $2, R8 // a row's bytes
	XORQ BX, BX // the column

sixteen:
	LEAQ 16(BX), AX
	CMPQ AX, R9
	JA eight
	VMOVUPS (DI)(BX*4), Y0
	VMOVUPS 32(DI)(BX*4), Y1
	LEAQ (SI)(BX*4), R10
	MOVQ CX, R11

rows16:
	VADDPS (R10), Y0, Y0
	VADDPS 32(R10), Y1, Y1
	ADDQ R8, R10
	DECQ R11
	JNZ rows16
	VMOVUPS Y0, (DI)(BX*4)
	VMOVUPS Y1, 32(DI)(BX*4)
	MOVQ AX, BX
	JMP sixteen

eight:
	CMPQ BX, R9
	JAE done
	VMOVUPS (DI)(BX*4), Y0
	LEAQ (SI)(BX*4), R10
	MOVQ CX, R11

rows8:
	VADDPS (R10), Y0, Y0
	ADDQ R8, R10
	DECQ R11
	JNZ rows8
	VMOVUPS Y0, (DI)(BX*4)
	ADDQ $8, BX
	JMP eight

done:
	VZEROUPPER
	RET

// func gatherAVX2(dst, src *float32, runs *Span, n int)
//
// Each Span is three int64s (Dst, Src, N): eight floats per VMOVUPS pair,
// then one at a time.
TEXT ·gatherAVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ runs+16(FP), R8
	MOVQ n+24(FP), CX

run:
	MOVQ 0(R8), AX
	MOVQ 8(R8), BX
	MOVQ 16(R8), DX
	LEAQ (DI)(AX*4), R9
	LEAQ (SI)(BX*4), R10

eights:
	CMPQ DX, $8
	JB ones
	VMOVUPS (R10), Y0
	VMOVUPS Y0, (R9)
	ADDQ $32, R9
	ADDQ $32, R10
	SUBQ $8, DX
	JMP eights

ones:
	TESTQ DX, DX
	JZ next
	MOVL (R10), AX
	MOVL AX, (R9)
	ADDQ $4, R9
	ADDQ $4, R10
	DECQ DX
	JMP ones

next:
	ADDQ $24, R8
	DECQ CX
	JNZ run
	VZEROUPPER
	RET
