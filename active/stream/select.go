package stream

import (
	"fmt"
	"math"

	"github.com/dpal-dev/dpal/dp/mech"
)

// Distance returns d(x, w) = |⟨w, x⟩| / ‖w‖ of eq. 5 given the score
// ⟨w, x⟩ and ‖w‖. For w = 0 there is no hyperplane yet; d is defined as 0,
// so every point is maximally informative (c = 1) and lies in every slab.
func Distance(score, wNorm float64) float64 {
	if wNorm == 0 {
		return 0
	}
	return math.Abs(score) / wNorm
}

// Informativeness returns c = exp(−d) of eq. 5–6 (Tong and Koller's
// closeness to the hyperplane), in [0, 1].
func Informativeness(d float64) float64 { return math.Exp(-d) }

// SelectionEpsilon returns the exact privacy of a selection s ~ Bern(q)
// whose probability q can be anything in [qMin, qMax] as the record
// changes: the larger of the log-ratios for s = 1, ln(qMax/qMin), and for
// s = 0, ln((1−qMin)/(1−qMax)). Both are attained by a pair of neighbouring
// records at the ends of the range, so this is the true ε, not a bound.
// Arguments are log-probabilities so that tiny probabilities stay exact.
func SelectionEpsilon(logQMin, logQMax float64) float64 {
	sel := logQMax - logQMin
	// ln(1 − q) = ln(−expm1(ln q)), accurate for q near 0 and near 1.
	non := math.Log(-math.Expm1(logQMin)) - math.Log(-math.Expm1(logQMax))
	return math.Max(sel, non)
}

// ExpSelectorEpsilon returns the true ε_s of the exponential selector
// q = exp(−κ·max{b, d}) of eq. 7 over d ∈ [0, M]: q ranges over
// [exp(−κM), exp(−κb)]. With κ = ε/(M − b) the s = 1 ratio is exactly ε;
// the s = 0 ratio is at most ε only when exp(−bκ) is small enough, which
// is the condition of Lemma 2 (and its proof's bound ln 2 ≤ ε).
func ExpSelectorEpsilon(kappa, b, m float64) float64 {
	return SelectionEpsilon(-kappa*m, -kappa*b)
}

// paperScale returns eq. 7's scale ε/Δ with Δ = (1 − b/M)M = M − b.
func paperScale(eps, b, m float64) float64 { return eps / (m - b) }

