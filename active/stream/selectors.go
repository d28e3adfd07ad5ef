package stream

import (
	"errors"
	"fmt"
	"math"
	"math/big"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/mech"
	"github.com/dpal-dev/dpal/dp/rng"
)

// This file holds the private selection rules of stream-based active
// learning (Ghassemi, Sarwate and Wright, "Differentially Private Online
// Active Learning with Applications to Anomaly Detection", AISec 2016, §3.1
// and §4.1). A learner with a public hyperplane w sees a point x and decides
// whether to ask for its label, s ∈ {0, 1}. The decision depends on the
// point only through its distance to the hyperplane,
//
//	d(x, w) = |⟨w, x⟩| / ‖w‖                     (eq. 5)
//
// with informativeness c = exp(−d) (eq. 6), and for ‖x‖ ≤ M the distance
// lies in [0, M]. Both rules below release the single bit s.

// SelectionEpsilon returns the exact privacy of a selection s ~ Bern(q)
// whose probability q can be anything in [qMin, qMax] as the record
// changes: the larger of the log-ratios for s = 1, ln(qMax/qMin), and for
// s = 0, ln((1−qMin)/(1−qMax)). Both are attained by a pair of neighbouring
// records at the ends of the range, so this is the true ε, not a bound
// (up to the rounding of this float64 evaluation; ExpSelector.Epsilon
// rounds it up). Arguments are log-probabilities so that tiny
// probabilities stay exact.
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
// is the condition of Lemma 2 (and its proof's bound ln 2 ≤ ε). It is a
// float64 evaluation, within a few ulps of the exact value and possibly
// below it; ExpSelector.Epsilon is the certified upper bound.
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
	return 0, fmt.Errorf("exponential selector with b = %v, M = %v cannot reach eps-select %v: "+
		"the smallest true ε_s over all scales is %.6g (Lemma 2's condition exp(−bε/Δ) ≤ 1/2 fails); "+
		"widen the slab (CalibrateSlab) or raise the target", b, m, target, ExpSelectorEpsilon(hi, b, m))
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
		return 0, fmt.Errorf("exponential selector: no slab b < M = %v makes it %v-DP", m, target)
	}
	return hi, nil
}

// rrFlipProbUp returns the flip probability p = 1/(1 + e^ε) of randomized
// response rounded up to a multiple of 2^−53. mech.BernoulliFloat samples the
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

// SlabRR is the Bernoulli selection rule of stream active learning:
// randomized response on the slab test (Ghassemi, Sarwate & Wright 2016,
// §3.1 "Bernoulli selection" and Lemma 1).
//
// Neighbouring relation: the point seen at one time step changes (any two
// points, so the slab test "inside" may take either value); the hyperplane
// w, hence the slab, is public.
//
// Release: the selection bit s ~ Bern(1 − p) if the point lies inside the
// slab (c(t) ≥ τ of eq. 6, i.e. d ≤ ln(1/τ) with d of eq. 5) and
// s ~ Bern(p) outside, with p the flip probability 1/(1 + e^ε) rounded up
// to a multiple of 2^−53 (a few ulps), so that the two float64
// probabilities sum to exactly 1 and (1 − p)/p ≤ e^ε holds exactly. Each
// is sampled exactly by mech.BernoulliFloat.
//
// Guarantee: ε-DP exactly: both outcomes' probability ratios are at most
// (1 − p)/p ≤ e^ε (Lemma 1; the paper's statement has p > 1/2 and
// ln(p/(1 − p)), the same rule with p and 1 − p swapped).
type SlabRR struct {
	eps, pIn, pOut float64
}

// NewSlabRR returns the ε-DP Bernoulli slab selector.
func NewSlabRR(eps float64) (*SlabRR, error) {
	if err := account.ValidateEpsilon(eps); err != nil {
		return nil, fmt.Errorf("slab randomized response: %w", err)
	}
	p := rrFlipProbUp(eps)
	return &SlabRR{eps: eps, pIn: 1 - p, pOut: p}, nil
}

// PIn is the probability 1 − p of selecting a point inside the slab.
func (s *SlabRR) PIn() float64 { return s.pIn }

// POut is the probability p of selecting a point outside the slab.
func (s *SlabRR) POut() float64 { return s.pOut }

// Prob returns the selection probability: PIn inside the slab, POut outside.
func (s *SlabRR) Prob(inside bool) float64 {
	if inside {
		return s.pIn
	}
	return s.pOut
}

