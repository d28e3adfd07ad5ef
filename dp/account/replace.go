package account

import (
	"math"
	"slices"
	"sync"
)

// This file is the Poisson-subsampled Gaussian under the replace-one
// (substitution) neighbouring relation: D and D' have the same size and
// differ in one record, x in D and x' in D'.
//
// One step of DP-SGD samples each record with probability q and releases
// the sum of the sampled records' clipped gradients (norm ≤ 1 once divided
// by the clip norm) plus N(0, σ²I). The slot of x and x' is sampled with
// the same probability q in both datasets and the other records are the
// same, so given the rest of the batch (its sum s, identically distributed
// under D and D') the two output laws are
//
//	(1−q)·N(s, σ²I) + q·N(s+u, σ²I)   and   (1−q)·N(s, σ²I) + q·N(s+v, σ²I),
//
// u = g(x), v = g(x') with ‖u‖, ‖v‖ ≤ 1. The component (1−q)·N(s) is
// shared: unlike add/remove, neither side is the plain Gaussian. Mixing
// over s and translating by −s do not raise a divergence (joint
// quasi-convexity; translation invariance), so s = 0. The difference
// g(x) − g(x') has norm at most 2, reached at antipodal unit vectors
// u = −v, which in one dimension is the pair
//
//	P = (1−q)·N(0, σ²) + q·N(1, σ²)   and   Q = (1−q)·N(0, σ²) + q·N(−1, σ²).
//
// It dominates every pair with v = −u, ‖u‖ ≤ 1, in any dimension, by a
// post-processing: y ↦ y·u + N(0, σ²(I − uuᵀ)) maps N(0), N(1), N(−1) to
// N(0), N(u), N(−u). That argument does not reach v ≠ −u (a linear map
// that keeps N(0) fixed sends ±1 to ±u), and projecting on u − v does not
// reduce the problem to one dimension either: the component of u and v
// orthogonal to u − v is common to both, but it tells whether the record
// was sampled, so it is not independent noise. For those pairs we rely on
// a numerical check, not a proof: hockey-stick divergences at ε = 0.3, 1
// and 3 of random u, v in the unit disc (two dimensions, six (q, σ)
// settings, by semi-closed-form integration) never exceeded the antipodal
// pair's, and the remove pair (u = e₁, v = 0) stays below it (tests).
// This is the pair of Koskela, Jälkö & Honkela 2020 ("Computing tight
// differential privacy guarantees using FFT", Poisson subsampling under
// the substitute relation, Sec. 5.2) and of dp_accounting's REPLACE
// adjacency for Poisson-subsampled Gaussian PLDs (privacy_loss_mechanism.py,
// 2026), whose RDP accountant still refuses Poisson sampling under
// REPLACE_ONE; Zhu, Dong & Wang 2022 and Lebeda, Regehr, Kamath & Steinke
// 2024 discuss substitution under Poisson subsampling.
//
// The pair is symmetric, P(x) = Q(−x), so both orders (D, D') and (D', D)
// have the same divergences, and the privacy loss
//
//	L(x) = log P(x)/Q(x) = ℓ(x) − ℓ(−x),   ℓ(x) = log(1 − q + q·e^{(2x−1)/(2σ²)}),
//
// (ℓ is the add/remove remove-direction loss, −ℓ(−x) the add-direction
// one) is odd and increasing. At q = 1 it is the Gaussian mechanism with
// sensitivity 2, L(x) = 2x/σ².

// replacePair is the dominating pair above for one (q, σ), 0 < q ≤ 1.
type replacePair struct{ q, sigma float64 }

// logA returns log(1 − q + q·e^{(2y−1)/(2σ²)}), the remove-direction loss
// ℓ(y); at q = 1 it is (2y−1)/(2σ²).
func (r replacePair) logA(y float64) float64 {
	return logAdd(math.Log1p(-r.q), math.Log(r.q)+(2*y-1)/(2*r.sigma*r.sigma))
}

// loss returns L(x) = ℓ(x) − ℓ(−x). Near x = 0 both terms are close and
// their difference would lose its relative precision, so L is computed as
// log1p(u) with u = (e^{ℓ(x)} − e^{ℓ(−x)})/e^{ℓ(−x)}
// = q·e^{(2x−1)/(2σ²)}·(1 − e^{−2x/σ²})/e^{ℓ(−x)}, every factor in log space.
func (r replacePair) loss(x float64) float64 {
	return odd(x, func(x float64) float64 {
		s2 := r.sigma * r.sigma
		logU := math.Log(r.q) + (2*x-1)/(2*s2) + logSub(0, -2*x/s2) - r.logA(-x)
		return logAdd(0, logU)
	})
}

