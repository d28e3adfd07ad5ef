// Package kanon owns the private active-learning system of Feyisetan,
// Drake, Balle & Diethe (PAL 2019): sample a query log at rate β, keep the
// queries whose frequency in the sample is at least k (frequencies from a
// Count-Mean-Min sketch, distinct counts from HyperLogLog, package sketch),
// rank the survivors by model uncertainty and send one copy of each chosen
// query to annotators. Li, Qardaji & Su (2012, Thm 5) turn (β, k) into an
// (ε, δ) guarantee, computed in account.go (Delta and its inverses
// Epsilon, SmallestK and LargestBeta, each returning a Bound).
//
// The release stage (holdout, sample, sketch pre-filter, threshold) is one
// definition, Stage (stage.go): Run calls Stage.Release, and the Beam
// pipeline (module beam/, package kanonbeam) calls its per-record parts.
// Its coins are per record, keyed by the run's secret key and the query
// (Coins), so the released set depends on neither sharding nor order.
//
// Neighbouring relation: one query occurrence added to or removed from
// the log. What leaves the trusted side is the set of released queries
// (and their annotations); the sample, the sketches and every count stay
// inside (raw HyperLogLog registers and sketch counters leak, Desfontaines,
// Lochbihler & Basin 2019), so only the released set is charged.
package kanon