// Select draws the selection bit with probability Prob(inside), exactly,
// by one mech.BernoulliFloat draw.
func (s *SlabRR) Select(r *rng.Rand, inside bool) bool {
	return mech.BernoulliFloat(r, s.Prob(inside))
}

// Epsilon is the ε of one selection.
func (s *SlabRR) Epsilon() float64 { return s.eps }

// Loss is the ledger entry of one selection: pure ε-DP.
func (s *SlabRR) Loss() account.Loss {
	l := account.Pure("slab-randomized-response", s.eps)
	l.Params = map[string]float64{"p_in": s.pIn, "p_out": s.pOut}
	return l
}

// Calibration says how the exponential selector's scale is set. Lemma 2
// assumes exp(−bε/Δ) ≤ 1/2, which the paper's own §5 settings (b = 0.2,
// ε = 1, M = 1) violate; then the non-selection event leaks more than ε.
type Calibration int

const (
	// PaperScale uses eq. 7 as written (scale ε/Δ, Δ = M − b) and charges
	// the selector's true ε_s, which may exceed the target ε.
	PaperScale Calibration = iota
	// CalibrateScale solves for the scale κ in q = exp(−κ·max{b, d}) so that
	// the true ε_s equals the target with b fixed; NewExpSelector fails,
	// naming the smallest reachable ε_s, when no scale does.
	CalibrateScale
	// CalibrateSlab keeps eq. 7's scale ε/(M − b′) and widens the slab to
	// the smallest b′ ≥ b whose true ε_s equals the target.
	CalibrateSlab
)

var calibrationNames = []string{"paper", "scale", "slab"}

// String returns "paper", "scale" or "slab".
func (c Calibration) String() string {
	if c >= 0 && int(c) < len(calibrationNames) {
		return calibrationNames[c]
	}
	return fmt.Sprintf("unknown(%d)", int(c))
}

// ParseCalibration parses "paper", "scale" or "slab".
func ParseCalibration(s string) (Calibration, error) {
	for i, n := range calibrationNames {
		if n == s {
			return Calibration(i), nil
		}
	}
	return 0, fmt.Errorf("unknown calibration %q (want one of %v)", s, calibrationNames)
}

// MarshalText encodes the calibration by name.
func (c Calibration) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText decodes a calibration name.
func (c *Calibration) UnmarshalText(b []byte) (err error) {
	*c, err = ParseCalibration(string(b))
	return badName("calibration", calibrationNames, err)
}

// ExpSelector is the exponential selection rule of stream active learning
// (Ghassemi, Sarwate & Wright 2016, §3.1 "Exponential selection", eq. 7,
// and Lemma 2).
//
// Neighbouring relation: the point seen at one time step changes, among
// points with ‖x‖ ≤ M, so that its distance d (eq. 5) to the public
// hyperplane may move anywhere in [0, M].
//
// Release: the selection bit s ~ Bern(q) with
//
//	q = exp(−κ·max{b, d})                       (eq. 7)
//
// sampled exactly by mech.BernoulliExpFloat at the float64 γ = κ·max{b, d}. The
// paper's scale is κ = ε/Δ with Δ = (1 − b/M)·M = M − b (PaperScale);
// CalibrateScale and CalibrateSlab choose κ or b so that the true ε_s is
// the target (see Calibration). A distance above M (it can only be float
// rounding: |⟨w, x⟩|/‖w‖ ≤ ‖x‖ ≤ M in exact arithmetic) or NaN is used as
// M, so the sampled γ always lies in [fl(κb), fl(κM)].
//
// Guarantee: ε_s-DP with ε_s = Epsilon(): the larger of the s = 1 log-ratio
// γ_M − γ_b, which is ε for the paper's scale (eq. 12), and the s = 0
// log-ratio ln((1 − e^{−γ_M})/(1 − e^{−γ_b})) (eq. 13), which Lemma 2
// bounds by ε only under its condition exp(−bε/Δ) ≤ 1/2. Epsilon() is
// computed from the two float64 γ's the sampler can actually be given and
// rounded up until it is certified in extended-precision arithmetic, so it
// bounds the released bit's privacy exactly, like SlabRR's rounded p.
type ExpSelector struct {
	target, kappa, b, m, eps float64
	cal                      Calibration
}

