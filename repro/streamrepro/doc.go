// Package streamrepro owns the reproduction of the experiments of
// Ghassemi, Sarwate and Wright (2016), "Differentially private online active
// learning with applications to anomaly detection", §5 and Figs. 2–5: it
// drives the private stream learner (active/stream) over permuted training
// streams, picks η and λ by cross-validation on a held-out part of the
// training split, fits the non-private batch SVM baseline
// (model.TrainLinearSVM), and turns the runs into figures (repro/figure):
//
//   - Fig. 2: test error against the number of updates;
//   - Fig. 3: test error against labels requested, each run interpolated
//     piece-wise linearly onto an even grid of label counts as in the paper;
//   - Fig. 4: test error at a fixed label count against the batch size;
//   - Fig. 5: fixed against shrinking slab, (a) labels against observations
//     and (b) test error against labels.
//
// Every curve is the mean over permutations with a ±1 standard deviation
// band; the per-permutation seeds, the cross-validation grid and choice, and
// each run's per-record ε from the learner's ledger go into the JSON summary.
//
// Seeded randomness is used throughout: this is an experiment, and its
// outputs record the seeds they depend on.
//
// Its name is unique in the module (<system>repro), so no importer needs an alias.
package streamrepro
