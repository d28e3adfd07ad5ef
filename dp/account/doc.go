// Package account owns dpal's privacy-loss arithmetic: the one Loss type
// (pure ε, approximate (ε, δ), zCDP ρ and Rényi-DP curves, alone or mixed)
// with sequential composition, parallel composition over disjoint groups,
// Poisson amplification (of (ε, δ) losses and, by Zhu & Wang's general
// bound, of RDP curves) and conversion to (ε, δ) defined once; the
// Mechanism interface through which every mechanism reports its Loss; the
// optimal composition of Kairouz, Oh & Viswanath and the
// Dwork–Rothblum–Vadhan bound; the Rényi-DP accountant for the
// Poisson-subsampled Gaussian (under add/remove, and under replace-one by
// quadrature: replace.go), the Gaussian and the Laplace mechanisms;
// the privacy-loss-distribution (PLD) accountant (pld*.go: Gaussian,
// Laplace, their Poisson-subsampled forms (the Gaussian's also under
// replace-one), randomized response, discrete Laplace and Gaussian and any
// (ε, δ) black box, composed by FFT, with a certified ε and a sound lower
// bound on the exact one; see
// docs/accounting-pld.md); and noise and sampling-rate calibration with
// either. The ledger that records losses against budgets is dp/ledger.
//
// The RDP accountant reproduces Opacus 1.5.4 and dp_accounting (the same
// formulas, default orders and conversion) and is checked in its tests
// against their published reference values and against direct numerical
// integration of the Rényi divergence.
//
// It imports nothing else of dpal's: it is the bottom of the privacy core.
package account
