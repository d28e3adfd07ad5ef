// Package nn owns dpal's neural classifiers with native per-example
// gradients, the models DP-SGD trains (Abadi et al. 2016; Schwethelm et al.
// 2024, §3, paper 001): binary and multinomial logistic regression, MLPs
// with one to three hidden layers (ReLU or tanh, optional dropout) and the
// small tanh CNN of Papernot et al. / Tramèr & Boneh 2021 (conv 16@8×8 s2 →
// maxpool 2/1 → conv 32@4×4 s2 → maxpool 2/1 → dense 512→32→10).
//
// No autodiff framework: every layer computes its own backward pass on a
// whole batch (row-major float32 matrices, package internal/f32 for the
// products).
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
// batch products run in float32, synced from the float64 parameters at
// each call and flushed back into the float64 gradient. Per-example norms
// are accumulated in float64, so clipping is as exact as the float32
// gradients it scales (relative error ~1e-7).
//
// Products: on amd64 with AVX2 and FMA (detected at run time) they run in
// internal/f32's assembly kernels, ≈ 8× gonum's pure-Go Sgemm at the MLP's
// shapes (go test -bench Gemm ./model/nn; docs/dpsgd.md has the numbers).
// Elsewhere, or built with `-tags purego`, they run in gonum's blas32; with
// `-tags openblas` and CGO_LDFLAGS=-lopenblas, in the system's OpenBLAS
// (gonum.org/v1/netlib's cgo binding). go install needs no cgo. A seeded run
// repeats exactly on the same route whatever the core count (the SIMD
// route splits C into tasks of whole rows or panels, each entry summed in
// the same order), but not across routes: fused multiply-adds round
// differently. Fix OPENBLAS_NUM_THREADS when an OpenBLAS run must repeat
// exactly. On the SIMD route a first dense layer whose batch is at most
// sparseShare nonzero (MNIST's images: 19 %) multiplies only the nonzeros
// (internal/f32's SparseGemm, for layers a multiple of 64 wide), which
// gives the dense products' bits; float32 rows then go from the records
// straight into the sparse form, without a dense copy.
//
// Cores: besides the products, the copy of a batch's rows and the float32
// refresh of the parameters are spread over the cores in fixed pieces
// (internal/par hands them to whichever core is free); each piece is
// computed alone, so the results do not depend on the core count.
//
// Memory: a batch larger than 256 examples runs through the layers 256 at a
// time, each chunk's weight-gradient products added to the sum, so the
// layers' buffers (about 220 KB an example for the CNN) hold 256 examples
// whatever the batch; on the SIMD route the sum has the same bits as one
// pass (see clipChunk). tanh runs in internal/f32's AVX2 loop, which
// returns float32(math.Tanh(x)) bit for bit.
//
// A Net is not safe for concurrent use: it keeps its batch buffers.
package nn