// CalibrateExpScale returns the largest scale κ with
// ExpSelectorEpsilon(κ, b, m) = target, holding b fixed. The true ε is the
// larger of an increasing branch κ(M − b) and a decreasing branch (the
// s = 0 ratio), so it has a minimum; a target below it is unreachable and
// the error names the minimum.
func CalibrateExpScale(target, b, m float64) (float64, error) {
	kappa := paperScale(target, b, m)
	if ExpSelectorEpsilon(kappa, b, m) <= target*(1+1e-12) {
		return kappa, nil
	}
	// The s = 0 branch dominates at every κ ≤ target/(M−b) and the s = 1
	// branch exceeds target beyond it, so no κ reaches target. The minimum
	// is where the branches cross, above target/(M−b); bisect for it.
	lo, hi := kappa, 2*kappa
	for hi*(m-b) < SelectionEpsilon(-hi*m, -hi*b) {
		lo, hi = hi, 2*hi
	}
	for range 200 {
		mid := (lo + hi) / 2
		if mid*(m-b) < SelectionEpsilon(-mid*m, -mid*b) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return 0, fmt.Errorf("stream: exponential selector with b = %v, M = %v cannot reach eps-select %v: "+
		"the smallest true ε_s over all scales is %.6g (Lemma 2's condition exp(−bε/Δ) ≤ 1/2 fails); "+
		"widen the slab (calibration slab) or raise eps-select", b, m, target, ExpSelectorEpsilon(hi, b, m))
}

// CalibrateExpSlab returns the smallest b′ ≥ b for which eq. 7 with scale
// target/(M − b′) has true ε_s equal to target. The s = 1 ratio is target
// for every b′; the s = 0 ratio falls as b′ grows (q's range moves away
// from 1), so bisection on b′ ∈ [b, M) finds the boundary.
func CalibrateExpSlab(target, b, m float64) (float64, error) {
	ok := func(bb float64) bool {
		return ExpSelectorEpsilon(paperScale(target, bb, m), bb, m) <= target*(1+1e-12)
	}
	if ok(b) {
		return b, nil
	}
	lo, hi := b, m
	for range 200 {
		mid := (lo + hi) / 2
		if ok(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	if hi >= m {
		return 0, fmt.Errorf("stream: no slab b < M = %v makes the exponential selector %v-DP", m, target)
	}
	return hi, nil
}

// rrFlipProbUp returns the flip probability p = 1/(1 + e^ε) of randomized
// response rounded up to a multiple of 2^−53. BernoulliFloat samples the
// float64 probabilities exactly, so what matters is the ratio of the two
// floats used, 1 − p (inside the slab) and p (outside). For p < 1/2, 1 − p
// lies in [1/2, 1), where float64 spacing is 2^−53: a multiple of 2^−53
// makes 1 − p exact. mech.RRFlipProb is within a relative 4·2^−53 of the
// true p (math.Exp is within 1 ulp, then one addition and one division),
// an absolute error below 2·2^−53 since p < 1/2; rounding up and adding
// three more steps of 2^−53 gives p ≥ 1/(1 + e^ε), that is
// (1 − p)/p ≤ e^ε, exactly. The shift is a few ulps; unless it crosses a
// power of two (p within 4·2^−53 below one, or p < 2^−53 for ε > 36) the
// sampler reads the same random bits, so a seeded run draws the same
// selections as with the unrounded p, bar a chance below 2^−50 per draw.
func rrFlipProbUp(eps float64) float64 {
	return math.Ldexp(math.Ceil(math.Ldexp(mech.RRFlipProb(eps), 53))+3, -53)
}

// selector is the resolved selection rule: what New computed from Config
// once, so that the per-event path is a comparison and one Bernoulli draw.
type selector struct {
	kind SelectorKind
	// Bernoulli: probability of selecting inside and outside the slab.
	pIn, pOut float64
	// Exponential: q = exp(−kappa·max{b, d}).
	kappa, b float64
	// eps is the true ε_s charged per selection decision.
	eps float64
}

// newSelector resolves cfg's selection rule and its true ε_s.
func newSelector(cfg Config) (selector, error) {
	s := selector{kind: cfg.Selector}
	if cfg.NonPrivate {
		s.eps = math.Inf(1)
		return s, nil
	}
	switch cfg.Selector {
	case Bernoulli:
		// Randomized response (Lemma 1) with p rounded up (rrFlipProbUp), so
		// the sampled probabilities satisfy (1 − p)/p ≤ e^ε exactly and the
		// ε charged is a true upper bound.
		p := rrFlipProbUp(cfg.EpsSelect)
		s.pIn, s.pOut = 1-p, p
		s.eps = cfg.EpsSelect
	case Exponential:
		s.b = cfg.B
		switch cfg.Calibration {
		case PaperScale:
			s.kappa = paperScale(cfg.EpsSelect, cfg.B, cfg.M)
		case CalibrateScale:
			k, err := CalibrateExpScale(cfg.EpsSelect, cfg.B, cfg.M)
			if err != nil {
				return s, err
			}
			s.kappa = k
		case CalibrateSlab:
			b, err := CalibrateExpSlab(cfg.EpsSelect, cfg.B, cfg.M)
			if err != nil {
				return s, err
			}
			s.b, s.kappa = b, paperScale(cfg.EpsSelect, b, cfg.M)
		}
		s.eps = ExpSelectorEpsilon(s.kappa, s.b, cfg.M)
	}
	return s, nil
}

// prob returns the selection probability of a point at distance d from
// the hyperplane, given the current slab half-width slab = ln(1/τ).
// The Bernoulli rule selects inside the slab, c ≥ τ ⟺ d ≤ ln(1/τ).
func (s *selector) prob(d, slab float64) float64 {
	if s.kind == Exponential {
		return math.Exp(-s.kappa * math.Max(s.b, d))
	}
	if d <= slab {
		return s.pIn
	}
	return s.pOut
}
