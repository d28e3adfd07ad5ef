//go:build !purego

#include "textflag.h"

// The packed product's pieces, shared by symPackedMulFMA and
// symPackedMulDistFMA (see the first for the registers). PAIR_START sets
// up rows i, i+1 (scale at the frame offset given); PAIR_LOOP8, _TAIL4 and
// _TAIL1 are the loop bodies (x[j] and dst[j] loaded once for both rows,
// the rows' entries left in Y11..Y14); PAIR_SUM adds the two rows' sums,
// the entry (i, i+1) and the diagonal to dst[i], dst[i+1]; PAIR_NEXT
// moves to the next pair; LAST_ROW is the single row of an odd d.
#define PAIR_START(scale) \
	LEAQ         (SI)(CX*8), R9; \
	VBROADCASTSD scale, Y15; \
	VBROADCASTSD (DI), Y8; \
	VBROADCASTSD 8(DI), Y9; \
	VMULPD       Y15, Y8, Y8; \
	VMULPD       Y15, Y9, Y9; \
	ADDQ         $16, SI; \
	ADDQ         $8, R9; \
	LEAQ         16(DI), R10; \
	LEAQ         16(DX), R8; \
	MOVQ         CX, R11; \
	SUBQ         $2, R11; \
	VXORPD       Y0, Y0, Y0; \
	VXORPD       Y1, Y1, Y1; \
	VXORPD       Y2, Y2, Y2; \
	VXORPD       Y3, Y3, Y3; \
	VXORPD       X6, X6, X6; \
	VXORPD       X7, X7, X7; \
	XORQ         AX, AX; \
	MOVQ         R11, BX; \
	ANDQ         $-8, BX

#define PAIR_LOOP8 \
	VMOVUPD     (R10)(AX*8), Y4; \
	VMOVUPD     32(R10)(AX*8), Y5; \
	VMOVUPD     (SI)(AX*8), Y11; \
	VMOVUPD     32(SI)(AX*8), Y12; \
	VMOVUPD     (R9)(AX*8), Y13; \
	VMOVUPD     32(R9)(AX*8), Y14; \
	VFMADD231PD Y11, Y4, Y0; \
	VFMADD231PD Y12, Y5, Y1; \
	VFMADD231PD Y13, Y4, Y2; \
	VFMADD231PD Y14, Y5, Y3; \
	VMOVUPD     (R8)(AX*8), Y4; \
	VMOVUPD     32(R8)(AX*8), Y5; \
	VFMADD231PD Y11, Y8, Y4; \
	VFMADD231PD Y12, Y8, Y5; \
	VFMADD231PD Y13, Y9, Y4; \
	VFMADD231PD Y14, Y9, Y5; \
	VMOVUPD     Y4, (R8)(AX*8); \
	VMOVUPD     Y5, 32(R8)(AX*8)

#define PAIR_TAIL4 \
	VMOVUPD     (R10)(AX*8), Y4; \
	VMOVUPD     (SI)(AX*8), Y11; \
	VMOVUPD     (R9)(AX*8), Y13; \
	VFMADD231PD Y11, Y4, Y1; \
	VFMADD231PD Y13, Y4, Y3; \
	VMOVUPD     (R8)(AX*8), Y5; \
	VFMADD231PD Y11, Y8, Y5; \
	VFMADD231PD Y13, Y9, Y5; \
	VMOVUPD     Y5, (R8)(AX*8)

#define PAIR_TAIL1 \
	VMOVSD      (R10)(AX*8), X4; \
	VMOVSD      (SI)(AX*8), X11; \
	VMOVSD      (R9)(AX*8), X13; \
	VFMADD231SD X11, X4, X7; \
	VFMADD231SD X13, X4, X6; \
	VMOVSD      (R8)(AX*8), X5; \
	VFMADD231SD X11, X8, X5; \
	VFMADD231SD X13, X9, X5; \
	VMOVSD      X5, (R8)(AX*8)

