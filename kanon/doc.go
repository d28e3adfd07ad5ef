// Package kanon owns the private active-learning system of Feyisetan,
// Drake, Balle & Diethe (PAL 2019): sample a query log at rate β, keep the
// queries whose frequency in the sample is at least k (frequencies from a
// Count-Mean-Min sketch, distinct counts from HyperLogLog, package sketch),
// rank the survivors by model uncertainty and send one copy of each chosen
// query to annotators. Li, Qardaji & Su (2012, Thm 5) turn (β, k) into an
// (ε, δ) guarantee, computed in account.go (Delta and its inverses
// Epsilon, SmallestK and LargestBeta, each returning a Bound).
//
// The release stage (holdout, sample, exact mode's sketch pre-filter,
// threshold) is one definition, Stage (stage.go): Run calls
// Stage.Release, and the Beam pipeline (module beam/, package kanonbeam)
// calls its per-record parts.
// Its coins are per record, keyed by the run's secret key and the query
// (Coins), so the released set depends on neither sharding nor order.
//
// Two thresholds. Exact (ThresholdExact, the paper's): keep q when its
// sampled count c is ≥ k; a sketch may pre-filter, since a query seen
// fewer than k times cannot reach k. DP (ThresholdDP, `--threshold dp`):
// keep q when c ≥ 1 and c + Z ≥ k, Z discrete Laplace of scale 1/ε'
// (NoisyThreshold, exact sampler mech.DiscreteLaplace) drawn from q's own
// stream keyed by the run's key and q; nothing is pre-filtered, because a
// query seen once can pass. Stage.Keep is the one per-query decision in
// both modes, so the released set cannot depend on order or sharding.
//
// Neighbouring relation: one query occurrence added to or removed from
// the log. Guarantees. Exact: (ε, δ)-DP by Li, Qardaji & Su (2012, Thm 5),
// ε the smallest the calculator finds for (β, k) at Config.Delta. DP: on
// the sample, a query in both neighbours is released with probabilities
// within e^{ε'} and one in a single neighbour (c = 1 against absent) with
// probability P(Z ≥ k − 1) = p^{k−1}/(1 + p), p = e^{−ε'}, so
// (ε', p^{k−1}/(1 + p))-DP; the Bernoulli(β) sample amplifies it by
// Feyisetan et al. (2019, Eq. 3, their statement of Li, Qardaji & Su 2012,
// Thm 1) with β₁ = 1, β₂ = β: ε = ln(1 + β(e^{ε'} − 1)),
// δ = β·p^{k−1}/(1 + p). Both are charged by one function, Config.Loss
// (account.go), as one ledger entry, Config.Charge, on group Group before
// the set leaves: by Run for `dpal kanon run`, by dpal-beam's driver
// before it publishes.
//
// What leaves the trusted side is the set of released queries
// (and their annotations); the sample, the sketches and every count stay
// inside (raw HyperLogLog registers and sketch counters leak, Desfontaines,
// Lochbihler & Basin 2019), so only the released set is charged.
package kanon
