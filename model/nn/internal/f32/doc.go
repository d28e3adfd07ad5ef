// Package f32 owns model/nn's float32 matrix product C = α·op(A)·op(B) +
// β·C on row-major matrices: SIMD kernels in Go assembly where the CPU has
// them (amd64 with AVX2 and FMA, and AVX-512 for wide products, detected at
// run time), and gonum's blas32
// everywhere else (other architectures, the purego build tag, or whatever
// blas32 implementation is installed, such as OpenBLAS under model/nn's
// openblas tag).
//
// The SIMD route follows the BLIS/GotoBLAS design (Goto & van de Geijn
// 2008; Van Zee & van de Geijn 2015): op(B) is packed into kc×nr panels and
// op(A) into 6×kc panels in Go, in blocks sized for the L1 and L2 caches,
// and an assembly micro-kernel multiplies one 6×nr tile of C held in
// registers: 6×16 in twelve YMM registers (AVX2), or, for products at least
// 128 columns wide on CPUs with AVX-512F, 6×64 in twenty-four ZMM
// registers. Packing absorbs the transposes and α, so each kernel is the
// same for every case. A panel of A is read in place instead when C is at
// most three panels wide (logistic regression's 10 classes, a convolution's
// 16 or 32 channels), where packing it would cost more than it saves.
//
// Convert turns a batch's float64 inputs into float32 and returns their
// squared norm in the same pass (VCVTPD2PS and a float64 FMA per four
// entries), which the first layer's per-example gradient norms need.
package f32
