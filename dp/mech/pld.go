package mech

import (
	"fmt"
	"math"

	"github.com/dpal-dev/dpal/dp/account"
)

// PLDMechanism is a mechanism that can describe its release by the
// privacy-loss distribution of what it actually samples (account.PLDTerm),
// for the PLD accountant: the loss it returns has only a PLD part, and a
// ledger composes it with other PLD losses exactly (see
// docs/accounting-pld.md). Its certified ε at a given δ exceeds what Loss
// states by at most the PLD grid width, and is usually below it: Loss is
// the guarantee the mechanism was calibrated for, PLDLoss the law it ended
// up sampling (after the grid's rounding of the sensitivity, the dyadic
// truncation of ε and the rounded-up variance). Parameters are passed as
// float64 (σ = √(t·m), scale t/s), within a few units in the last place of
// the sampler's exact integers.
//
// GaussianVector and GammaVector do not implement it: no dominating pair
// of the multivariate discrete Gaussian over all integer shifts of bounded
// ℓ2 norm is proven (its zCDP bound is, CKS 2020, Thm 4), and GammaVector's
// guarantee is the idealised mechanism's. PLDLoss passes their Loss on.
type PLDMechanism interface {
	account.Mechanism
	PLDLoss() (account.Loss, error)
}

// PLDLoss returns m's loss for the PLD accountant: m.PLDLoss() when m
// describes its privacy-loss distribution, else m.Loss() unchanged (the PLD
// accountant takes an (ε, δ) part through its dominating pair and gives a
// Rényi part half of δ; see account.Loss.EpsilonAt).
func PLDLoss(m account.Mechanism) (account.Loss, error) {
	if p, ok := m.(PLDMechanism); ok {
		return p.PLDLoss()
	}
	return m.Loss(), nil
}

// PLDLoss describes one release of the Laplace mechanism as sampled: the
// discrete Laplace P(Y = y) ∝ exp(−|y|·s/t) on the grid, for an integer
// query of sensitivity K = ⌊Δ/g⌋+1 grid steps (rounding moves each input
// by at most g/2). Its pure ε is K·s/t = ε' ≤ ε.
func (m *Laplace) PLDLoss() (account.Loss, error) {
	k, err := gridSensitivity(m.sens, m.g)
	if err != nil {
		return account.Loss{}, fmt.Errorf("laplace: %w", err)
	}
	l, err := account.PLDLoss("laplace", account.PLDTerm{Kind: account.PLDDiscreteLaplace,
		Scale: float64(m.t) / float64(m.s), Sensitivity: int(k), Count: 1})
	if err != nil {
		return account.Loss{}, err
	}
	l.Params = m.Loss().Params
	return l, nil
}

// PLDLoss describes one release of the Gaussian mechanism as sampled: the
// discrete Gaussian with σ² = t·m grid steps² (CKS 2020) for an integer
// query of sensitivity K = ⌊Δ/g⌋+1 grid steps. It errors when σ exceeds
// the PLD accountant's discrete range (10⁵ grid steps: a very small ε for
// the sensitivity); Loss then still holds.
func (m *Gaussian) PLDLoss() (account.Loss, error) {
	k, err := gridSensitivity(m.sens, m.g)
	if err != nil {
		return account.Loss{}, fmt.Errorf("%s: %w", m.name, err)
	}
	l, err := account.PLDLoss(m.name, account.PLDTerm{Kind: account.PLDDiscreteGaussian,
		Scale: math.Sqrt(float64(m.dg.t) * float64(m.dg.m)), Sensitivity: int(k), Count: 1})
	if err != nil {
		return account.Loss{}, err
	}
	l.Params = m.Loss().Params
	return l, nil
}

// PLDLoss describes one release of randomized response: the flip is
// sampled with P(flip)/P(keep) = e^{−ε} exactly, so its privacy-loss
// distribution is two atoms at ±ε.
func (m *RandomizedResponse) PLDLoss() (account.Loss, error) {
	l, err := account.PLDLoss("randomized-response", account.PLDTerm{Kind: account.PLDRandomizedResponse, Epsilon: m.eps, Count: 1})
	if err != nil {
		return account.Loss{}, err
	}
	l.Params = m.Loss().Params
	return l, nil
}
