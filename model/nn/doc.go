// Package nn owns dpal's neural classifiers with native per-example
// gradients, the models DP-SGD trains (Abadi et al. 2016; Schwethelm et al.
// 2024, §3, paper 001): binary and multinomial logistic regression, MLPs
// with one to three hidden layers (ReLU or tanh, optional dropout) and the
// small tanh CNN of Papernot et al. / Tramèr & Boneh 2021 (conv 16@8×8 s2 →
// maxpool 2/1 → conv 32@4×4 s2 → maxpool 2/1 → dense 512→32→10).
//
// No autodiff framework: every layer computes its own backward pass on a
// whole batch (row-major float64 matrices, gonum BLAS for the products).
// ClippedGrad returns Σ_i c_i ∇ℓ_i, c_i = min(1, C/‖∇ℓ_i‖), the clipped sum
// DP-SGD noises. Per-example gradients are not materialised where a layer
// allows it: for a dense layer with input a_i and output gradient g_i,
// ‖∇W_i‖² + ‖∇b_i‖² = (‖a_i‖² + 1)·‖g_i‖², and the clipped sum is one
// product Aᵀ·diag(c)·G. A convolution's per-example gradient U_iᵀG_i (U_i the
// unfolded input, im2col) is materialised per example for its norm only;
// its clipped sum is again one product. PerExampleGrads materialises every
// gradient, for tests and audits.
//
// Precision: parameters, gradients, clipping factors and norms are float64
// (the precision of the noise, the optimiser and the saved model); the
// batch products run in float32 (gonum's blas32), synced from the float64
// parameters at each call and flushed back into the float64 gradient.
// Measured on the development machine (go test -bench Gemm ./model/nn, one
// core): Sgemm 13.5 against Dgemm 4.2 GFLOPS at the MLP's 256×784·784×256.
// Per-example norms are accumulated in float64, so clipping is as exact as
// the float32 gradients it scales (relative error ~1e-7).
//
// The products use whatever blas32 implementation is installed: gonum's
// pure-Go one by default (go install needs no cgo), or the system's
// OpenBLAS when built with `-tags openblas` and CGO_LDFLAGS=-lopenblas
// (gonum.org/v1/netlib's cgo binding; 2–4× faster GEMM measured here). Fix
// OPENBLAS_NUM_THREADS when a seeded run must repeat exactly across
// machines: OpenBLAS may split a product differently with another count.
//
// A Net is not safe for concurrent use: it keeps its batch buffers.
package nn
