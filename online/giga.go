package online

import (
	"fmt"
	"math"

	"github.com/dpal-dev/dpal/vec"
)

// GIGA is projected online gradient descent (Zinkevich 2003) as private
// GIGA (Algorithm 3) runs it: η_t = 2/(αt), x_{t+1} = Π_C(x_t − η_t∇f_t(x_t)),
// after a burn-in of t_q = ⌈2L_G²/α²⌉ + 1 data-independent iterates
// x_1 = … = x_{t_q} = 0 (spec N9, N13: the records of the burn-in rounds
// are paid for but not used).
//
// Sensitivity (Lemma 5, corrected, spec N9): a replaced cost at round τ
// moves x_{τ+1} by η_τ·‖∇f_τ − ∇f'_τ‖ ≤ (2/(ατ))·2G = 4G/(ατ), and later
// rounds contract once τ ≥ 2L_G²/α², so λ_GIGA = 4G/α, twice the paper's
// 2G/α. G bounds ‖∇f_t‖ on C (Cost.Lipschitz) and L_G is the smoothness of
// f_t (Cost.Smoothness); the loss must be differentiable.
type GIGA struct {
	cost   Cost
	burnIn int // t_q − 1: rounds whose update keeps x = 0
	x, g   []float64
}

// NewGIGA returns GIGA on cost (logistic or squared loss).
func NewGIGA(cost Cost) (*GIGA, error) {
	if err := cost.Validate(); err != nil {
		return nil, fmt.Errorf("giga: %w", err)
	}
	if err := cost.bounded("giga"); err != nil {
		return nil, err
	}
	lg, err := cost.Smoothness()
	if err != nil {
		return nil, fmt.Errorf("giga: %w", err)
	}
	tq := int(math.Ceil(2*lg*lg/(cost.Alpha*cost.Alpha))) + 1
	return &GIGA{cost: cost, burnIn: tq - 1, x: make([]float64, cost.Dim), g: make([]float64, cost.Dim)}, nil
}

// Name returns "giga".
func (a *GIGA) Name() string { return "giga" }

// Cost is the cost family.
func (a *GIGA) Cost() Cost { return a.cost }

// Warmup is t_q − 1: updates at rounds t < t_q leave x = 0.
func (a *GIGA) Warmup() int { return a.burnIn }

// Stability is the corrected λ_GIGA = 4G/α.
func (a *GIGA) Stability() float64 { return 4 * a.cost.Lipschitz() / a.cost.Alpha }

// PaperStability is Lemma 5's 2G/α, half the true value (spec N9).
func (a *GIGA) PaperStability() float64 { return 2 * a.cost.Lipschitz() / a.cost.Alpha }

// Point is the current iterate x_t.
func (a *GIGA) Point() []float64 { return a.x }

// Update takes the gradient step on f_t and returns x_{t+1}; during the
// burn-in it returns the data-independent x = 0.
func (a *GIGA) Update(t int, ex Example) ([]float64, error) {
	if err := a.cost.Check(t, ex); err != nil {
		return nil, err
	}
	if t <= a.burnIn {
		return a.x, nil
	}
	eta := 2 / (a.cost.Alpha * float64(t))
	a.cost.Gradient(a.g, a.x, ex)
	for j := range a.x {
		a.x[j] -= eta * a.g[j]
	}
	vec.ProjectBall(a.x, a.cost.Radius)
	return a.x, nil
}
