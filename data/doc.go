// Package data owns dpal's datasets: loaders for the public benchmark files
// (KDD Cup 99, MNIST and Fashion-MNIST IDX, the NAB time series), generic CSV
// and LibSVM readers, the small KDD sample bundled in the binary (Demo),
// deterministic splits and stream permutations, and LoadLabelled, which
// loads the classification datasets of dpal's DP-SGD commands by name.
//
// Loaders validate every field and report problems with the file, line and
// field that caused them; nothing is coerced silently. Rows come back already
// preprocessed, and where a loader says so, projected onto the unit ℓ2 ball
// (the bound ‖x‖ ≤ M = 1 that the private learners assume).
//
// Binary labels are ±1. For KDD Cup 99, normal = −1 and attack = +1; for an
// image pair (a, b), digit a = −1 and digit b = +1.
package data

// DefaultDir is the data root the CLI uses unless told otherwise: the shared
// data folder beside the repository.
const DefaultDir = "../shared/data"
