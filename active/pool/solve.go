package pool

import (
	"math"
	"slices"

	"github.com/dpal-dev/dpal/dp/account"
)

// The planner's search works order by order. An (ε, δ) guarantee read off
// an RDP curve is the minimum over the orders α of conv(α, RDP(α)), so a
// group meets a target ε exactly when some order has
// RDP(α) ≤ conv.RDPBudget(α, ε, δ). At one order the curve of a phase is
// increasing in its sampling rate and decreasing in its noise multiplier,
// so the largest feasible rate (or the smallest feasible σ) at that order is
// a one-dimensional root, found by a bracketed Illinois iteration; the
// answer is its best value over the orders, found by climbing from the
// order that won last time (the optimum moves little between calls). Every
// value returned is on the feasible side of its root, so the full accountant
// (account.Loss.EpsilonAt, which the plan's report uses) can only find a
// smaller ε.

// rootTol is the relative width at which the searches stop (in log q and
// log σ): far below the 1e-9 the plan is held to.
const rootTol = 1e-12

// group is one group's state while the plan is built: its DP-SGD phases so
// far and its selections, with the RDP of that history cached per order.
type group struct {
	name  string
	size  int
	query int // 0 for the initial set, j for the records of selection j
	sel   int // selections paid so far
	steps []account.Phase

	memo  []float64 // DP-SGD history RDP per order index
	memoN []int     // how many of steps memo[k] includes
	best  int       // order index that won last time
	q     float64   // rate found last time (warm start)
}

// planner holds what every search shares.
type planner struct {
	cfg      Config
	orders   []float64
	epsSel   float64   // ε_Sel/T, the loss of one selection
	selCurve []float64 // per-order RDP of one selection (RDP accounting)
	start    int       // order index to start climbing from
	// sigmaNaive is the naive plan's σ, from which step amplification's
	// step search starts (Fig. 5's input σ).
	sigmaNaive float64
	// curve is the training's RDP at given orders: add/remove
	// (account.ScheduleRDP) or replace-one (account.ScheduleRDPReplace).
	curve func(phases []account.Phase, orders []float64) ([]float64, error)
}

func newPlanner(cfg Config) (*planner, error) {
	p := &planner{cfg: cfg, orders: account.DefaultOrders(), curve: account.ScheduleRDP}
	if cfg.replaceOne() {
		p.curve = account.ScheduleRDPReplace
	}
	p.epsSel = cfg.EpsilonSelect / float64(len(cfg.Queries))
	if cfg.Accounting == RDP && p.epsSel > 0 {
		c, err := account.PureRDP(p.epsSel, p.orders)
		if err != nil {
			return nil, err
		}
		p.selCurve = c
	}
	p.start, _ = slices.BinarySearch(p.orders, 8)
	return p, nil
}

func (p *planner) newGroup(name string, size, query int) *group {
	n := len(p.orders)
	return &group{name: name, size: size, query: query, memo: make([]float64, n), memoN: make([]int, n), best: p.start, q: 0.5}
}

// pure is the group's selection loss added after conversion (basic
// composition); zero under RDP accounting, where it is in the curve.
func (p *planner) pure(g *group) float64 {
	if p.cfg.Accounting == RDP {
		return 0
	}
	return float64(g.sel) * p.epsSel
}

// hist is the RDP at order index k of the group's history: its DP-SGD
// phases and, under RDP accounting, its selections.
func (p *planner) hist(g *group, k int) float64 {
	if g.memoN[k] < len(g.steps) {
		c, err := p.curve(g.steps[g.memoN[k]:], p.orders[k:k+1])
		if err != nil || math.IsInf(c[0], 1) {
			g.memo[k] = math.Inf(1)
		} else {
			g.memo[k] += c[0]
		}
		g.memoN[k] = len(g.steps)
	}
	h := g.memo[k]
	if p.selCurve != nil {
		h += float64(g.sel) * p.selCurve[k]
	}
	return h
}

// budget is the RDP still available at order index k for the group to end
// at total ε target; −Inf when the selections alone reach it.
func (p *planner) budget(g *group, k int, target float64) float64 {
	rest := target - p.pure(g)
	if !(rest > 0) {
		return math.Inf(-1)
	}
	return p.cfg.Conversion.RDPBudget(p.orders[k], rest, p.cfg.Delta) - p.hist(g, k)
}

// The noise multipliers the planner searches. Below sigmaMin the
// accountant's fractional-order series (dp/account) can take seconds per
// order and phase (measured: up to 3 s at σ = 0.2, q = 0.5, α = 10.6, against
// 2 ms at σ = 0.3), which the plan's report and the ledger would pay again
// for every group; plans that need less noise are refused.
const sigmaMin, sigmaMax = 0.3, 1e6

// rdpAt is the RDP at order index k of the given phases, or a lower bound
// above limit when the true value exceeds limit: RDP grows with the order,
// so a fractional order above 2 whose integer floor already exceeds limit
// is not evaluated (its series is the costly one).
func (p *planner) rdpAt(k int, limit float64, phases ...account.Phase) float64 {
	if a := p.orders[k]; a > 2 && a != math.Trunc(a) {
		if lb := p.rdpOrder(math.Floor(a), phases); lb > limit {
			return lb
		}
	}
	return p.rdpOrder(p.orders[k], phases)
}

func (p *planner) rdpOrder(alpha float64, phases []account.Phase) float64 {
	c, err := p.curve(phases, []float64{alpha})
	if err != nil {
		return math.Inf(1)
	}
	return c[0]
}

