package account

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Options configures the RDP accountant. The zero value means Opacus's
// default orders (DefaultOrders) and the Balle2020 conversion.
type Options struct {
	// Orders are the RDP orders to optimise over; nil means DefaultOrders.
	Orders []float64
	// Conversion turns the RDP curve into (ε, δ).
	Conversion Conversion
}

// Epsilon returns the smallest (ε, δ) guarantee, over the orders, of the
// phases of the Poisson subsampled Gaussian run one after another. Phases
// that sample no record (q = 0 or no steps) release nothing: if no phase
// does, ε is 0 and Order is 0 (no order is involved). Orders
// that provably cannot beat the best ε found (their RDP is at least that of
// the integer order below them, as Rényi divergence grows with α) are not
// evaluated, so the result equals a full scan at a fraction of its cost.
func Epsilon(phases []Phase, delta float64, opt Options) (EpsilonResult, error) {
	ev, err := newEvaluator(opt, delta)
	if err != nil {
		return EpsilonResult{}, err
	}
	if err := validatePhases(phases); err != nil {
		return EpsilonResult{}, err
	}
	if !spends(phases) {
		return EpsilonResult{Delta: delta}, nil
	}
	res := ev.best(ev.memo(addRemoveCurve(phases)))
	if math.IsInf(res.Epsilon, 1) {
		return res, fmt.Errorf("epsilon is unbounded at every RDP order")
	}
	warnEdge(&res, ev.orders)
	return res, nil
}

// spends reports whether some phase samples records at all.
func spends(phases []Phase) bool {
	for _, p := range phases {
		if p.SampleRate > 0 && p.Steps > 0 {
			return true
		}
	}
	return false
}

// evaluator holds the orders of one accountant call and the per-order
// coefficient caches shared by all the parameter values it is asked about.
type evaluator struct {
	orders   []float64
	terms    []*orderTerms
	conv     Conversion
	delta    float64
	logDelta float64
	ints     []int // indices of integer orders, evaluated first (cheap)
	fracs    []int // indices of fractional orders
}

func newEvaluator(opt Options, delta float64) (*evaluator, error) {
	orders := opt.Orders
	if orders == nil {
		orders = DefaultOrders()
	}
	if err := ValidateOrders(orders); err != nil {
		return nil, err
	}
	if err := ValidateDelta(delta); err != nil || delta == 0 {
		return nil, fmt.Errorf("delta must satisfy 0 < delta < 1, got %v", delta)
	}
	if _, err := opt.Conversion.MarshalText(); err != nil {
		return nil, err
	}
	ev := &evaluator{orders: orders, conv: opt.Conversion, delta: delta, logDelta: math.Log(delta)}
	for k, a := range orders {
		t := newOrderTerms(a)
		ev.terms = append(ev.terms, t)
		if t.n >= 0 {
			ev.ints = append(ev.ints, k)
		} else {
			ev.fracs = append(ev.fracs, k)
		}
	}
	return ev, nil
}

// curveFunc gives a schedule's RDP curve as a function of the order: the
// add/remove (addRemoveCurve) or replace-one (replaceCurve) subsampled
// Gaussian. The accountant and the calibration are written once against
// it.
type curveFunc func(phases []Phase) func(*orderTerms) float64

// addRemoveCurve is the Poisson-subsampled Gaussian's curve under
// add/remove adjacency (ScheduleRDP).
func addRemoveCurve(phases []Phase) func(*orderTerms) float64 {
	pts := newPhaseTerms(phases)
	return func(o *orderTerms) float64 { return totalRDP(o, pts) }
}

// curveMemo evaluates one schedule lazily, order by order.
type curveMemo struct {
	ev    *evaluator
	curve func(*orderTerms) float64
	rdp   []float64       // total RDP per order index; NaN until computed
	cgf   map[int]float64 // F(n) = (n−1)·RDP(n) at integers, for bounds
}

func (ev *evaluator) memo(curve func(*orderTerms) float64) *curveMemo {
	m := &curveMemo{ev: ev, curve: curve, rdp: make([]float64, len(ev.orders)), cgf: map[int]float64{}}
	for k := range m.rdp {
		m.rdp[k] = math.NaN()
	}
	return m
}

// eps is the converted ε at order index k.
func (m *curveMemo) eps(k int) float64 {
	if math.IsNaN(m.rdp[k]) {
		m.rdp[k] = m.curve(m.ev.terms[k])
	}
	return m.ev.conv.epsilonAt(m.ev.orders[k], m.rdp[k], m.ev.logDelta)
}

// lowerEps is a lower bound on eps(k); cheap for fractional orders.
func (m *curveMemo) lowerEps(k int) float64 {
	if !math.IsNaN(m.rdp[k]) || m.ev.terms[k].n >= 0 {
		return m.eps(k)
	}
	a := m.ev.orders[k]
	return m.ev.conv.epsilonAt(a, m.lowerF(a)/(a-1), m.ev.logDelta)
}

// lowerF bounds F(α) = (α−1)·RDP(α) from below for α in (n, n+1) using only
// integer orders. F is a sum of cumulant generating functions of privacy
// losses, log E[e^{(α−1)·loss}], so it is convex and non-decreasing with
// F(0) = F(1) = 0: it lies above F(n) and above the secants through
// (n−1, n) and (n+1, n+2) extended into (n, n+1).
func (m *curveMemo) lowerF(a float64) float64 {
	n := int(a)
	f0, f1, f2 := m.intF(n-1), m.intF(n), m.intF(n+1)
	left := f1 + (a-float64(n))*(f1-f0)
	right := f2 - (float64(n+1)-a)*(m.intF(n+2)-f2)
	return math.Max(math.Max(f1, left), math.Max(right, 0))
}

// intF returns F(n) = (n−1)·RDP(n), memoised; 0 for n ≤ 1.
func (m *curveMemo) intF(n int) float64 {
	if n <= 1 {
		return 0
	}
	v, ok := m.cgf[n]
	if !ok {
		v = float64(n-1) * m.curve(newOrderTerms(float64(n)))
		m.cgf[n] = v
	}
	return v
}

// best returns the minimum ε over all orders (first order on ties), skipping
// fractional orders whose lower bound cannot beat the best so far.
func (ev *evaluator) best(m *curveMemo) EpsilonResult {
	bestK, bestE := -1, math.Inf(1)
	consider := func(k int, e float64) {
		if e < bestE || e == bestE && k < bestK {
			bestK, bestE = k, e
		}
	}
	for _, k := range ev.ints {
		consider(k, m.eps(k))
	}
	fr := slices.Clone(ev.fracs)
	lb := make(map[int]float64, len(fr))
	for _, k := range fr {
		lb[k] = m.lowerEps(k)
	}
	slices.SortStableFunc(fr, func(a, b int) int { return cmp.Compare(lb[a], lb[b]) })
	for _, k := range fr {
		if lb[k] > bestE {
			break
		}
		consider(k, m.eps(k))
	}
	res := EpsilonResult{Epsilon: bestE, Order: math.NaN(), Delta: ev.delta}
	if bestK >= 0 {
		res.Order = ev.orders[bestK]
	}
	return res
}
