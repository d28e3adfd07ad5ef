package mech

import (
	"fmt"
	"math"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/rng"
)

// RRFlipProb is the flip probability p = 1/(1+e^ε) of binary randomized
// response with privacy ε (Warner 1965; Dwork & Roth 2014, §3.2).
func RRFlipProb(eps float64) float64 {
	if eps > 0 {
		q := math.Exp(-eps)
		return q / (1 + q)
	}
	return 1 / (1 + math.Exp(eps))
}

// RREpsilon is the privacy ε = ln((1−p)/p) of randomized response that
// flips with probability p ∈ (0, 1); p < 1/2 gives ε > 0. NaN outside (0, 1).
func RREpsilon(p float64) float64 {
	if !(p > 0 && p < 1) {
		return math.NaN()
	}
	return math.Log1p(-p) - math.Log(p)
}

// RandomizedResponse is binary randomized response.
//
// Neighbouring relation: the private bit of one individual changes.
//
// Release: the bit, flipped with probability p = 1/(1+e^ε). The flip is
// sampled exactly: repeat {with probability 1/2 keep; else flip with
// probability e^{−ε} (BernoulliExpFloat)}, which gives
// P(flip)/P(keep) = e^{−ε} for the float64 ε itself, with no rounding of p.
//
// Guarantee: ε-DP exactly (Dwork & Roth 2014, §3.2; Warner 1965).
type RandomizedResponse struct {
	eps float64
}

// NewRandomizedResponse returns ε-DP binary randomized response.
func NewRandomizedResponse(eps float64) (*RandomizedResponse, error) {
	if err := account.ValidateEpsilon(eps); err != nil {
		return nil, fmt.Errorf("randomized response: %w", err)
	}
	return &RandomizedResponse{eps: eps}, nil
}

// Release returns bit, flipped with probability FlipProb().
func (m *RandomizedResponse) Release(r *rng.Rand, bit bool) bool {
	b := bitbuf{r: r}
	for {
		if b.bit() == 0 {
			return bit
		}
		if b.expFloat(m.eps) {
			return !bit
		}
	}
}

// FlipProb is p = 1/(1+e^ε).
func (m *RandomizedResponse) FlipProb() float64 { return RRFlipProb(m.eps) }

// Loss is the ledger entry of one release: pure ε-DP.
func (m *RandomizedResponse) Loss() account.Loss {
	l := account.Pure("randomized-response", m.eps)
	l.Params = map[string]float64{"flip_prob": m.FlipProb()}
	return l
}
