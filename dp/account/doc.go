// Package account owns dpal's privacy accounting: pure-ε and (ε, δ)
// composition, amplification by sampling, the Rényi-DP accountant with its
// conversion to (ε, δ), noise and sampling-rate calibration, and the
// per-group ledger that reports every record's spend.
//
// It imports nothing else of dpal's: it is the bottom of the privacy core.
package account
