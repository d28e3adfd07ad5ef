package mech

import (
	"fmt"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/rng"
)

// Laplace is the Laplace mechanism on a grid (the "discrete Laplace"
// construction of Canonne, Kamath and Steinke 2020, §1 and Algorithm 2).
//
// Neighbouring relation: any two datasets whose query values x, x' satisfy
// |x − x'| ≤ Δ (L1 sensitivity Δ).
//
// Release: with g the power of two below min(Δ, Δ/ε)/4096, the input is
// rounded to k = round(x/g) and the mechanism releases g·(k + Y), where Y is
// exact discrete Laplace noise with P(Y = y) ∝ exp(−|y|·ε'/K),
// K = ⌊Δ/g⌋+1 the sensitivity in grid steps after rounding (rounding moves
// each input by at most g/2), and ε' ≤ ε the 30-bit dyadic truncation of ε.
//
// Guarantee: ε-DP exactly (the discrete Laplace with scale K/ε' is ε'-DP for
// integer queries of sensitivity K). The output lies on the grid gℤ, so no
// low-order bits of a floating-point sample leak (Mironov 2012).
type Laplace struct {
	eps, sens, g float64
	t, s         uint64 // noise scale t/s in grid steps
}

// NewLaplace returns an ε-DP Laplace mechanism for L1 sensitivity sens.
func NewLaplace(eps, sensitivity float64) (*Laplace, error) {
	if err := account.ValidateEpsilon(eps); err != nil {
		return nil, fmt.Errorf("laplace: %w", err)
	}
	if err := validateSensitivity("sensitivity", sensitivity); err != nil {
		return nil, fmt.Errorf("laplace: %w", err)
	}
	g, err := granularity(min(sensitivity, sensitivity/eps))
	if err != nil {
		return nil, fmt.Errorf("laplace: %w", err)
	}
	k, err := gridSensitivity(sensitivity, g)
	if err != nil {
		return nil, fmt.Errorf("laplace: %w", err)
	}
	t, s, err := rationalScale(eps, k)
	if err != nil {
		return nil, fmt.Errorf("laplace: %w", err)
	}
	return &Laplace{eps: eps, sens: sensitivity, g: g, t: t, s: s}, nil
}

// Release returns the noisy value of x; it errors on NaN, ±Inf or |x|
// beyond 2^61 grid steps. It consumes randomness from r only on success.
func (m *Laplace) Release(r *rng.Rand, x float64) (float64, error) {
	k, err := toGrid(x, m.g)
	if err != nil {
		return 0, fmt.Errorf("laplace release: %w", err)
	}
	b := bitbuf{r: r} // as DiscreteLaplace, without re-checking t, s ≥ 1
	return m.g * float64(addSat(k, b.laplace(m.t, m.s))), nil
}

// Scale is the noise scale b in the input's units: the released noise has
// P(noise = g·y) ∝ exp(−|g·y|/b). It is slightly above Δ/ε (by the factor
// K·g/Δ ≤ 1 + 1/4096 and the ε truncation).
func (m *Laplace) Scale() float64 { return m.g * float64(m.t) / float64(m.s) }

// Granularity is the grid step g of the released values.
func (m *Laplace) Granularity() float64 { return m.g }

// Loss is the ledger entry of one release: pure ε-DP.
func (m *Laplace) Loss() account.Loss {
	l := account.Pure("laplace", m.eps)
	l.Params = map[string]float64{"sensitivity": m.sens, "scale": m.Scale(), "granularity": m.g}
	return l
}
