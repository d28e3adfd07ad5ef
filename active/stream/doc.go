// Package stream owns dpal's stream-based differentially private online
// active learner (Ghassemi, Sarwate and Wright, "Differentially Private
// Online Active Learning with Applications to Anomaly Detection", AISec
// 2016): a linear anomaly detector sgn⟨w, x⟩ that screens a private event
// stream, asks an oracle for few labels, and publishes its model over time.
//
// # Algorithm
//
// Events satisfy ‖x‖ ≤ M (eq. 1; Config.NormMode clips or rejects), labels
// are ±1, and the loss is the regularised hinge loss of eq. 2–3 (or the
// logistic loss, whose derivative is bounded by the same 1). For each event
// the learner computes the Tong–Koller distance d(x, w) = |⟨w, x⟩|/‖w‖ and
// informativeness c = exp(−d) (eq. 5–6; d = 0 while w = 0) and selects it
// for labelling privately:
//
//   - Bernoulli (SlabRR, randomized response, Lemma 1): with probability 1 − p
//     inside the slab c ≥ τ and p outside, p = 1/(1 + e^ε_s) rounded up
//     to a multiple of 2^−53, so that the float64 probabilities sampled
//     satisfy (1 − p)/p ≤ e^ε_s exactly and ε_s is a true upper bound.
//   - Exponential (ExpSelector, eq. 7, Lemma 2): with probability exp(−κ·max{b, d}),
//     κ = ε/(M − b) in the paper. Lemma 2 needs exp(−bε/Δ) ≤ 1/2, which the
//     paper's own b = 0.2, ε = 1, M = 1 violate; the learner computes the
//     selector's true ε_s (SelectionEpsilon) and charges it, or calibrates
//     the scale or the slab so that it equals the target (Calibration).
//
// The slab is fixed (τ = e^−0.2) or shrinking (τ = e^(−1/t), t the update
// counter, §5). Labelled points are buffered (private state, never logged)
// and the model is updated by the mini-batch rule of eq. 9–10, by one of
// two update mechanisms (Config.Update):
//
//   - Gamma, the paper's: noise of density ∝ exp(−(ε_g/2M)‖z‖) (eq. 8,
//     Lemma 3), step η_t = η/t and projection onto a ball of radius
//     Config.Radius. DefaultConfig gives it with §5's settings. Its noise
//     has mean norm 2Md/ε_g, which drowns gradients of norm ≤ M at any
//     useful ε_g; and on the unit ball every hinge margin is below 1, so
//     even without noise the loop is a centroid classifier.
//   - Gaussian, dpal's detector (DetectorConfig): per-example gradients
//     clipped to Config.Clip, exact discrete-Gaussian noise on their sum
//     (mech.GaussianVector) calibrated so that one update is (ε_g, δ)-DP
//     at the ledger's conversion, step η·R/(G√t) (Zinkevich 2003) on the
//     ball of radius R = 1/√λ, and a batch size from public parameters
//     only (Config.NoiseWindow).
//   - Tree, DP-FTRL (Kairouz et al. 2021, Algorithm 1): the same clipped
//     gradients enter the leaves of a mech.Tree over Config.TreeSteps
//     batches, and the model is the FTRL iterate on the noisy prefix sum
//     (Learner.updateTree); the tree's loss is charged once, at (ε_g, δ).
//     It needs a label budget and cannot be saved.
//
// With Config.FinalShare > 0 the Gaussian learner keeps part of its zCDP
// budget for one final model, released by output perturbation of the
// regularised SVM on every labelled record (Learner.Final).
//
// The FLSW policy updates every N observations (Algorithm 3; an empty
// window publishes the same w and spends nothing, eq. 14–15); FLMB
// updates when L labels are buffered
// (Algorithm 4). With Config.NonPrivate the learner is the deterministic
// Tong–Koller baseline instead (selection iff c ≥ τ, no noise).
//
// # Privacy
//
// Neighbouring streams differ in one event (x, y) at one position (§2);
// events do not repeat. Released are the label requests (Decision) and the
// model log (T_i, w_{T_i}) (Release); the buffer of labelled points is not
// released (the guarantee is not pan-private). Every record's spend is ε_s
// for its selection decision, plus ε_g if its label entered an update
// (Theorems 1–3), so the whole output is (ε_s + ε_g)-DP per record; for
// the Gaussian update (ε_s + ε_g, δ)-DP, the ledger composing ε_s with the
// update's ρ-zCDP and reporting ε at its budget's δ. The Gaussian update's
// sensitivity is 2·Clip: neighbours replace a record, and given the public
// label requests a record is in the same batch on both sides. The
// ledger holds two groups, GroupObserved (ε_s) and GroupBatched (ε_s + ε_g),
// charged before the first decision and the first update respectively:
// because records are disjoint, one charge per group covers all records.
// The true ε_s of the exponential selector is charged, not the target.
//
// Sampling is exact: selections use dp/mech's Bernoulli samplers
// (BernoulliFloat, BernoulliExpFloat; Canonne–Kamath–Steinke 2020) and the
// update noise dp/mech's gamma mechanism or its discrete-Gaussian vector
// sampler. Production runs take rng.Secure();
// a seeded source is for tests and experiments and is recorded by callers.
//
// A rejected event (Observe's error wraps ErrInvalidEvent) is input
// validation outside the guarantee: callers publish at most that it was
// rejected, never why (its values are private).
//
// SaveState writes a resumable state; Restore validates all of it and
// continues a seeded random stream only under the saved seed
// (ErrSeedMismatch), so a seed reported with the output is the seed that
// drove it. Callers that feed the stream from a source they can replay
// record its identity with SetStreamInfo and check it on resume: the
// ledger charges each record once, so a replayed record would make the
// reported ε too small.
//
// The analysis assumes labels arrive before the next observation (or with
// delays that do not depend on the data); a label that arrives later simply
// joins the batch being collected.
package stream
