// Package groupsearch owns dpal's differentially private noisy binary
// search for a single anomaly among n+1 individuals (Bittner, Sarwate,
// Wright 2018, "Using Noisy Binary Search for Differentially Private
// Anomaly Detection"; equation numbers below refer to that paper).
//
// Two roles meet at a narrow interface. An Oracle holds the scores x_i ≥ 0
// and answers a group query Q ⊂ [n+1] with a differentially private
// Response; it owns the ledger.Ledger and records each answer's loss
// before the answer leaves. A Searcher holds only the posterior f_t over
// [n+1] (in log space), chooses the queries (random permutation and median
// split, eq. 10) and updates the posterior from each response through a
// Likelihood built from public parameters only (t_ℓ, t_h, ε). The searcher
// never sees a score, so a remote sensor can implement Oracle.
//
// # Neighbouring relation and guarantee
//
// Anomaly-restricted neighbours (Definitions 1–3): two score vectors that
// agree on the anomaly x* ≥ t_h and differ in one non-anomalous score, both
// values in [0, t_ℓ]. Under this relation:
//
//   - the noisy-max oracle (eq. 8–9) releases max over Q and max over its
//     complement, each plus Laplace noise of scale t_ℓ/ε; the sensitivity of
//     each max is t_ℓ (Lemma 1) and only one of the two can change, so one
//     answer is ε-DP (Prop. 2) and t answers are tε-DP (sequential
//     composition). Noise comes from mech.Laplace (FP-safe, see dp/mech).
//   - the binarised oracle releases only Z_t = 1(Y_t > Ȳ_t), a
//     post-processing of the noisy-max pair: ε per answer.
//   - the randomized-response oracle (eq. 5) releases 1(i* ∈ Q) ⊕ Bernoulli(p)
//     and is charged ε = ln((1−p)/p) (Prop. 1). Note (checked, see
//     docs/repro-search.md): its answer depends on the data only through i*,
//     which anomaly-restricted neighbours share, so against Definition 1 it
//     leaks nothing about non-anomalous individuals; Prop. 1's ε is the
//     guarantee for the bit 1(i* ∈ Q) itself (the anomaly's location), and
//     the ledger is charged that conservative value.
//   - the mean oracle (§4.2, "hypothetically") releases the two group means
//     plus Laplace noise of scale t_ℓ/(|Q|ε) and t_ℓ/(|Q̄|ε): ε per answer.
//     Each group's sum is an exact integer sum of the scores floored to a
//     grid of t_ℓ·2^−24 or finer (scores capped at the larger of t_h and
//     2^32·t_ℓ/max(1, ε), which only an anomaly can reach),
//     so a changed score moves only its own group's mean, by at most
//     t_ℓ/|group|; floating-point sums would not keep either half.
//
// All guarantees need every non-anomalous score in [0, t_ℓ] and t_ℓ, t_h
// chosen without looking at the data. Scores strictly between t_ℓ and t_h
// are rejected, or clipped down to t_ℓ when Params.Clip is set. Thresholds
// computed from the data (as in the paper's §6.1 experiments) void the
// guarantee: t_ℓ = 0.9x_j + 0.1x* and t_h = 0.1x_j + 0.9x* reveal the
// largest non-anomalous score x_j = (9t_ℓ − t_h)/8 exactly, so the true ε
// for that individual is unbounded (repro/searchrepro reports the check).
//
// # Queries
//
// The searcher draws eq. 10's random permutation afresh each round and
// asks its longest prefix with posterior mass below 1/2, extended by the
// next element when that brings the mass closer to 1/2. StrictMedian gives
// eq. 10's rule exactly, which stalls once single points carry mass near
// 1/2 (two points at 1/2 each are never separated). Updates follow eq. 6
// for bits (randomized response, and the binarised oracle with p of
// eq. 24) and eq. 11–12 for noisy-max pairs.
//
// # Multiple anomalies
//
// SearchSplit implements the §7 suggestion: partition [n+1] into disjoint
// random subsets, expected to hold at most one anomaly each, and search each
// with its own oracle. Each individual belongs to one subset, so by parallel
// composition (Definition 5) the overall ε is the largest per-subset spend.
package groupsearch