// NewExpSelector returns the exponential selector of eq. 7 for distances
// in [0, M], slab half-width b ∈ [0, M) and target ε, with the scale set by
// cal. It fails if the calibration is unreachable or the true ε_s is not
// finite (b = 0 under PaperScale: q = 1 at d = 0, so s = 0 is impossible
// there and possible elsewhere).
func NewExpSelector(eps, b, m float64, cal Calibration) (*ExpSelector, error) {
	if err := account.ValidateEpsilon(eps); err != nil {
		return nil, fmt.Errorf("exponential selector: %w", err)
	}
	if !(m > 0) || math.IsInf(m, 0) {
		return nil, fmt.Errorf("exponential selector: M must be finite and > 0, got %v", m)
	}
	if !(b >= 0 && b < m) {
		return nil, fmt.Errorf("exponential selector: needs 0 <= b < M, got b = %v, M = %v", b, m)
	}
	s := &ExpSelector{target: eps, b: b, m: m, cal: cal}
	switch cal {
	case PaperScale:
		s.kappa = paperScale(eps, b, m)
	case CalibrateScale:
		k, err := CalibrateExpScale(eps, b, m)
		if err != nil {
			return nil, err
		}
		s.kappa = k
	case CalibrateSlab:
		bb, err := CalibrateExpSlab(eps, b, m)
		if err != nil {
			return nil, err
		}
		s.b, s.kappa = bb, paperScale(eps, bb, m)
	default:
		return nil, fmt.Errorf("exponential selector: unknown calibration %d", int(cal))
	}
	e, err := expSelectorEpsilonUp(s.kappa, s.b, m)
	if err != nil {
		return nil, fmt.Errorf("exponential selector with b = %v, M = %v, κ = %v: %w", s.b, m, s.kappa, err)
	}
	s.eps = e
	return s, nil
}

// gamma is the exponent γ = κ·max{b, d} passed to the sampler, with d
// above M (or NaN) used as M.
func (s *ExpSelector) gamma(d float64) float64 {
	if !(d <= s.m) {
		d = s.m
	}
	return s.kappa * math.Max(s.b, d)
}

// Prob returns the selection probability q of eq. 7 for a point at
// distance d (math.Exp of the sampled exponent, so within an ulp of it).
func (s *ExpSelector) Prob(d float64) float64 { return math.Exp(-s.gamma(d)) }

// Select draws the selection bit for a point at distance d: true with
// probability exactly exp(−γ), γ = κ·max{b, d}, by one mech.BernoulliExpFloat
// draw.
func (s *ExpSelector) Select(r *rng.Rand, d float64) bool {
	return mech.BernoulliExpFloat(r, s.gamma(d))
}

// Epsilon is the true ε_s of one selection, rounded up (see ExpSelector):
// under PaperScale it may exceed the target ε; calibrated, it equals the
// target up to the calibration's relative tolerance 1e-12 and rounding.
func (s *ExpSelector) Epsilon() float64 { return s.eps }

// Kappa is the scale κ of q = exp(−κ·max{b, d}).
func (s *ExpSelector) Kappa() float64 { return s.kappa }

// B is the slab half-width b in use (widened under CalibrateSlab).
func (s *ExpSelector) B() float64 { return s.b }

// M is the bound on the distance (and on ‖x‖).
func (s *ExpSelector) M() float64 { return s.m }

// Loss is the ledger entry of one selection: pure ε_s-DP with the true ε_s.
func (s *ExpSelector) Loss() account.Loss {
	l := account.Pure("exponential-selector", s.eps)
	l.Params = map[string]float64{"kappa": s.kappa, "b": s.b, "m": s.m,
		"target_epsilon": s.target, "calibration": float64(s.cal)}
	return l
}

// expSelectorEpsilonUp returns an ε that bounds, in exact arithmetic, both
// log-ratios of the probabilities exp(−γ) the sampler is given for
// γ ∈ [γ_b, γ_M] = [fl(κb), fl(κM)]: ExpSelectorEpsilon(κ, b, M) itself
// when that already does (so the value is unchanged wherever it was
// right), else the next float64 above it that does. The float64 estimate
// is within a few ulps, so a few steps suffice; more than 64 is an error.
func expSelectorEpsilonUp(kappa, b, m float64) (float64, error) {
	gb, gm := kappa*b, kappa*m
	eps := ExpSelectorEpsilon(kappa, b, m)
	if math.IsNaN(eps) || math.IsInf(eps, 0) || math.IsInf(gm, 0) {
		return 0, fmt.Errorf("true ε_s is not finite (%v)", eps)
	}
	for range 64 {
		if selectionCovered(gb, gm, eps) {
			return eps, nil
		}
		eps = math.Nextafter(eps, math.Inf(1))
	}
	return 0, errors.New("cannot certify the true ε_s")
}

