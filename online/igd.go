package online

import (
	"fmt"
	"math"

	"github.com/dpal-dev/dpal/vec"
)

// ProxTolerance is κ of the implicit step's accuracy budget (spec N10): step
// t must be solved to e_t ≤ κλ/(2T(t+1)), and IGD's stability bound is
// inflated to (1+κ)·2L/α. By Lemma 4's induction with errors,
// t·D_t ≤ λ + 2Σ_{s<t}(s+1)e_s ≤ (1+κ)λ, so condition (1) keeps holding.
const ProxTolerance = 1e-3

// IGD is implicit (proximal) gradient descent, eq. (20) (Kulis–Bartlett
// 2010): x_{t+1} = argmin_{x∈C} ½‖x − x_t‖² + η_t f_t(x), η_t = 1/(αt),
// from the data-independent x_1 = 0 (spec N13).
//
// Its sensitivity under one replaced cost is 2L/(αt) (Lemma 4), L the
// Lipschitz constant of f_t on C including the regulariser (spec N10).
// Each step is solved by bisection on the two scalars of its optimality
// condition and certified a posteriori by strong convexity: the step
// objective is (1+ηα)-strongly convex, so ‖x − x*‖ ≤ ‖g‖/(1+ηα) for any
// subgradient g of the objective plus the ball's indicator at x. A step
// whose certificate misses e_t is an error, never a silent privacy loss.
type IGD struct {
	cost  Cost
	steps int
	x     []float64
	next  []float64
	worst float64 // largest certified e_t/(allowed e_t)
}

// NewIGD returns IGD on cost for a run of steps rounds.
func NewIGD(cost Cost, steps int) (*IGD, error) {
	if err := cost.Validate(); err != nil {
		return nil, fmt.Errorf("igd: %w", err)
	}
	if err := cost.bounded("igd"); err != nil {
		return nil, err
	}
	if steps < 1 {
		return nil, fmt.Errorf("igd: the number of rounds T must be >= 1, got %d", steps)
	}
	return &IGD{cost: cost, steps: steps, x: make([]float64, cost.Dim), next: make([]float64, cost.Dim)}, nil
}

// Name returns "igd".
func (a *IGD) Name() string { return "igd" }

// Cost is the cost family.
func (a *IGD) Cost() Cost { return a.cost }

// Warmup is 0: IGD uses every record.
func (a *IGD) Warmup() int { return 0 }

// Stability is λ = (1+κ)·2L/α (Lemma 4 with the solver's tolerance).
func (a *IGD) Stability() float64 {
	return (1 + ProxTolerance) * 2 * a.cost.Lipschitz() / a.cost.Alpha
}

// Point is the current iterate x_t.
func (a *IGD) Point() []float64 { return a.x }

// SolverSlack is the largest ratio of a certified step error to its
// allowance so far (≤ 1 by construction).
func (a *IGD) SolverSlack() float64 { return a.worst }

// Update takes the proximal step on f_t and returns x_{t+1}.
func (a *IGD) Update(t int, ex Example) ([]float64, error) {
	if err := a.cost.Check(t, ex); err != nil {
		return nil, err
	}
	eta := 1 / (a.cost.Alpha * float64(t))
	allowed := ProxTolerance * 2 * a.cost.Lipschitz() / a.cost.Alpha / (2 * float64(a.steps) * float64(t+1))
	e := prox(a.cost, a.x, ex, eta, a.next)
	if !(e <= allowed) {
		return nil, fmt.Errorf("igd: record %d: the implicit step is certified only to %.3g, above its tolerance %.3g", t, e, allowed)
	}
	a.worst = math.Max(a.worst, e/allowed)
	a.x, a.next = a.next, a.x
	return a.x, nil
}

