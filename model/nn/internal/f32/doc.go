// Package f32 owns model/nn's float32 matrix product C = α·op(A)·op(B) +
// β·C on row-major matrices: SIMD kernels in Go assembly where the CPU has
// them (amd64 with AVX2 and FMA, and AVX-512 for wide products, detected at
// run time), and gonum's blas32
// everywhere else (other architectures, the purego build tag, or whatever
// blas32 implementation is installed, such as OpenBLAS under model/nn's
// openblas tag).
//
// The SIMD route follows the BLIS/GotoBLAS design (Goto & van de Geijn
// 2008; Van Zee & van de Geijn 2015): op(B) is packed into kc×nr panels in
// Go, in blocks sized for the L1 and L2 caches, and an assembly
// micro-kernel multiplies one 6×nr tile of C held in registers: 6×16 in
// twelve YMM registers (AVX2), or, for products at least 128 columns wide
// on CPUs with AVX-512F, 6×64 in twenty-four ZMM registers. The kernel
// reads A through a row and a k stride, so A is read in place (either
// orientation) and packed into 6×kc panels only to apply an α ≠ 1 or for
// the last mb mod 6 rows of a block: at dpal's shapes packing A cost more
// than it saved.
//
// Products of at least 2^22 flops are spread over the cores (package
// internal/par): B's panels packed once and shared, then tasks of 48 rows
// of C handed to whichever core is free; each entry of C is summed in the
// same order whatever the split, so the bits do not depend on the core
// count.
//
// Convert turns a batch's float64 inputs into float32 and returns their
// squared norm in the same pass (VCVTPD2PS and a float64 FMA per four
// entries), which the first layer's per-example gradient norms need.
//
// SparseGemm multiplies a sparse A in compressed rows (CSR) by a dense B:
// the first layer's products on mostly-zero inputs (MNIST's pixels are
// 19 % nonzero), at the cost of the nonzeros only. Its AVX2 kernel keeps a
// 64-wide row of C in eight YMM registers and adds each nonzero's row of
// B, in ascending k, block by block of kc, exactly as the dense kernels
// sum: a zero of A would only add exact zeros, so the result is the dense
// product's bit for bit. CSR.AppendRowSq builds the rows straight from the
// records with AVX-512's VCOMPRESSPS, with Copy's squared norm on the way.
//
// MaxPairs and MaxKeyPairs are the two passes of the CNN's 2×2 stride-1
// max pooling (the larger of each horizontal pair of pixels, then of each
// vertical pair of those), on order-preserving integer keys (OrderKey) so
// that the maximum and its argument's index come from integer compares and
// blends, eight lanes per AVX2 instruction; the Go loops they fall back
// to define them, ties and signed zeros included. AddColSums (the bias
// gradients' column sums) adds eight columns per AVX2 instruction, each
// column still summed down the rows in order. Spans.Gather does a
// convolution's im2col copies (a fixed list of short runs) in one
// assembly loop instead of a copy call per run.
package f32