#define PAIR_SUM(scale, shift) \
	VADDPD       Y1, Y0, Y0; \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPD       X1, X0, X0; \
	VHADDPD      X0, X0, X0; \
	VADDSD       X7, X0, X0; \
	VMULSD       scale, X0, X0; \
	VFMADD231SD  -8(SI), X9, X0; \
	VMOVSD       -16(SI), X4; \
	VADDSD       shift, X4, X4; \
	VFMADD231SD  (DI), X4, X0; \
	VADDSD       (DX), X0, X0; \
	VMOVSD       X0, (DX); \
	VADDPD       Y3, Y2, Y2; \
	VEXTRACTF128 $1, Y2, X3; \
	VADDPD       X3, X2, X2; \
	VHADDPD      X2, X2, X2; \
	VADDSD       X6, X2, X2; \
	VMULSD       scale, X2, X2; \
	VFMADD231SD  -8(SI), X8, X2; \
	VMOVSD       -8(R9), X5; \
	VADDSD       shift, X5, X5; \
	VFMADD231SD  8(DI), X5, X2; \
	VADDSD       8(DX), X2, X2; \
	VMOVSD       X2, 8(DX)

#define PAIR_NEXT \
	LEAQ (R9)(R11*8), SI; \
	MOVQ R10, DI; \
	MOVQ R8, DX; \
	SUBQ $2, CX

#define LAST_ROW(shift) \
	VMOVSD (SI), X4; \
	VADDSD shift, X4, X4; \
	VMULSD (DI), X4, X4; \
	VADDSD (DX), X4, X4; \
	VMOVSD X4, (DX)

// func symPackedMulFMA(packed, x, dst *float64, d int, scale, shift float64)
// Adds (shift·I + D + scale·U)·x to dst, for the packed upper triangle (row
// i: the diagonal entry D_ii, then the d−1−i entries U_ij, j > i, U
// symmetric). For row i: dst[i] += (shift + D_ii)·x_i + scale·Σ_j U_ij·x_j
// and dst[j] += scale·x_i·U_ij. Two rows i, i+1 a pass, so that each column
// j > i+1 loads x[j] and dst[j] once for both
// (dst[j] += s·x_i·a_j + s·x_{i+1}·b_j), the dot products accumulating in
// two 4-lane FMA pairs, then a 4-lane step and a scalar tail; the entry
// (i, i+1) and the diagonal are added with the sums, and a last single row
// (d odd) has only its diagonal. SI walks row i from its entry (i, i+2), R9
// row i+1 from (i+1, i+2), DI x[i:], R10 x[i+2:], DX dst[i:], R8 dst[i+2:],
// CX = d − i, R11 the row tail length d − i − 2; Y8, Y9 hold scale·x_i,
// scale·x_{i+1}.
TEXT ·symPackedMulFMA(SB), NOSPLIT, $0-48
	MOVQ packed+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ dst+16(FP), DX
	MOVQ d+24(FP), CX

pair:
	CMPQ CX, $2
	JL   pend
	PAIR_START(scale+32(FP))

ploop8:
	CMPQ AX, BX
	JGE  ptail4
	PAIR_LOOP8
	ADDQ $8, AX
	JMP  ploop8

ptail4:
	MOVQ R11, BX
	ANDQ $-4, BX
	CMPQ AX, BX
	JGE  ptail1
	PAIR_TAIL4
	ADDQ $4, AX

ptail1:
	CMPQ AX, R11
	JGE  psum
	PAIR_TAIL1
	INCQ AX
	JMP  ptail1

psum:
	PAIR_SUM(scale+32(FP), shift+40(FP))
	PAIR_NEXT
	JMP pair

pend:
	CMPQ CX, $1
	JL   pdone
	LAST_ROW(shift+40(FP))

pdone:
	VZEROUPPER
	RET

// func symPackedMulDistFMA(packed, ref, x, dst *float64, d int, scale, shift float64) float64
// symPackedMulFMA's product, returning also Σ (packed_k − ref_k)² over the
// triangle (the Weyl distance of quadSolver, ref in packed's layout): the
// entries loaded for the product are reused, so ref is the only extra
// read. R12 and R13 walk ref's rows i and i+1 beside SI and R9; Y10 sums
// the squares, Y15 is their scratch.
TEXT ·symPackedMulDistFMA(SB), NOSPLIT, $0-64
	MOVQ   packed+0(FP), SI
	MOVQ   ref+8(FP), R12
	MOVQ   x+16(FP), DI
	MOVQ   dst+24(FP), DX
	MOVQ   d+32(FP), CX
	VXORPD Y10, Y10, Y10

qpair:
	CMPQ CX, $2
	JL   qend
	LEAQ (R12)(CX*8), R13
	ADDQ $16, R12
	ADDQ $8, R13
	PAIR_START(scale+40(FP))

