package account

import (
	"fmt"
	"math"
)

// The fractional-order series of Mironov, Talwar & Zhang stops once its
// terms fall below e^fracSeriesFloor (as in Opacus and dp_accounting) and
// below fracSeriesRel·(A_α − 1), so that the truncation stays negligible
// (≤ 1e-11 relative) in log A_α even when A_α is close to 1.
const (
	fracSeriesFloor = -30
	fracSeriesRel   = 1e-11
)

// negligibleRDP is the per-step RDP below which the Gaussian bound is used
// as is (see orderTerms.rdp).
const negligibleRDP = 1e-100

// fracSeriesMaxTerms bounds the series; an order that needs more is
// reported as +Inf (never usable, so never under-reported).
const fracSeriesMaxTerms = 2_000_000

// GaussianRDP returns the RDP curve of the Gaussian mechanism with noise
// multiplier sigma (noise standard deviation over L2 sensitivity):
// α/(2σ²) at each order (Mironov 2017, Prop. 7).
func GaussianRDP(sigma float64, orders []float64) ([]float64, error) {
	if err := validateSigma(sigma); err != nil {
		return nil, err
	}
	if err := ValidateOrders(orders); err != nil {
		return nil, err
	}
	out := make([]float64, len(orders))
	for i, a := range orders {
		out[i] = gaussianRDP(sigma, a)
	}
	return out, nil
}

func gaussianRDP(sigma, alpha float64) float64 { return alpha / (2 * sigma * sigma) }

// LaplaceRDP returns the RDP curve of the Laplace mechanism with scale b
// for an L1 sensitivity of 1 (so the mechanism is 1/b-DP), from Mironov
// 2017, Prop. 6 (table 2): for α > 1,
//
//	1/(α−1) · log( α/(2α−1)·e^{(α−1)/b} + (α−1)/(2α−1)·e^{−α/b} ),
//
// evaluated in log space so that large 1/b does not overflow.
func LaplaceRDP(b float64, orders []float64) ([]float64, error) {
	if !(b > 0) || math.IsInf(b, 0) {
		return nil, fmt.Errorf("laplace scale must be finite and > 0, got %v", b)
	}
	if err := ValidateOrders(orders); err != nil {
		return nil, err
	}
	out := make([]float64, len(orders))
	for i, a := range orders {
		l := logAdd(math.Log(a/(2*a-1))+(a-1)/b, math.Log((a-1)/(2*a-1))-a/b)
		out[i] = math.Max(l/(a-1), 0)
	}
	return out, nil
}

// PureRDP returns an RDP curve that holds for every ε-DP mechanism: that of
// randomized response with parameter ε,
//
//	1/(α−1) · log( (e^{αε} + e^{(1−α)ε}) / (1 + e^ε) ).
//
// Any pair of output laws of an ε-DP mechanism on neighbouring inputs is a
// post-processing of the randomized-response pair (Kairouz, Oh & Viswanath
// 2015, Thm 2.4), so by the data-processing inequality its Rényi divergence
// is at most this one. It lies below min(ε, αε²/2) and above the
// continuous Laplace curve (LaplaceRDP(1/ε)); unlike the latter it also
// covers discrete Laplace noise on a grid (whose worst case, a shift of one
// grid step, is exactly randomized response).
func PureRDP(eps float64, orders []float64) ([]float64, error) {
	if err := ValidateEpsilon(eps); err != nil {
		return nil, err
	}
	if err := ValidateOrders(orders); err != nil {
		return nil, err
	}
	out := make([]float64, len(orders))
	for i, a := range orders {
		l := logAdd(a*eps, (1-a)*eps) - logAdd(0, eps)
		out[i] = math.Max(l/(a-1), 0)
	}
	return out, nil
}

// SubsampledGaussianRDP returns the per-step RDP curve of the Poisson
// subsampled Gaussian mechanism (sampling rate q, noise multiplier sigma),
// D_α((1−q)N(0,σ²) + qN(1,σ²) ‖ N(0,σ²)) as in Mironov, Talwar & Zhang 2019,
// "Rényi Differential Privacy of the Sampled Gaussian Mechanism", Sec. 3.3:
// the binomial expansion at integer orders and the two-series formula at
// fractional orders, both in log space.
func SubsampledGaussianRDP(q, sigma float64, orders []float64) ([]float64, error) {
	return ScheduleRDP([]Phase{{SampleRate: q, NoiseMultiplier: sigma, Steps: 1}}, orders)
}

// ScheduleRDP returns the RDP curve of the phases run one after another
// (RDP composes by addition, Mironov 2017 Prop. 1).
func ScheduleRDP(phases []Phase, orders []float64) ([]float64, error) {
	return scheduleCurve(phases, orders, addRemoveCurve)
}

