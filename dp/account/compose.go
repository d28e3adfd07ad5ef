package account

import (
	"fmt"
	"math"
)

// DRVComposition returns the advanced composition bound of Dwork, Rothblum &
// Vadhan 2010 (Thm III.3; Dwork & Roth 2014, Thm 3.20) for k adaptive
// (ε, δ)-DP steps and slack δ' > 0:
// ε' = √(2k ln(1/δ'))·ε + kε(e^ε − 1), δ_total = kδ + δ'.
func DRVComposition(eps, delta float64, k int, deltaPrime float64) (Loss, error) {
	if err := checkSteps(eps, delta, k); err != nil {
		return Loss{}, err
	}
	if !(deltaPrime > 0 && deltaPrime < 1) {
		return Loss{}, fmt.Errorf("slack delta' must satisfy 0 < delta' < 1, got %v", deltaPrime)
	}
	fk := float64(k)
	out := Loss{
		Mechanism: fmt.Sprintf("advanced composition (DRV) of %d steps", k),
		Epsilon:   math.Sqrt(2*fk*math.Log(1/deltaPrime))*eps + fk*eps*math.Expm1(eps),
		Delta:     fk*delta + deltaPrime,
	}
	if out.Delta >= 1 {
		return Loss{}, fmt.Errorf("advanced composition: total delta %v >= 1", out.Delta)
	}
	return out, nil
}

// KOVDelta returns the smallest δ_total for which k adaptive (ε, δ)-DP
// steps are (epsTotal, δ_total)-DP: the optimal composition theorem of
// Kairouz, Oh & Viswanath 2015 (Thm 3.3), in the form of Murtagh & Vadhan
// 2016 (Thm 1.5):
//
//	δ_total = 1 − (1−δ)^k·(1 − δ_RR),
//	δ_RR = Σ_l C(k,l)·max(0, e^{(k−l)ε} − e^{epsTotal + lε}) / (1 + e^ε)^k,
//
// δ_RR being the hockey-stick divergence of k-fold randomized response. Sums
// run in log space, so large k·ε does not overflow.
func KOVDelta(eps, delta float64, k int, epsTotal float64) (float64, error) {
	if err := checkSteps(eps, delta, k); err != nil {
		return 0, err
	}
	if !(epsTotal >= 0) || math.IsInf(epsTotal, 0) {
		return 0, fmt.Errorf("total epsilon must be finite and >= 0, got %v", epsTotal)
	}
	rr := newKOV(eps, k)
	logD := math.Inf(-1)
	for l := 0; l <= k && float64(k-2*l)*eps > epsTotal; l++ {
		logD = logAdd(logD, logSub(rr.logP(l), epsTotal+rr.logQ(l)))
	}
	// δ_RR ≤ 1, but its log can round above 0 (at ε = 1, k = 500, ε_total =
	// 0 it comes out as +1.9e-12): clamp, or log1p(−e^logD) is NaN.
	if logD >= 0 {
		return 1, nil
	}
	return -math.Expm1(float64(k)*math.Log1p(-delta) + math.Log1p(-math.Exp(logD))), nil
}

// KOVComposition returns the smallest ε_total with which k adaptive
// (ε, δ)-DP steps are (ε_total, deltaTotal)-DP, by the optimal composition
// theorem (see KOVDelta), solved exactly segment by segment: between the
// breakpoints (k−2i)ε, δ_RR is A − e^{ε_total}·B with A, B partial sums, so
// ε_total = log((A − δ_RR)/B) on the segment where it lands.
func KOVComposition(eps, delta float64, k int, deltaTotal float64) (float64, error) {
	if err := checkSteps(eps, delta, k); err != nil {
		return 0, err
	}
	if !(deltaTotal > 0 && deltaTotal < 1) {
		return 0, fmt.Errorf("total delta must satisfy 0 < delta < 1, got %v", deltaTotal)
	}
	// δ_RR target: 1 − (1 − δ_total)/(1 − δ)^k, in log space.
	logTarget := logSub(0, math.Log1p(-deltaTotal)-float64(k)*math.Log1p(-delta))
	if math.IsInf(logTarget, -1) || math.IsNaN(logTarget) {
		return 0, fmt.Errorf("total delta %v does not exceed the %d steps' own 1-(1-delta)^k", deltaTotal, k)
	}
	rr := newKOV(eps, k)
	logA, logB := math.Inf(-1), math.Inf(-1)
	for i := 0; 2*i < k; i++ {
		logA, logB = logAdd(logA, rr.logP(i)), logAdd(logB, rr.logQ(i))
		lo := math.Max(float64(k-2*i-2)*eps, 0)
		// δ_RR at the segment's lower end; it decreases in ε_total.
		if logSub(logA, lo+logB) >= logTarget {
			e := logSub(logA, logTarget) - logB
			return math.Min(math.Max(e, lo), float64(k-2*i)*eps), nil
		}
		if lo == 0 {
			break
		}
	}
	return 0, nil
}

// kovTerms holds the log-probabilities of k-fold randomized response with
// parameter ε: P_l = C(k,l) e^{(k−l)ε}/(1+e^ε)^k, Q_l = C(k,l) e^{lε}/(1+e^ε)^k.
type kovTerms struct {
	eps  float64
	k    int
	norm float64 // k·log(1 + e^ε)
}

func newKOV(eps float64, k int) kovTerms {
	return kovTerms{eps: eps, k: k, norm: float64(k) * logAdd(0, eps)}
}

func (r kovTerms) logP(l int) float64 {
	return LogBinomial(r.k, l) + float64(r.k-l)*r.eps - r.norm
}

func (r kovTerms) logQ(l int) float64 {
	return LogBinomial(r.k, l) + float64(l)*r.eps - r.norm
}

func checkSteps(eps, delta float64, k int) error {
	if err := ValidateEpsilon(eps); err != nil {
		return err
	}
	if err := ValidateDelta(delta); err != nil {
		return err
	}
	if k < 1 {
		return fmt.Errorf("number of steps must be >= 1, got %d", k)
	}
	return nil
}
