// Package dpsgd owns DP-SGD training (Abadi et al. 2016, Alg. 1) as
// Schwethelm et al. 2024 (paper 001, §3, Fig. 2 and the step amplification
// of §3.3) run it: Poisson sampling with a sampling rate per group of
// records, per-example ℓ2 clipping to C, Gaussian noise of standard
// deviation σ·C per coordinate, the noisy sum divided by the fixed expected
// batch size, then SGD, momentum, Adam or NAdam.
//
// Neighbouring relation: add/remove one record. A record of a group with
// rate q takes part in each step independently with probability q, so each
// step is, for that record, the Poisson-subsampled Gaussian mechanism with
// rate q and noise multiplier σ, whatever the other records' rates; its
// loss over T steps is account.SubsampledGaussian({q, σ, T}) (Mironov,
// Talwar & Zhang 2019), which Run charges to the group's ledger entry
// before the first step. What is released is every intermediate parameter
// vector (the adversary of paper 001, §3.1, sees them all); the returned
// model is one of them. RunIntervals charges the same loss interval by
// interval (RDP curves add over steps, so the parts sum to the whole),
// each part just before its steps, under an idempotent ledger key, and
// checkpoints the run at each interval's end: a run killed midway has paid
// for the intervals it began, and resumed from its checkpoint it pays for
// none of them again and, under a seed, ends with the uninterrupted run's
// parameters bit for bit.
//
// Exactness: sampling draws an exact Bernoulli(q) per record (one random
// byte compared with ⌊256q⌋, a tie settled by dp/mech's exact
// BernoulliFloat of the rest; see sample), never resamples, drops or pads
// (an empty batch is still a step, its update pure noise), and the noise is
// mech.GaussianVector's (Noise): exact discrete Gaussians on a power-of-two
// grid whose variance covers the grid rounding (see its doc), drawn on a
// second goroutine while the gradient is computed. Both streams are
// rng.Bulk children (AES-256-CTR) of the caller's source: secure under
// rng.Secure, reproducible under a seed. The divisor is the expected batch size Σ_g q_g·|g|,
// never the realised one, which would leak (Opacus issue #571); the group
// sizes in it are treated as public, as Abadi et al. and Opacus treat n.
// Results
// under a seeded source do not depend on the number of cores: the sampling,
// dropout and noise streams are split from the caller's source, gonum's
// parallel GEMM sums in a fixed order, and model/nn computes each example's
// norm alone.
//
// Preset is each dataset's tuned Setting per model and ε (the table of
// docs/dpsgd.md, measured in docs/repro-dpsgd.md), chosen before and
// independently of the private data; dpal train, pool run and repro dpsgd
// all start from it.
package dpsgd