// scheduleCurve evaluates a schedule's curve at the orders.
func scheduleCurve(phases []Phase, orders []float64, curve curveFunc) ([]float64, error) {
	if err := validatePhases(phases); err != nil {
		return nil, err
	}
	if err := ValidateOrders(orders); err != nil {
		return nil, err
	}
	at := curve(phases)
	out := make([]float64, len(orders))
	for k, a := range orders {
		out[k] = at(newOrderTerms(a))
	}
	return out, nil
}

// totalRDP composes the phases at one order.
func totalRDP(t *orderTerms, pts []*phaseTerms) float64 {
	var sum float64
	for _, pt := range pts {
		if pt.Steps > 0 {
			sum += float64(pt.Steps) * t.rdp(pt)
		}
	}
	return sum
}

// phaseTerms caches what every order shares for one phase: log q,
// log(1−q) and, for the integer expansion, log(e^{(i²−i)/(2σ²)} − 1).
type phaseTerms struct {
	Phase
	logQ, log1mQ, inv float64
	ex                []float64 // ex[i] for i ≥ 2, grown on demand
}

func newPhaseTerms(phases []Phase) []*phaseTerms {
	out := make([]*phaseTerms, len(phases))
	for i, p := range phases {
		s := p.NoiseMultiplier
		out[i] = &phaseTerms{Phase: p, logQ: math.Log(p.SampleRate), log1mQ: math.Log1p(-p.SampleRate),
			inv: 1 / (2 * s * s), ex: []float64{math.NaN(), math.NaN()}}
	}
	return out
}

// logExpm1At returns log(e^{(i²−i)/(2σ²)} − 1) for i ≥ 2.
func (pt *phaseTerms) logExpm1At(i int) float64 {
	for k := len(pt.ex); k <= i; k++ {
		fk := float64(k)
		pt.ex = append(pt.ex, logExpm1((fk*fk-fk)*pt.inv))
	}
	return pt.ex[i]
}

// orderTerms evaluates the subsampled Gaussian at one order and caches the
// binomial coefficients log|C(α, i)| (and their signs) of the series, which
// depend on α only, so calibration can reuse them across q and σ.
type orderTerms struct {
	alpha float64
	n     int // α when it is an integer, else -1
	logC  []float64
	sign  []int8
}

func newOrderTerms(alpha float64) *orderTerms {
	o := &orderTerms{alpha: alpha, n: -1}
	if alpha == math.Trunc(alpha) && alpha < 1<<20 {
		o.n = int(alpha)
	}
	return o
}

// rdp is the per-step RDP at the order for one (validated) phase.
func (o *orderTerms) rdp(pt *phaseTerms) float64 {
	switch pt.SampleRate {
	case 0:
		return 0
	case 1:
		return gaussianRDP(pt.NoiseMultiplier, o.alpha)
	}
	// Subsampling never raises the Rényi divergence above the Gaussian's
	// α/(2σ²) (quasi-convexity of D_α). Where that bound is negligible it
	// is the answer to far below any conversion's resolution, and the
	// series, whose terms hold σ², would overflow (σ ≳ 1e154) or crawl.
	if g := gaussianRDP(pt.NoiseMultiplier, o.alpha); g < negligibleRDP {
		return g
	}
	var logA float64
	if o.n >= 0 {
		logA = logAInt(o.n, pt)
	} else {
		logA = o.logAFrac(pt)
	}
	return math.Max(logA, 0) / (o.alpha - 1)
}

// logAInt returns log A_α for integer α = n:
// A_α = Σ_i C(n,i) q^i (1−q)^{n−i} e^{(i²−i)/(2σ²)}. Since the weights sum to
// one and the i = 0, 1 exponents vanish, A_α − 1 is the sum over i ≥ 2 of
// the same weights times expm1((i²−i)/(2σ²)); summing that instead keeps full
// relative precision when A_α is close to 1 (small q).
func logAInt(n int, pt *phaseTerms) float64 {
	sum := newLogSum()
	for i := 2; i <= n; i++ {
		sum.add(LogBinomial(n, i) + float64(i)*pt.logQ + float64(n-i)*pt.log1mQ + pt.logExpm1At(i))
	}
	if sum.s == 0 {
		return 0
	}
	return logAdd(0, sum.log())
}

// logExpm1 returns log(e^x − 1) for x > 0.
func logExpm1(x float64) float64 {
	if x > 40 {
		return x + math.Log1p(-math.Exp(-x))
	}
	return math.Log(math.Expm1(x))
}

// coef returns log|C(α, i)| and its sign, extending the cache by the
// recurrence C(α, i+1) = C(α, i)·(α−i)/(i+1).
func (o *orderTerms) coef(i int) (float64, int8) {
	if len(o.logC) == 0 {
		o.logC, o.sign = append(o.logC, 0), append(o.sign, 1)
	}
	for k := len(o.logC); k <= i; k++ {
		r := o.alpha - float64(k-1)
		sg := o.sign[k-1]
		if r < 0 {
			sg = -sg
		}
		o.logC = append(o.logC, o.logC[k-1]+math.Log(math.Abs(r))-math.Log(float64(k)))
		o.sign = append(o.sign, sg)
	}
	return o.logC[i], o.sign[i]
}