// outcome is the inverse of loss: the x with L(x) = l. From
// (1−q)e^l + q·c·e^{l−y} = (1−q) + q·c·e^y (y = x/σ², c = e^{−1/(2σ²)}) it
// is x = σ²·(l/2 + asinh(k·sinh(l/2))) with k = e^{1/(2σ²)}(1−q)/q
// (dp_accounting derives the same inverse for its REPLACE adjacency).
func (r replacePair) outcome(l float64) float64 {
	return odd(l, func(l float64) float64 {
		s2 := r.sigma * r.sigma
		// log(k·sinh(l/2)) with log sinh(y) = y − log 2 + log(1 − e^{−2y}).
		logZ := 1/(2*s2) + math.Log1p(-r.q) - math.Log(r.q) + l/2 - math.Ln2 + logSub(0, -l)
		asinh := math.Ln2 + logZ // asinh(z) = log(2z) + O(z⁻²)
		if logZ <= 350 {
			asinh = math.Asinh(math.Exp(logZ))
		}
		return s2 * (l/2 + asinh)
	})
}

// odd extends f, given on finite x > 0, to an odd function with f(0) = 0
// and f(±∞) = ±∞ (L and its inverse are odd and unbounded).
func odd(x float64, f func(float64) float64) float64 {
	switch {
	case x < 0:
		return -odd(-x, f)
	case x == 0, math.IsInf(x, 1):
		return x
	}
	return f(x)
}

// Quadrature of the Rényi divergence. With r = P/Q = e^L and the symmetry
// P(x) = Q(−x), folding x < 0 onto x > 0 gives
//
//	A_α − 1 = ∫ P^α Q^{1−α} − 1 = ∫_0^∞ Q(x)·(1 − e^{(1−α)L(x)})·(e^{αL(x)} − 1) dx
//
// (∫_{x<0} P^α Q^{1−α} = ∫_{x>0} Q·r^{1−α} and 1 = ∫_{x>0} (P + Q)). The
// integrand is non-negative and is computed through expm1-type functions,
// so A_α − 1 keeps its relative precision however small q makes it; RDP is
// log1p(A_α − 1)/(α − 1), whose relative error is at most that of A_α − 1.
//
// The folded integrand is the even part of an analytic function, so the
// trapezoid rule on the grid x_i = i·h (i ≥ 1; it vanishes at 0)
// converges geometrically in 1/h, limited by the Gaussian's width σ and
// by the poles of Q^{1−α} at distance πσ² from the real axis; hence
// h = min(σ/3, σ²/4). Each result is checked against the rule with step
// 2h (the even points alone): with geometric convergence the step-h sum's
// error is far below their difference, which must not exceed
// replaceQuadTol relative, or the step is halved (up to replaceMaxRefine
// times; an order that still fails is reported as +Inf, never
// under-reported).
//
// The mass lies within [0, max(2α−1, 2) + replaceTailSigmas·σ]: the
// integrand's log-derivative is −(x − T(x))/σ² with T(x) ≤ 2α−1 (the
// tilted part P^α Q^{1−α}), and the part where L is small peaks near
// max(2, √2σ). Beyond that it falls faster than a Gaussian of width σ;
// the sum also checks that its last term is negligible, and extends the
// range when it is not.
const (
	replaceQuadTol    = 1e-10
	replaceSafety     = 1e-9
	replaceTailSigmas = 12
	replaceMaxRefine  = 6
	// replaceMaxPoints bounds one grid (σ ≲ 0.01 would need more).
	replaceMaxPoints = 1 << 22
)

// replaceGrid holds, on x_i = (i+1)·h, log Q(x_i) + log(σ√(2π)) and L(x_i),
// extended on demand.
type replaceGrid struct {
	pair       replacePair
	h          float64
	logQ, loss []float64
}

// extend makes the grid hold n points; it reports false beyond
// replaceMaxPoints.
func (g *replaceGrid) extend(n int) bool {
	if n > replaceMaxPoints {
		return false
	}
	s2 := g.pair.sigma * g.pair.sigma
	for i := len(g.loss); i < n; i++ {
		x := float64(i+1) * g.h
		g.logQ = append(g.logQ, -x*x/(2*s2)+g.pair.logA(-x))
		g.loss = append(g.loss, g.pair.loss(x))
	}
	return true
}

// trapezoid accumulates the folded integrand on the grid as e^m·(even +
// odd), even and odd being the sums over even and odd i+1.
type trapezoid struct {
	m, even, odd float64
}

