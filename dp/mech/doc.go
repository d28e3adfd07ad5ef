// Package mech owns dpal's noise: exact samplers (Canonne, Kamath, Steinke
// 2020) and the mechanisms built on them. Every mechanism validates its
// parameters at construction and reports the Loss of one release
// (account.Mechanism), which dp/ledger charges before the release leaves.
//
// # Samplers
//
// BernoulliExp, BernoulliExpFloat, BernoulliFloat, Geometric,
// DiscreteLaplace and DiscreteGaussian implement Algorithms 1–3 of CKS 2020
// with integer and rational arithmetic only. Every Bernoulli draw compares
// uniform random bits, lazily and a byte at a time, with the exact binary
// expansion of its (rational or dyadic) probability, so the output laws are
// exactly the stated ones given uniform bits, and a sample costs only a few
// 64-bit words of randomness. Parameters that overflow 64 bits fall back to
// math/big.
//
// The vector mechanisms draw hundreds of discrete Gaussians at one σ, so
// they use tableGauss instead: rejection sampling under an alias-table
// envelope whose decisions are exact too (a 16-bit squeeze, then a float64
// test with a proven error margin, then a math/big bracket of exp(−x)
// compared with further random bits). It costs one random word per draw in
// the common case, 13–15 ns against 110–140 ns for Algorithm 3 on the
// development machine (BenchmarkTableGauss, BenchmarkDiscreteGaussian). Its
// law is the discrete Gaussian conditioned on |X| ≤ ~1448σ, a truncation of
// mass below exp(−2^19).
//
// GaussianVector of dimension ≥ 1024 (DP-SGD's noise) draws the same law
// faster (tableGauss.fill): its words come a block at a time from
// rng.Bulk, AES-256 in counter mode keyed from the caller's source (about
// four times ChaCha8's throughput with AES-NI), and the common path —
// about 99.7 % of the words at DP-SGD's σ — decides a proposal from one
// word and two table lookups without a data-dependent branch on the alias
// coin or the sign: it accepts when U's first 16 bits are below a lower
// bound of the acceptance ratio ρ on the proposal's quarter block, and
// rejects when they are at or above an upper bound. Both bounds are valid
// by the float-error argument of newTableGauss, and every other word is
// decided by the unchanged exact tiers, so no decision depends on a
// floating-point value without a proven margin. TestTableGaussFastPath
// checks every fast verdict against the exact path at the bounds' edges
// for every bucket, TestTableGaussFillReference the loop against that
// reference bit for bit, and TestAuditLaplaceGaussian audits the bulk path
// with a halved-σ mutant. A NoiseStream hands out the same draws in
// chunks of any size, so DP-SGD can draw them just in time (one core) or a
// step ahead (more cores) and release the same values.
//
// On CPUs with AVX-512 (and without the purego build tag) that common path
// runs eight words at a time in Go assembly (fillAVX512, fill_amd64.s):
// the same decision procedure in every lane, the accepted values stored
// compressed in order, and every word the common path does not decide
// handed back to the Go loop before any later word is used, so the values,
// the words consumed and the state left behind are the Go loop's, bit for
// bit (TestTableGaussFillVector, FuzzTableGaussFillVector,
// TestGaussianVectorAddToRoutes). GaussianVector.AddTo's rounding of v to
// the grid happens in the same pass. BenchmarkTableGaussFill and its
// neighbours in fill_bench_test.go time both routes in one run.
//
// # Real-valued mechanisms on a grid
//
// Laplace, Gaussian, the selection mechanisms and the vector mechanisms never
// add floating-point noise to a floating-point input (Mironov 2012). Each
// chooses a power-of-two grid step g about 4096 times finer than the smaller
// of the sensitivity and the noise scale, rounds the input to the grid
// (k = round(x/g)), adds integer noise from the exact samplers and releases
// g·(k + noise). Rounding moves an input by at most g/2, so two neighbouring
// inputs are at most K = ⌊Δ/g⌋+1 grid steps apart (ℓ2 vectors: Δ/g + √d);
// the integer noise is calibrated for that K, so the stated ε (and δ) hold
// exactly for the released values, at the price of ≈ 0.025 % more noise.
// ε itself is truncated down to a 30-bit dyadic rational ε' ≤ ε so that the
// noise parameters are integers; the ledger records the requested ε, which
// bounds the true ε'.
//
// The one approximate construction is GammaVector: its ε-DP proof covers the
// idealised continuous mechanism, not its assembly of radius × direction
// from integer Gaussians, and its Loss is named GammaVectorMechanism to say
// so. Its implementation error has a stated, tested bound in grid steps,
// and NewGammaVector refuses d·max(1, 1/ε) > MaxGammaLoad, where that bound
// passes 1/16 grid step (see its doc for why this cap rather than a proof).
//
// Randomness comes from a *rng.Rand: rng.Secure() in production, rng.Seeded
// only in tests and experiments.
package mech