// rateAt is the largest q ≤ 1 with which n steps at σ keep the group
// within target at order index k (0 if none reaches 1e-300).
func (p *planner) rateAt(g *group, k int, target, sigma float64, n int) float64 {
	b := p.budget(g, k, target)
	if !(b > 0) {
		return 0
	}
	f := func(x float64) float64 {
		return math.Log(p.rdpAt(k, b, account.Phase{SampleRate: math.Exp(x), NoiseMultiplier: sigma, Steps: n})) - math.Log(b)
	}
	x, _, ok := largestFeasible(f, math.Log(g.q), -690, 0)
	if !ok {
		return 0
	}
	return math.Exp(x)
}

// rate is the largest q with which n steps at σ keep the group within
// target at some order: rateAt maximised over the orders by climbing.
func (p *planner) rate(g *group, target, sigma float64, n int) float64 {
	at := func(k int) float64 { return p.rateAt(g, k, target, sigma, n) }
	k, q := climb(len(p.orders), g.best, at, func(a, b float64) bool { return a > b })
	if q == 0 { // nothing near the last optimum: look everywhere
		for j := range p.orders {
			if v := at(j); v > q {
				k, q = j, v
			}
		}
	}
	g.best = k
	if q > 0 {
		g.q = q
	}
	return q
}

// minSigmaAt is the smallest σ with which the extra phases (their own σ
// ignored) keep the group within target at order index k; +Inf if none in
// [sigmaMin, sigmaMax] does.
func (p *planner) minSigmaAt(g *group, k int, target float64, extra []account.Phase) float64 {
	b := p.budget(g, k, target)
	if !(b > 0) {
		return math.Inf(1)
	}
	ph := slices.Clone(extra)
	// y = −log σ: the RDP grows with y.
	f := func(y float64) float64 {
		for i := range ph {
			ph[i].NoiseMultiplier = math.Exp(-y)
		}
		return math.Log(p.rdpAt(k, b, ph...)) - math.Log(b)
	}
	y, _, ok := largestFeasible(f, 0, -math.Log(sigmaMax), -math.Log(sigmaMin))
	if !ok {
		return math.Inf(1)
	}
	return math.Exp(-y)
}

// minSigma is the smallest σ with which the extra phases keep the group
// within target: minSigmaAt minimised over the orders.
func (p *planner) minSigma(g *group, target float64, extra []account.Phase) float64 {
	at := func(k int) float64 { return p.minSigmaAt(g, k, target, extra) }
	k, s := climb(len(p.orders), g.best, at, func(a, b float64) bool { return a < b })
	if math.IsInf(s, 1) {
		for j := range p.orders {
			if v := at(j); v < s {
				k, s = j, v
			}
		}
	}
	g.best = k
	return s
}

// climb moves from index k to a neighbour while better(f(neighbour),
// f(current)) and returns the local optimum and its value.
func climb(n, k int, f func(int) float64, better func(a, b float64) bool) (int, float64) {
	v := f(k)
	for _, dir := range []int{-1, 1} {
		moved := false
		for j := k + dir; j >= 0 && j < n; j += dir {
			w := f(j)
			if !better(w, v) {
				break
			}
			k, v, moved = j, w, true
		}
		if moved {
			break
		}
	}
	return k, v
}

// largestFeasible returns the largest x in [lo, hi] with f(x) ≤ 0, to
// relative width rootTol, for a non-decreasing f, starting from the guess
// x0: a point a where f was evaluated ≤ 0, and the point b > a just past
// the boundary where f was evaluated > 0 (b = a = hi when f(hi) ≤ 0). ok is
// false when f(lo) > 0.
func largestFeasible(f func(float64) float64, x0, lo, hi float64) (a, b float64, ok bool) {
	return largestFeasibleTol(f, x0, lo, hi, rootTol)
}

// largestFeasibleTol is largestFeasible with the bracket's final relative
// width tol.
func largestFeasibleTol(f func(float64) float64, x0, lo, hi, tol float64) (a, b float64, ok bool) {
	x0 = math.Min(math.Max(x0, lo), hi)
	a, b = x0, x0
	fa, fb := f(x0), 0.0
	if fa <= 0 {
		for step := 1e-3; ; step *= 8 {
			b = math.Min(a+step, hi)
			if fb = f(b); fb > 0 {
				break
			}
			a, fa = b, fb
			if b == hi {
				return hi, hi, true
			}
		}
	} else {
		fb = fa
		for step := 1e-3; ; step *= 8 {
			a = math.Max(b-step, lo)
			if fa = f(a); fa <= 0 {
				break
			}
			b, fb = a, fa
			if a == lo {
				return lo, lo, false
			}
		}
	}
	a, b = illinois(f, a, b, fa, fb, tol)
	return a, b, true
}

// illinois narrows the bracket [a, b] (f(a) ≤ 0 < f(b)) by regula falsi
// with the Illinois modification, to relative width tol.
func illinois(f func(float64) float64, a, b, fa, fb, tol float64) (float64, float64) {
	side := 0
	for it := 0; it < 200 && b-a > tol*math.Max(1, math.Abs(a)); it++ {
		c := b - fb*(b-a)/(fb-fa)
		if !(c > a && c < b) || math.IsInf(fa, 0) || math.IsInf(fb, 0) {
			c, side = a+(b-a)/2, 0
		}
		fc := f(c)
		if fc <= 0 {
			a, fa = c, fc
			if side == -1 {
				fb /= 2
			}
			side = -1
		} else {
			b, fb = c, fc
			if side == 1 {
				fa /= 2
			}
			side = 1
		}
	}
	return a, b
}