// logAFrac returns log A_α for fractional α by the two series of Mironov,
// Talwar & Zhang 2019 (Sec. 3.3), split at z0 = σ² log(1/q − 1) + 1/2:
//
//	A_0 = Σ_i C(α,i) q^i (1−q)^{α−i} e^{(i²−i)/(2σ²)} · ½erfc((i − z0)/(√2σ))
//	A_1 = Σ_i C(α,i) q^{α−i} (1−q)^i e^{((α−i)²−(α−i))/(2σ²)} · ½erfc((z0 − (α−i))/(√2σ))
//
// Where the erfc argument x is positive, e^{x²} is taken out of erfc into
// erfcx and cancelled against the exponent exactly: both terms become
// C(α,i)·(1−q)^α·e^{−z0²/(2σ²)}·½erfcx(x). Summing the huge exponent and the
// huge negative log erfc instead would lose ~1e-13 of A_α to rounding.
//
// Terms are summed as e^m·(sum + comp) with a running scale m. Past
// i = α+1 the coefficients alternate in sign; the sum stops at a positive
// term that is smaller than the one before and negligible (see
// fracSeriesFloor), so the alternating tail left out is negative and smaller
// than that term: truncation never under-reports.
func (o *orderTerms) logAFrac(pt *phaseTerms) float64 {
	a, sigma := o.alpha, pt.NoiseMultiplier
	logQ, log1mQ, inv := pt.logQ, pt.log1mQ, pt.inv
	z0 := sigma*sigma*(log1mQ-logQ) + 0.5
	tailBase := a*log1mQ - z0*z0*inv
	s2 := math.Sqrt2 * sigma
	acc := scaledSum{m: math.Inf(-1), prev: math.Inf(1), rel: math.NaN()}
	for i := 0; i < fracSeriesMaxTerms; i++ {
		lc, sg := o.coef(i)
		fi := float64(i)
		j := a - fi
		v0, e0 := seriesTerm(lc+fi*logQ+j*log1mQ+(fi*fi-fi)*inv, lc+tailBase, (fi-z0)/s2)
		v1, e1 := seriesTerm(lc+j*logQ+fi*log1mQ+(j*j-j)*inv, lc+tailBase, (z0-j)/s2)
		t := acc.addPair(v0, e0, v1, e1, sg)
		if sg > 0 && fi > a+1 && t < acc.floor && t <= acc.prev && acc.negligible(t) {
			return acc.log()
		}
		acc.prev = t
	}
	return math.Inf(1)
}

// seriesTerm returns e^v·½erfc(x) as a log part and a linear factor: as is
// for x ≤ 0, and as e^{tail}·½erfcx(x) for x > 0, tail being v − x² computed
// without cancellation by the caller.
func seriesTerm(v, tail, x float64) (float64, float64) {
	if x <= 0 {
		return v, 0.5 * math.Erfc(x)
	}
	return tail, 0.5 * erfcx(x)
}

// scaledSum accumulates signed terms as e^m·(sum + comp), with Neumaier's
// compensated summation for the long alternating tail. prev (the last
// term), floor (e^fracSeriesFloor) and rel (fracSeriesRel·(A − 1), NaN until
// needed) are kept on the same scale.
type scaledSum struct {
	m, sum, comp, prev, floor, rel float64
}

// addPair adds sign·(e^v0·f0 + e^v1·f1) and returns that term's magnitude
// on the scale e^m.
func (s *scaledSum) addPair(v0, f0, v1, f1 float64, sign int8) float64 {
	if v := math.Max(v0, v1); v > s.m {
		r := math.Exp(s.m - v)
		s.sum, s.comp, s.prev, s.m = s.sum*r, s.comp*r, s.prev*r, v
		s.floor, s.rel = math.Exp(fracSeriesFloor-v), math.NaN()
	}
	var t float64
	if v0 == v1 { // both terms in the erfcx form share their exponent
		t = math.Exp(v0-s.m) * (f0 + f1)
	} else {
		t = math.Exp(v0-s.m)*f0 + math.Exp(v1-s.m)*f1
	}
	x := t
	if sign < 0 {
		x = -t
	}
	next := s.sum + x
	if math.Abs(s.sum) >= math.Abs(x) {
		s.comp += (s.sum - next) + x
	} else {
		s.comp += (x - next) + s.sum
	}
	s.sum = next
	return t
}

// log returns the log of the accumulated sum.
func (s *scaledSum) log() float64 { return s.m + math.Log(s.sum+s.comp) }

// negligible reports whether the term t (on the scale e^m) is below
// fracSeriesRel·(A − 1). A − 1 is estimated once per scale: deep in the
// tail, where this is asked, it no longer moves.
func (s *scaledSum) negligible(t float64) bool {
	if math.IsNaN(s.rel) {
		s.rel = fracSeriesRel * math.Abs(math.Expm1(s.log())) * math.Exp(-s.m)
	}
	return t <= s.rel
}