qloop8:
	CMPQ        AX, BX
	JGE         qtail4
	PAIR_LOOP8
	VSUBPD      (R12)(AX*8), Y11, Y11
	VSUBPD      32(R12)(AX*8), Y12, Y12
	VSUBPD      (R13)(AX*8), Y13, Y13
	VSUBPD      32(R13)(AX*8), Y14, Y14
	VMULPD      Y11, Y11, Y15
	VFMADD231PD Y12, Y12, Y15
	VFMADD231PD Y13, Y13, Y15
	VFMADD231PD Y14, Y14, Y15
	VADDPD      Y15, Y10, Y10
	ADDQ        $8, AX
	JMP         qloop8

qtail4:
	MOVQ        R11, BX
	ANDQ        $-4, BX
	CMPQ        AX, BX
	JGE         qtail1
	PAIR_TAIL4
	VSUBPD      (R12)(AX*8), Y11, Y11
	VSUBPD      (R13)(AX*8), Y13, Y13
	VMULPD      Y11, Y11, Y15
	VFMADD231PD Y13, Y13, Y15
	VADDPD      Y15, Y10, Y10
	ADDQ        $4, AX

qtail1:
	CMPQ        AX, R11
	JGE         qsum
	PAIR_TAIL1
	VSUBSD      (R12)(AX*8), X11, X11
	VSUBSD      (R13)(AX*8), X13, X13
	VMULSD      X11, X11, X15
	VFMADD231SD X13, X13, X15
	VADDPD      Y15, Y10, Y10
	INCQ        AX
	JMP         qtail1

qsum:
	VMOVSD      -16(SI), X11
	VMOVSD      -8(SI), X12
	VMOVSD      -8(R9), X13
	VSUBSD      -16(R12), X11, X11
	VSUBSD      -8(R12), X12, X12
	VSUBSD      -8(R13), X13, X13
	VMULSD      X11, X11, X15
	VFMADD231SD X12, X12, X15
	VFMADD231SD X13, X13, X15
	VADDPD      Y15, Y10, Y10
	PAIR_SUM(scale+40(FP), shift+48(FP))
	LEAQ        (R13)(R11*8), R12
	PAIR_NEXT
	JMP         qpair

qend:
	CMPQ    CX, $1
	JL      qdone
	VMOVSD  (SI), X11
	VSUBSD  (R12), X11, X11
	VMULSD  X11, X11, X15
	VADDPD  Y15, Y10, Y10
	LAST_ROW(shift+48(FP))

qdone:
	VEXTRACTF128 $1, Y10, X11
	VADDPD       X11, X10, X10
	VHADDPD      X10, X10, X10
	VZEROUPPER
	MOVSD        X10, ret+56(FP)
	RET

// func cgUpdateFMA(y, r, p, q *float64, n int, step float64) (rr, yy float64)
// Sets y += step·p and r −= step·q over n entries and returns ⟨r, r⟩ and
// ⟨y, y⟩ of the new vectors: one pass of eight entries (two 4-lane pairs,
// the sums in four accumulators), then a scalar tail.
TEXT ·cgUpdateFMA(SB), NOSPLIT, $0-64
	MOVQ         y+0(FP), SI
	MOVQ         r+8(FP), DI
	MOVQ         p+16(FP), R8
	MOVQ         q+24(FP), R9
	MOVQ         n+32(FP), CX
	VBROADCASTSD step+40(FP), Y15
	VXORPD       Y0, Y0, Y0
	VXORPD       Y1, Y1, Y1
	VXORPD       Y2, Y2, Y2
	VXORPD       Y3, Y3, Y3
	XORQ         AX, AX
	MOVQ         CX, BX
	ANDQ         $-8, BX

uloop8:
	CMPQ         AX, BX
	JGE          utail
	VMOVUPD      (SI)(AX*8), Y4
	VMOVUPD      32(SI)(AX*8), Y5
	VMOVUPD      (DI)(AX*8), Y6
	VMOVUPD      32(DI)(AX*8), Y7
	VFMADD231PD  (R8)(AX*8), Y15, Y4
	VFMADD231PD  32(R8)(AX*8), Y15, Y5
	VFNMADD231PD (R9)(AX*8), Y15, Y6
	VFNMADD231PD 32(R9)(AX*8), Y15, Y7
	VMOVUPD      Y4, (SI)(AX*8)
	VMOVUPD      Y5, 32(SI)(AX*8)
	VMOVUPD      Y6, (DI)(AX*8)
	VMOVUPD      Y7, 32(DI)(AX*8)
	VFMADD231PD  Y6, Y6, Y0
	VFMADD231PD  Y7, Y7, Y2
	VFMADD231PD  Y4, Y4, Y1
	VFMADD231PD  Y5, Y5, Y3
	ADDQ         $8, AX
	JMP          uloop8