// bigPrec is the working precision of selectionCovered: its results are
// within a relative 2^−280 or so, far inside the 2^−200 margin it keeps.
const bigPrec = 320

// selectionCovered reports whether a selection with probability in
// [exp(−gm), exp(−gb)], 0 ≤ gb ≤ gm finite, is eps-DP: gm − gb ≤ eps
// (s = 1; exact) and 1 − e^{−gm} ≤ (1 − e^{−gb})·e^{eps} (s = 0; in
// bigPrec-bit arithmetic with a relative margin of 2^−200, so a true answer
// is certain and a false one costs at most an ulp of eps).
func selectionCovered(gb, gm, eps float64) bool {
	diff := new(big.Float).SetPrec(53).SetMode(big.ToPositiveInf)
	diff.Sub(big.NewFloat(gm), big.NewFloat(gb)) // ⌈gm − gb⌉ in float64
	if d, _ := diff.Float64(); d > eps {
		return false
	}
	// e^{−x} < 2^−1400 for x > 1000: 1 − e^{−gm} ≤ 1, and capping gb and eps
	// at 1000 only lowers the right-hand side.
	lhs := new(big.Float).SetPrec(bigPrec).SetInt64(1)
	if gm <= 1000 {
		lhs = oneMinusExpNeg(gm)
	}
	rhs := oneMinusExpNeg(min(gb, 1000))
	rhs.Mul(rhs, bigExp(min(eps, 1000)))
	margin := new(big.Float).SetPrec(bigPrec).SetMantExp(lhs, -200)
	return lhs.Add(lhs, margin).Cmp(rhs) <= 0
}

// oneMinusExpNeg returns 1 − e^{−x} for 0 ≤ x ≤ 1000 to bigPrec bits: by
// its alternating series below 1 (relative accuracy for tiny x), else as
// 1 − 1/e^x.
func oneMinusExpNeg(x float64) *big.Float {
	if x >= 1 {
		inv := new(big.Float).SetPrec(bigPrec).Quo(new(big.Float).SetPrec(bigPrec).SetInt64(1), bigExp(x))
		return inv.Sub(new(big.Float).SetPrec(bigPrec).SetInt64(1), inv)
	}
	xb := new(big.Float).SetPrec(bigPrec).SetFloat64(x)
	sum := new(big.Float).SetPrec(bigPrec).Set(xb)
	term := new(big.Float).SetPrec(bigPrec).Set(xb) // x^n/n!
	for n := int64(2); x > 0; n++ {
		term.Mul(term, xb)
		term.Quo(term, new(big.Float).SetPrec(bigPrec).SetInt64(n))
		if term.MantExp(nil) < sum.MantExp(nil)-bigPrec-8 {
			break
		}
		if n%2 == 0 {
			sum.Sub(sum, term)
		} else {
			sum.Add(sum, term)
		}
	}
	return sum
}

// bigExp returns e^x for 0 ≤ x ≤ 1000 to about bigPrec − 20 bits: the
// Taylor series of e^(x/2^k) with x/2^k < 1/2, squared k ≤ 11 times.
func bigExp(x float64) *big.Float {
	k := 0
	for r := x; r >= 0.5; r /= 2 {
		k++
	}
	y := new(big.Float).SetPrec(bigPrec).SetMantExp(new(big.Float).SetPrec(bigPrec).SetFloat64(x), -k)
	sum := new(big.Float).SetPrec(bigPrec).SetInt64(1)
	term := new(big.Float).SetPrec(bigPrec).SetInt64(1)
	tiny := new(big.Float).SetMantExp(big.NewFloat(1), -bigPrec-8)
	for n := int64(1); term.Cmp(tiny) > 0; n++ {
		term.Mul(term, y)
		term.Quo(term, new(big.Float).SetPrec(bigPrec).SetInt64(n))
		sum.Add(sum, term)
	}
	for range k {
		sum.Mul(sum, sum)
	}
	return sum
}
