package kanon

import (
	"fmt"
	"maps"
	"math"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/mech"
	"github.com/dpal-dev/dpal/dp/rng"
)

// NoisyThreshold releases the keys whose exact count in the sample plus
// discrete Laplace noise reaches k: the "DP threshold" that replaces the
// exact k-anonymity filter, so that the guarantee rests on noise, not on
// counts being exact (the stability-based release of Korolova et al. 2009
// and Bun, Nissim & Stemmer 2016).
//
// Neighbouring relation: one query occurrence added or removed, which
// changes one key's count by 1. Guarantee on the sample: a key present in
// both logs is released with probabilities within e^{ε'} (discrete Laplace
// with scale 1/ε', sensitivity 1); a key present in one log only (count 1
// vs absent) is released with probability P(1 + Z ≥ k) = p^{k−1}/(1 + p),
// p = e^{−ε'}, which is δ. So (ε', p^{k−1}/(1+p))-DP, and the Bernoulli(β)
// sample before it amplifies that to ε = ln(1 + β(e^{ε'} − 1)), δ = β·δ
// (account.AmplifyPoisson). ε' is ε truncated to 30 binary digits, so the
// noise is drawn exactly (CKS 2020, Algorithm 2; no floating-point sampler).
type NoisyThreshold struct {
	eps  float64 // ε' = s/t exactly
	t, s uint64
	k    int
	loss account.Loss
}

// NewNoisyThreshold returns the mechanism for threshold k ≥ 2 (at k = 1 a
// key seen once would be released with probability ≥ 1/2), noise ε > 0 and
// sampling rate β ∈ (0, 1].
func NewNoisyThreshold(eps float64, k int, beta float64) (*NoisyThreshold, error) {
	if err := account.ValidateEpsilon(eps); err != nil {
		return nil, fmt.Errorf("noisy threshold: %w", err)
	}
	if err := ValidateSampling(beta, k); err != nil {
		return nil, fmt.Errorf("noisy threshold: %w", err)
	}
	if k < 2 {
		return nil, fmt.Errorf("noisy threshold: k must be >= 2 (k = 1 releases a once-seen query with probability >= 1/2), got %d", k)
	}
	const t = 1 << 30
	s := uint64(math.Floor(eps * t))
	if s == 0 {
		return nil, fmt.Errorf("noisy threshold: epsilon %v below 2^-30", eps)
	}
	m := &NoisyThreshold{eps: float64(s) / t, t: t, s: s, k: k}
	p := math.Exp(-m.eps)
	inner := account.Approx("noisy-threshold", m.eps, math.Pow(p, float64(k-1))/(1+p))
	l, err := account.AmplifyPoisson(inner, beta)
	if err != nil {
		return nil, fmt.Errorf("noisy threshold: %w", err)
	}
	l.Mechanism = "sample-then-noisy-threshold"
	l.Params = map[string]float64{"beta": beta, "k": float64(k), "noise_epsilon": m.eps}
	m.loss = l
	return m, nil
}

// Loss is the amplified (ε, δ) of one application to a sample.
func (m *NoisyThreshold) Loss() account.Loss {
	l := m.loss
	l.Params = maps.Clone(l.Params)
	return l
}

// keep draws one key's noise from r and reports whether its count c plus
// the noise reaches k. Stage.Keep is its one caller outside tests, with r
// the key's own noise stream: a shared stream consumed in key order would
// make one key's noise depend on which other keys exist and in what order
// they are decided.
func (m *NoisyThreshold) keep(r *rng.Rand, c uint64) (bool, error) {
	z, err := mech.DiscreteLaplace(r, m.t, m.s)
	if err != nil {
		return false, err
	}
	return float64(c)+float64(z) >= float64(m.k), nil
}

// NoisyThresholdFor returns the noisy threshold at sampling rate β whose
// amplified loss is at most (eps, delta), with the smallest k that allows:
// the noise level ε' solves ln(1 + β(e^{ε'} − 1)) = eps, and k is the
// least integer ≥ 2 with β·p^{k−1}/(1 + p) ≤ delta, p = e^{−ε'}.
func NoisyThresholdFor(eps, delta, beta float64) (*NoisyThreshold, error) {
	if err := account.ValidateEpsilon(eps); err != nil {
		return nil, fmt.Errorf("noisy threshold: %w", err)
	}
	if !(delta > 0 && delta < 1) || !(beta > 0 && beta <= 1) {
		return nil, fmt.Errorf("noisy threshold: need 0 < delta < 1 and 0 < beta <= 1, got %v, %v", delta, beta)
	}
	noise := math.Log1p(math.Expm1(eps) / beta)
	// ε' is truncated to 30 binary digits by the constructor, which only
	// lowers the amplified ε; k is computed from the truncated value.
	noise = math.Floor(noise*(1<<30)) / (1 << 30)
	logP := -noise
	k := 2
	if need := 1 + math.Ceil((math.Log(delta/beta)+math.Log1p(math.Exp(logP)))/logP); need > 2 {
		if need > math.MaxInt32 {
			return nil, fmt.Errorf("noisy threshold: no k up to 2^31 reaches delta %v at epsilon %v", delta, eps)
		}
		k = int(need)
	}
	m, err := NewNoisyThreshold(noise, k, beta)
	if err != nil {
		return nil, err
	}
	for m.loss.Delta > delta { // guard against rounding at the boundary
		if m, err = NewNoisyThreshold(noise, m.k+1, beta); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// K returns the threshold.
func (m *NoisyThreshold) K() int { return m.k }