utail:
	VXORPD X8, X8, X8
	VXORPD X9, X9, X9

utail1:
	CMPQ         AX, CX
	JGE          usum
	VMOVSD       (SI)(AX*8), X4
	VMOVSD       (DI)(AX*8), X6
	VFMADD231SD  (R8)(AX*8), X15, X4
	VFNMADD231SD (R9)(AX*8), X15, X6
	VMOVSD       X4, (SI)(AX*8)
	VMOVSD       X6, (DI)(AX*8)
	VFMADD231SD  X6, X6, X8
	VFMADD231SD  X4, X4, X9
	INCQ         AX
	JMP          utail1

usum:
	VADDPD       Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X2
	VADDPD       X2, X0, X0
	VHADDPD      X0, X0, X0
	VADDSD       X8, X0, X0
	VADDPD       Y3, Y1, Y1
	VEXTRACTF128 $1, Y1, X3
	VADDPD       X3, X1, X1
	VHADDPD      X1, X1, X1
	VADDSD       X9, X1, X1
	VZEROUPPER
	MOVSD        X0, rr+48(FP)
	MOVSD        X1, yy+56(FP)
	RET

// func symRank2FMA(b, p, q, r, s *float64, m int, alpha float64)
// Adds α·(p·qᵀ + r·sᵀ) to the upper triangle of the packed m×m b (row j:
// the m − j entries (j, j..m−1)): row j += α·p_j·q[j:] + α·r_j·s[j:].
// Per row eight entries a step, then four, then a scalar tail. SI walks
// b's rows, R8 p[j:], R9 q[j:], R10 r[j:], R11 s[j:], CX = m − j;
// Y8 = α·p_j, Y9 = α·r_j, Y15 = α.
TEXT ·symRank2FMA(SB), NOSPLIT, $0-56
	MOVQ         b+0(FP), SI
	MOVQ         p+8(FP), R8
	MOVQ         q+16(FP), R9
	MOVQ         r+24(FP), R10
	MOVQ         s+32(FP), R11
	MOVQ         m+40(FP), CX
	VBROADCASTSD alpha+48(FP), Y15

rrow:
	CMPQ         CX, $0
	JLE          rdone
	VBROADCASTSD (R8), Y8
	VBROADCASTSD (R10), Y9
	VMULPD       Y15, Y8, Y8
	VMULPD       Y15, Y9, Y9
	XORQ         AX, AX
	MOVQ         CX, BX
	ANDQ         $-8, BX

rloop8:
	CMPQ        AX, BX
	JGE         rtail4
	VMOVUPD     (SI)(AX*8), Y4
	VMOVUPD     32(SI)(AX*8), Y5
	VFMADD231PD (R9)(AX*8), Y8, Y4
	VFMADD231PD 32(R9)(AX*8), Y8, Y5
	VFMADD231PD (R11)(AX*8), Y9, Y4
	VFMADD231PD 32(R11)(AX*8), Y9, Y5
	VMOVUPD     Y4, (SI)(AX*8)
	VMOVUPD     Y5, 32(SI)(AX*8)
	ADDQ        $8, AX
	JMP         rloop8

rtail4:
	MOVQ        CX, BX
	ANDQ        $-4, BX
	CMPQ        AX, BX
	JGE         rtail1
	VMOVUPD     (SI)(AX*8), Y4
	VFMADD231PD (R9)(AX*8), Y8, Y4
	VFMADD231PD (R11)(AX*8), Y9, Y4
	VMOVUPD     Y4, (SI)(AX*8)
	ADDQ        $4, AX

rtail1:
	CMPQ        AX, CX
	JGE         rnext
	VMOVSD      (SI)(AX*8), X4
	VFMADD231SD (R9)(AX*8), X8, X4
	VFMADD231SD (R11)(AX*8), X9, X4
	VMOVSD      X4, (SI)(AX*8)
	INCQ        AX
	JMP         rtail1

rnext:
	LEAQ (SI)(CX*8), SI
	ADDQ $8, R8
	ADDQ $8, R9
	ADDQ $8, R10
	ADDQ $8, R11
	DECQ CX
	JMP  rrow

rdone:
	VZEROUPPER
	RET
