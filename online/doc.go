// Package online owns dpal's differentially private online convex
// programming (OCP): Jain, Kothari and Thakurta, "Differentially Private
// Online Learning", COLT 2012 (PMLR numbering; the spec restating the paper
// is shared/papers/jain-kothari-thakurta-2012-spec.md, "the spec" below).
//
// One file per algorithm:
//
//   - pocp.go: the POCP wrapper (Algorithm 1) over any algorithm with
//     stability bound λ_A/t, with the paper's β and an exactly calibrated
//     one (whose ledger charge is the target ε), and the exact ε of the
//     whole release sequence (μ-GDP, spec N7);
//   - igd.go: implicit gradient descent (eq. 20) and private IGD
//     (Algorithm 2), its proximal step solved to a stated tolerance whose
//     error is charged to the sensitivity (spec N10);
//   - giga.go: projected gradient descent (GIGA) and private GIGA
//     (Algorithm 3) with the corrected sensitivity 4G/α (spec N9);
//   - ftl.go: quadratic follow-the-leader (eq. 4) and private FTL
//     (Algorithm 4) on the tree mechanism of dp/mech (Algorithm 5), solved
//     by quadsolve.go (warm conjugate gradients under a certified
//     eigenvalue floor, spec N11(f));
//   - batch.go: private offline learning by online-to-batch conversion
//     (Algorithm 6) with the corrected noise (spec N12).
//
// Neighbouring relation, everywhere: two cost sequences that differ in one
// cost f_t, replaced (Definition 2): event-level privacy of one record.
// Every release leaves through the ledger: a private learner charges the
// loss of its whole declared run (T is declared up front; β depends on it)
// before its first release, so a run that would exceed the budget releases
// nothing.
//
// Costs are f_t(x) = ℓ(x; v_t, y_t) + (α/2)‖x‖² over the ball C of radius
// r, with ℓ the logistic, hinge or squared loss (cost.go). The bounds
// (‖v‖ ≤ R, |y| ≤ B, r, α) are declared, never measured from the data
// (spec N14): a record outside them is rejected with an error naming it.
package online
