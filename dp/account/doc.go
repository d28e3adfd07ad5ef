// Package account owns dpal's privacy accounting: pure-ε and (ε, δ)
// composition (sequential, parallel, Poisson amplification, the optimal
// composition of Kairouz, Oh & Viswanath and the Dwork–Rothblum–Vadhan
// bound), the Rényi-DP accountant for the Poisson-subsampled Gaussian, the
// Gaussian and the Laplace mechanisms with its conversion to (ε, δ), noise
// and sampling-rate calibration, and the per-group Ledger that reports every
// record's spend and refuses releases past the budget.
//
// The RDP accountant reproduces Opacus 1.5.4 and dp_accounting (the same
// formulas, default orders and conversion) and is checked in its tests
// against their published reference values and against direct numerical
// integration of the Rényi divergence.
//
// It imports nothing else of dpal's: it is the bottom of the privacy core.
package account