func (t *trapezoid) add(i int, v float64) {
	if math.IsInf(v, -1) {
		return
	}
	if v > t.m {
		r := math.Exp(t.m - v)
		t.even, t.odd, t.m = t.even*r, t.odd*r, v
	}
	w := math.Exp(v - t.m)
	if (i+1)%2 == 0 {
		t.even += w
	} else {
		t.odd += w
	}
}

// logFolded returns log((1 − e^{(1−α)L})(e^{αL} − 1)) for L ≥ 0: where
// (α−1)L exceeds 40 the first factor is 1 to within 1e-17 and the second
// e^{αL} to within less, so it is αL.
func logFolded(alpha, l float64) float64 {
	switch a := alpha * l; {
	case a-l > 40:
		return a
	case a > 700: // e^{αL} would overflow: only for α close to 1
		return a + logSub(0, l-a)
	}
	if f := -math.Expm1(l-alpha*l) * math.Expm1(alpha*l); f > 0 {
		return math.Log(f)
	}
	return logSub(0, l-alpha*l) + logExpm1(alpha*l) // the product underflows
}

// replaceSkip is how far below the largest term (in log) a grid point's
// upper bound must lie for the point to be skipped: e^{−80} per point.
const replaceSkip = 80

// logAm1 returns log(A_α − 1) on g and the relative difference between the
// step-h and step-2h sums; ok is false when the grid would grow past its
// bound. Points whose upper bound log Q + αL (the folded factor is at most
// e^{αL}) lies replaceSkip below a term already known are skipped without
// evaluating the factor.
func (g *replaceGrid) logAm1(alpha float64) (logAm1, diff float64, ok bool) {
	sigma := g.pair.sigma
	end := math.Max(2*alpha-1, 2) + replaceTailSigmas*sigma
	points := math.Ceil(end / g.h)
	if !(points <= replaceMaxPoints) { // before the conversion: α may be huge
		return 0, 0, false
	}
	n := int(points)
	if !g.extend(n) {
		return 0, 0, false
	}
	top, at := math.Inf(-1), 0
	for i := range n {
		if ub := g.logQ[i] + alpha*g.loss[i]; ub > top {
			top, at = ub, i
		}
	}
	// The term at the bound's peak sets the scale (few rescalings) and the
	// skipping floor.
	t := trapezoid{m: g.logQ[at] + logFolded(alpha, g.loss[at])}
	floor := t.m - replaceSkip
	last := math.Inf(-1)
	for i := 0; ; i++ {
		if i == n {
			// The last term must be negligible: else extend the range.
			// (No term at all: L underflows to 0 on the whole grid.)
			if math.IsInf(t.m, -1) || last < floor || last-t.m < -70 {
				break
			}
			n += int(math.Ceil(replaceTailSigmas * sigma / g.h))
			if !g.extend(n) {
				return 0, 0, false
			}
		}
		if last = g.logQ[i] + alpha*g.loss[i]; last < floor {
			continue
		}
		last = g.logQ[i] + logFolded(alpha, g.loss[i])
		t.add(i, last)
	}
	s := t.even + t.odd
	if t.m == math.Inf(-1) || s == 0 {
		return math.Inf(-1), 0, true // L underflows to 0 everywhere
	}
	diff = math.Abs(t.odd-t.even) / s
	return t.m + math.Log(g.h*s) - math.Log(sigma*math.Sqrt(2*math.Pi)), diff, true
}

// replaceEntry caches, for one (q, σ), the grids by refinement level and
// the RDP by order.
type replaceEntry struct {
	mu    sync.Mutex
	grids []*replaceGrid
	rdp   map[float64]float64
}

// replaceCacheSize bounds the (q, σ) pairs the cache holds: a grid is a
// few thousand points, and a planner revisits the same pairs.
const replaceCacheSize = 256

// replaceCache maps (q, σ) to its entry; when full it is emptied (pairs
// recur within one plan or calibration, rarely across them).
var replaceCache struct {
	mu      sync.Mutex
	entries map[replacePair]*replaceEntry
}

func replaceEntryFor(p replacePair) *replaceEntry {
	replaceCache.mu.Lock()
	defer replaceCache.mu.Unlock()
	if e, ok := replaceCache.entries[p]; ok {
		return e
	}
	if replaceCache.entries == nil || len(replaceCache.entries) >= replaceCacheSize {
		replaceCache.entries = map[replacePair]*replaceEntry{}
	}
	e := &replaceEntry{rdp: map[float64]float64{}}
	replaceCache.entries[p] = e
	return e
}

