package account

import (
	"fmt"
	"maps"
	"math"
)

// AmplifyPoissonRDP returns the RDP curve of running a mechanism M whose
// loss l is an RDP curve ε(·) on a Poisson sample that includes each
// record independently with probability gamma, under add/remove
// adjacency: the general upper bound of Zhu & Wang 2019 ("Poisson
// Subsampled Rényi Differential Privacy", ICML, Theorem 6), for integer
// α ≥ 2,
//
//	ε'(α) ≤ 1/(α−1)·log{ (1−γ)^{α−1}(αγ−γ+1) + C(α,2)γ²(1−γ)^{α−2}e^{ε(2)}
//	                     + 3·Σ_{ℓ=3..α} C(α,ℓ)(1−γ)^{α−ℓ}γ^ℓ e^{(ℓ−1)ε(ℓ)} },
//
// evaluated in log space (log-sum-exp), and capped at ε(α): subsampling
// never raises a Rényi divergence (joint quasi-convexity), so gamma = 1
// returns the input at those orders.
//
// Condition: ε(ℓ) must bound the base mechanism's divergence in both
// directions, D_ℓ(M(D)‖M(D')) and D_ℓ(M(D')‖M(D)) for D' = D plus one
// record, as an RDP curve under the symmetric add/remove relation does.
// The remove direction of the subsampled mechanism,
// D_α((1−γ)M(D) + γM(D') ‖ M(D)), is exactly the sum above without the
// factor 3 with ε(ℓ) = D_ℓ(M(D')‖M(D)) (binomial expansion of the mixture
// ratio); the factor 3 pays for the add direction, which needs the other
// one: with a one-sided ε the bound fails (binary mechanisms with γ near 1
// are counterexamples). For the Gaussian, whose ε(ℓ) = ℓ/(2σ²) is exact,
// the bound lies between the exact subsampled curve (Mironov, Talwar &
// Zhang 2019) and that plus log(3)/(α−1). (autodp's
// compose_poisson_subsampled_mechanisms1 sums e^{ℓ·ε(ℓ+1)} terms without
// the 3 instead; this follows the theorem as published.)
//
// The output lives on l's integer orders from 2 to 4096; fractional
// orders are dropped. The bound at α needs ε(ℓ) for every integer 2 ≤ ℓ ≤ α: where l
// lacks an integer order (DefaultOrders has no 11), the smallest value l
// has at any order ≥ ℓ stands in, as D_ℓ is non-decreasing in ℓ (van
// Erven & Harremoës 2014, Thm 3). A zCDP part ρ joins the curve as ℓ·ρ.
// Losses without a curve, or with an approximate-DP or PLD part, are
// refused.
func AmplifyPoissonRDP(l Loss, gamma float64) (Loss, error) {
	if err := l.Validate(); err != nil {
		return Loss{}, err
	}
	if !(gamma > 0 && gamma <= 1) {
		return Loss{}, fmt.Errorf("sampling rate must satisfy 0 < gamma <= 1, got %v", gamma)
	}
	switch {
	case len(l.Orders) == 0:
		return Loss{}, fmt.Errorf("%s: no RDP curve to amplify", l.Mechanism)
	case l.Epsilon > 0 || l.Delta > 0:
		return Loss{}, fmt.Errorf("%s: an approximate-DP part (ε=%v, δ=%v) has no RDP curve; use AmplifyPoisson", l.Mechanism, l.Epsilon, l.Delta)
	case l.HasPLD():
		return Loss{}, fmt.Errorf("%s: a PLD part has no RDP curve; amplify its terms instead (subsampled PLD kinds)", l.Mechanism)
	}
	largest := l.Orders[len(l.Orders)-1]
	if largest < 2 {
		return Loss{}, fmt.Errorf("%s: the RDP curve has no order >= 2 (largest %v)", l.Mechanism, largest)
	}
	top := int(math.Min(math.Floor(largest), amplifyMaxOrder))
	// eps[ℓ] = min over l's orders α ≥ ℓ of RDP(α) + ℓρ, ℓ = 2…top.
	eps := make([]float64, top+1)
	j, best := len(l.Orders)-1, math.Inf(1)
	for n := top; n >= 2; n-- {
		for ; j >= 0 && l.Orders[j] >= float64(n); j-- {
			best = math.Min(best, l.RDP[j])
		}
		eps[n] = best + float64(n)*l.Rho
	}
	var orders, rdp []float64
	for _, a := range l.Orders {
		if n := int(a); a <= amplifyMaxOrder && a == float64(n) && n >= 2 {
			orders = append(orders, a)
			rdp = append(rdp, math.Min(poissonRDPBound(n, gamma, eps), eps[n]))
		}
	}
	if len(orders) == 0 {
		return Loss{}, fmt.Errorf("%s: the RDP curve has no integer order >= 2", l.Mechanism)
	}
	out, err := RDPCurve(fmt.Sprintf("%s on a Poisson sample (q=%v)", l.Mechanism, gamma), orders, rdp)
	if err != nil {
		return Loss{}, err
	}
	out.Params = maps.Clone(l.Params)
	return out, nil
}

// amplifyMaxOrder is the largest order AmplifyPoissonRDP evaluates (the
// bound at α sums α terms); larger orders of the input only bound ε(ℓ).
const amplifyMaxOrder = 4096

// poissonRDPBound is Zhu & Wang's Theorem 6 at integer order n ≥ 2 (see
// AmplifyPoissonRDP), eps[ℓ] being the base curve at ℓ = 2…n. With the
// binomial weights w_ℓ = C(n,ℓ)γ^ℓ(1−γ)^{n−ℓ}, which sum to 1, the sum B
// in the logarithm is 1 + w₂(e^{ε(2)} − 1) + Σ_{ℓ≥3} w_ℓ(3e^{(ℓ−1)ε(ℓ)} − 1):
// every term of B − 1 is non-negative and summed in log space, so B − 1
// keeps its relative precision when it is tiny (small γ), where log B
// summed from the terms of B would lose it to the 1.
func poissonRDPBound(n int, gamma float64, eps []float64) float64 {
	logG, log1mG := math.Log(gamma), math.Log1p(-gamma)
	logW := func(k int) float64 {
		v := LogBinomial(n, k) + float64(k)*logG
		if k < n { // (1−γ)^0 = 1 also at γ = 1
			v += float64(n-k) * log1mG
		}
		return v
	}
	bm1 := newLogSum()
	bm1.add(logW(2) + logExpm1(eps[2]))
	for k := 3; k <= n; k++ {
		y := float64(k-1) * eps[k] // log(3e^y − 1) = y + log(3 − e^{−y})
		bm1.add(logW(k) + y + math.Log(3-math.Exp(-y)))
	}
	return math.Max(logAdd(0, bm1.log()), 0) / float64(n-1)
}

// AmplifyRate returns the loss at sampling rate to of a mechanism whose
// loss at rate from ≥ to is l: Li, Qardaji & Su 2012, Thm 1 (Feyisetan et
// al. eq. 3), ε₂ = ln(1 + (β₂/β₁)(e^{ε₁} − 1)), δ₂ = (β₂/β₁)δ₁ — Poisson
// amplification by the ratio of the rates (AmplifyPoisson).
func AmplifyRate(l Loss, from, to float64) (Loss, error) {
	if !(from > 0 && from <= 1) || !(to > 0 && to <= from) {
		return Loss{}, fmt.Errorf("rates must satisfy 0 < to <= from <= 1, got from = %v, to = %v", from, to)
	}
	return AmplifyPoisson(l, to/from)
}