// prox writes argmin_{‖x‖≤r} ½‖x − x0‖² + η(ℓ(vᵀx) + (α/2)‖x‖²) into dst
// and returns a certified bound on its distance to the exact minimiser.
//
// The minimiser is x = (x0 − ηa·v)/c with c = 1 + ηα + λ, a ∈ ∂ℓ at
// s = vᵀx and λ ≥ 0 the ball's multiplier; for fixed c, a solves the
// increasing scalar equation a = ℓ'(s(a)), and ‖x‖ falls as λ grows.
func prox(cost Cost, x0 []float64, ex Example, eta float64, dst []float64) float64 {
	p := prob{cost: cost, ex: ex, eta: eta, vx0: vec.Dot(ex.V, x0), vv: vec.Dot(ex.V, ex.V), x0x0: vec.Dot(x0, x0)}
	c0 := 1 + eta*cost.Alpha
	a := p.score(c0)
	c := c0
	r2 := cost.Radius * cost.Radius
	if p.norm2(a, c0) > r2 {
		lo, hi := c0, 2*c0
		for p.norm2(p.score(hi), hi) > r2 {
			lo, hi = hi, 2*hi
		}
		for range 200 {
			mid := lo + (hi-lo)/2
			if mid == lo || mid == hi {
				break
			}
			if p.norm2(p.score(mid), mid) > r2 {
				lo = mid
			} else {
				hi = mid
			}
		}
		c = hi
		a = p.score(c)
	}
	for j := range dst {
		dst[j] = (x0[j] - eta*a*ex.V[j]) / c
	}
	vec.ProjectBall(dst, cost.Radius)
	return p.certify(x0, dst, a)
}

// prob holds one proximal step's scalars.
type prob struct {
	cost          Cost
	ex            Example
	eta           float64
	vx0, vv, x0x0 float64
}

// s is vᵀx for x = (x0 − ηa·v)/c.
func (p *prob) s(a, c float64) float64 { return (p.vx0 - p.eta*a*p.vv) / c }

// norm2 is ‖(x0 − ηa·v)/c‖².
func (p *prob) norm2(a, c float64) float64 {
	return (p.x0x0 - 2*p.eta*a*p.vx0 + p.eta*p.eta*a*a*p.vv) / (c * c)
}

// score solves a = ℓ'(s(a, c)) by bisection (the left side minus the
// right is non-decreasing in a), to the last bit.
func (p *prob) score(c float64) float64 {
	f := func(a float64) float64 { return a - p.cost.deriv(p.s(a, c), p.ex.Y) }
	lo, hi := -1.0, 1.0
	for f(lo) > 0 {
		lo *= 2
	}
	for f(hi) < 0 {
		hi *= 2
	}
	for range 200 {
		mid := lo + (hi-lo)/2
		if mid == lo || mid == hi {
			break
		}
		if f(mid) < 0 {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo + (hi-lo)/2
}

// certify bounds ‖x − x*‖ by strong convexity: ‖g + n‖/(1+ηα) for the
// gradient g of the step objective at x and the best normal vector n = λx
// of the ball when x is on its boundary. At a hinge kink (y·vᵀx within
// 1e-9 of 1) the bound is taken at the point x' on the kink nearest x,
// plus ‖x − x'‖, with the subgradient a clamped into ∂ℓ there.
func (p *prob) certify(x0, x []float64, a float64) float64 {
	v := p.ex.V
	shift := 0.0
	xs := x
	s := vec.Dot(v, x)
	var d float64
	if p.cost.Loss == Hinge && math.Abs(p.ex.Y*s-1) <= 1e-9 && p.vv > 0 {
		k := (p.ex.Y - s) / p.vv // move to y·vᵀx' = 1
		xs = make([]float64, len(x))
		for j := range x {
			xs[j] = x[j] + k*v[j]
		}
		shift = math.Abs(k) * math.Sqrt(p.vv)
		d = math.Max(-1, math.Min(0, a*p.ex.Y)) * p.ex.Y // a clamped into ∂ℓ = y·[−1, 0]
	} else {
		d = p.cost.deriv(s, p.ex.Y)
	}
	mu := 1 + p.eta*p.cost.Alpha
	g := make([]float64, len(x))
	var gx, xx float64
	for j := range g {
		g[j] = xs[j] - x0[j] + p.eta*(d*v[j]+p.cost.Alpha*xs[j])
		gx += g[j] * xs[j]
		xx += xs[j] * xs[j]
	}
	if r := p.cost.Radius; math.Sqrt(xx) >= r*(1-1e-12) && gx < 0 {
		lam := -gx / xx // the normal vector λx closest to −g
		for j := range g {
			g[j] += lam * xs[j]
		}
	}
	return shift + vec.Norm(g)/mu
}