// replaceRDP returns the RDP at order alpha of one step of the pair with
// rate q and noise multiplier sigma (validated).
func replaceRDP(q, sigma, alpha float64) float64 {
	switch {
	case q == 0:
		return 0
	case q == 1:
		return 4 * gaussianRDP(sigma, alpha) // sensitivity 2
	}
	// The pair is a mixture of (N(1), N(−1)) with the shared N(0): by
	// joint convexity its RDP is at most the sensitivity-2 Gaussian's,
	// 2α/σ². Where that is negligible it is the answer (see orderTerms.rdp).
	if g := 4 * gaussianRDP(sigma, alpha); g < negligibleRDP {
		return g
	}
	p := replacePair{q: q, sigma: sigma}
	e := replaceEntryFor(p)
	e.mu.Lock()
	defer e.mu.Unlock()
	if v, ok := e.rdp[alpha]; ok {
		return v
	}
	v := math.Inf(1)
	for level := 0; level <= replaceMaxRefine; level++ {
		if level == len(e.grids) {
			h := math.Min(sigma/3, sigma*sigma/4) / float64(int(1)<<level)
			e.grids = append(e.grids, &replaceGrid{pair: p, h: h})
		}
		logAm1, diff, ok := e.grids[level].logAm1(alpha)
		if !ok {
			break
		}
		if diff <= replaceQuadTol {
			// Inflated by replaceSafety (ten times the checked error) so
			// that the charge is an upper bound, not just accurate.
			v = math.Max(logAdd(0, logAm1), 0) / (alpha - 1) * (1 + replaceSafety)
			break
		}
	}
	e.rdp[alpha] = v
	return v
}

// ScheduleRDPReplace returns the RDP curve of DP-SGD phases under the
// replace-one relation (see the pair above), composed by addition
// (Mironov 2017, Prop. 1): Σ steps·D_α(P‖Q) per order, D_α computed by
// quadrature to about 1e-10 relative (see logAm1 for the error control)
// and raised by 1e-9 relative, so that the value charged is above the
// true one. Phases that sample nothing add 0.
func ScheduleRDPReplace(phases []Phase, orders []float64) ([]float64, error) {
	return scheduleCurve(phases, orders, replaceCurve)
}

// replaceCurve is the replace-one schedule's RDP as a function of the
// order, for the accountant's lazy evaluation (see curveMemo).
func replaceCurve(phases []Phase) func(*orderTerms) float64 {
	return func(o *orderTerms) float64 {
		var sum float64
		for _, p := range phases {
			if p.Steps > 0 && p.SampleRate > 0 {
				sum += float64(p.Steps) * replaceRDP(p.SampleRate, p.NoiseMultiplier, o.alpha)
			}
		}
		return sum
	}
}

// SubsampledGaussianReplace returns the loss of DP-SGD phases (Poisson
// sampling at rate q, clipped gradients, noise multiplier σ) under the
// replace-one relation, as an RDP curve over DefaultOrders: the phases'
// per-step pair P = (1−q)N(0,σ²) + qN(1,σ²), Q = (1−q)N(0,σ²) + qN(−1,σ²)
// (see the top of replace.go for why it dominates), composed. It is never
// below the add/remove curve of SubsampledGaussian and never above the
// sensitivity-2 Gaussian's 2α/σ² per step; q = 1 is that Gaussian. Use it
// where the dataset size is public, e.g. fixed-size selections in active
// learning.
func SubsampledGaussianReplace(phases []Phase) (Loss, error) {
	return scheduleLoss("subsampled-gaussian-replace", phases, replaceCurve)
}

// scheduleLoss is the loss of a schedule's curve over DefaultOrders, with
// the phases' parameters for the audit trail. Curves are memoized by
// mechanism and schedule (sgMemo).
func scheduleLoss(mechanism string, phases []Phase, curve curveFunc) (Loss, error) {
	key := scheduleKey(mechanism, phases)
	l, ok := theSGMemo.get(key)
	if !ok {
		orders := DefaultOrders()
		rdp, err := scheduleCurve(phases, orders, curve)
		if err != nil {
			return Loss{}, err
		}
		if l, err = RDPCurve(mechanism, orders, rdp); err != nil {
			return Loss{}, err
		}
		theSGMemo.put(key, l)
	}
	l.Orders, l.RDP = slices.Clone(l.Orders), slices.Clone(l.RDP)
	if len(phases) == 1 {
		p := phases[0]
		l.Params = map[string]float64{"sample_rate": p.SampleRate, "noise_multiplier": p.NoiseMultiplier, "steps": float64(p.Steps)}
	} else {
		l.Params = map[string]float64{"phases": float64(len(phases))}
	}
	return l, nil
}
