package online

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/dpal-dev/dpal/model"
	"github.com/dpal-dev/dpal/vec"
)

// Example is one record: features v and target y (±1 for the
// classification losses, a real number for the squared loss).
type Example struct {
	V []float64
	Y float64
}

// LossKind names the loss ℓ of a cost.
type LossKind string

// The supported losses.
const (
	Logistic LossKind = "logistic" // ln(1 + e^{−y vᵀx})
	Hinge    LossKind = "hinge"    // max(0, 1 − y vᵀx)
	Squared  LossKind = "squared"  // ½(y − vᵀx)², eq. (3)
)

// ParseLoss accepts "logistic", "hinge" or "squared".
func ParseLoss(s string) (LossKind, error) {
	switch k := LossKind(s); k {
	case Logistic, Hinge, Squared:
		return k, nil
	}
	return "", fmt.Errorf("unknown loss %q (want logistic, hinge or squared)", s)
}

// Cost is the family f_t(x) = ℓ(x; v_t, y_t) + (α/2)‖x‖² on the ball C of
// radius Radius, with the declared bounds every record must meet.
type Cost struct {
	Loss LossKind `json:"loss"`
	// Dim is the dimension d of v and x.
	Dim int `json:"dim"`
	// FeatureBound is R ≥ ‖v‖₂.
	FeatureBound float64 `json:"feature_bound"`
	// LabelBound is B ≥ |y| (squared loss only; the classification losses
	// need y = ±1).
	LabelBound float64 `json:"label_bound,omitempty"`
	// Alpha is the strong-convexity modulus α > 0 of the regulariser.
	Alpha float64 `json:"alpha"`
	// Radius is r, the radius of C (+Inf allowed for FTL only).
	Radius float64 `json:"-"`
}

// MarshalJSON writes the cost with an unbounded radius as null (JSON has
// no infinity).
func (c Cost) MarshalJSON() ([]byte, error) {
	type plain Cost
	out := struct {
		plain
		Radius *float64 `json:"radius"`
	}{plain: plain(c)}
	if !math.IsInf(c.Radius, 1) {
		out.Radius = &c.Radius
	}
	return json.Marshal(out)
}

// Validate checks the declared parameters.
func (c Cost) Validate() error {
	if _, err := ParseLoss(string(c.Loss)); err != nil {
		return err
	}
	switch {
	case c.Dim < 1:
		return fmt.Errorf("cost: dimension must be >= 1, got %d", c.Dim)
	case !(c.FeatureBound > 0) || math.IsInf(c.FeatureBound, 0):
		return fmt.Errorf("cost: feature bound R must be finite and > 0, got %v", c.FeatureBound)
	case !(c.Alpha > 0) || math.IsInf(c.Alpha, 0):
		return fmt.Errorf("cost: alpha must be finite and > 0, got %v", c.Alpha)
	case !(c.Radius > 0):
		return fmt.Errorf("cost: radius must be > 0, got %v", c.Radius)
	case c.Loss == Squared && (!(c.LabelBound > 0) || math.IsInf(c.LabelBound, 0)):
		return fmt.Errorf("cost: the squared loss needs a finite label bound > 0, got %v", c.LabelBound)
	}
	return nil
}

// bounded reports an error unless C is a bounded ball (spec N10: strong
// convexity and a global Lipschitz bound need a bounded C).
func (c Cost) bounded(alg string) error {
	if math.IsInf(c.Radius, 0) {
		return fmt.Errorf("%s needs a bounded set C (finite radius)", alg)
	}
	return nil
}

// Check validates record t (1-based) against the declared bounds.
func (c Cost) Check(t int, ex Example) error {
	if len(ex.V) != c.Dim {
		return fmt.Errorf("record %d: dimension %d, want %d", t, len(ex.V), c.Dim)
	}
	n, bad := vec.FiniteNorm(ex.V)
	if bad >= 0 {
		return fmt.Errorf("record %d: feature %d is %v", t, bad, ex.V[bad])
	}
	if n > c.FeatureBound {
		return fmt.Errorf("record %d: ‖v‖ = %v is above the declared bound R = %v", t, n, c.FeatureBound)
	}
	switch {
	case math.IsNaN(ex.Y) || math.IsInf(ex.Y, 0):
		return fmt.Errorf("record %d: target is %v", t, ex.Y)
	case c.Loss == Squared && math.Abs(ex.Y) > c.LabelBound:
		return fmt.Errorf("record %d: |y| = %v is above the declared bound %v", t, math.Abs(ex.Y), c.LabelBound)
	case c.Loss != Squared && ex.Y != 1 && ex.Y != -1:
		return fmt.Errorf("record %d: label %v is not ±1", t, ex.Y)
	}
	return nil
}

// margin returns the model.Loss of a classification loss.
func (c Cost) margin() model.Loss {
	if c.Loss == Hinge {
		return model.Hinge{}
	}
	return model.Logistic{}
}

// Value is f(x) = ℓ(x; v, y) + (α/2)‖x‖².
func (c Cost) Value(x []float64, ex Example) float64 {
	return c.LossValue(x, ex) + c.Alpha/2*vec.Dot(x, x)
}

// LossValue is ℓ(x; v, y) alone, without the regulariser.
func (c Cost) LossValue(x []float64, ex Example) float64 {
	s := vec.Dot(ex.V, x)
	if c.Loss == Squared {
		return (ex.Y - s) * (ex.Y - s) / 2
	}
	return c.margin().Value(ex.Y * s)
}

// deriv is dℓ/ds at score s = vᵀx, so ∇ℓ = deriv·v.
func (c Cost) deriv(s, y float64) float64 {
	if c.Loss == Squared {
		return s - y
	}
	return c.margin().Deriv(y*s) * y
}

// Gradient writes ∇f(x) = ℓ'·v + αx into dst.
func (c Cost) Gradient(dst, x []float64, ex Example) {
	d := c.deriv(vec.Dot(ex.V, x), ex.Y)
	for j := range dst {
		dst[j] = d*ex.V[j] + c.Alpha*x[j]
	}
}

// derivBound bounds |dℓ/ds| over C: 1 for the margin losses, B + R·r for
// the squared loss.
func (c Cost) derivBound() float64 {
	if c.Loss == Squared {
		return c.LabelBound + c.FeatureBound*c.Radius
	}
	return 1
}

// Lipschitz is L, the Lipschitz constant of f_t on C including the
// regulariser (spec N10): R·sup|ℓ'| + α·r. It is also G, the bound on
// ‖∇f_t‖ over C that GIGA needs.
func (c Cost) Lipschitz() float64 {
	return c.FeatureBound*c.derivBound() + c.Alpha*c.Radius
}

// Smoothness is L_G, the Lipschitz constant of ∇f_t: R²·sup ℓ” + α, with
// sup ℓ” = 1/4 (logistic) or 1 (squared). The hinge loss has none.
func (c Cost) Smoothness() (float64, error) {
	switch c.Loss {
	case Logistic:
		return c.FeatureBound*c.FeatureBound/4 + c.Alpha, nil
	case Squared:
		return c.FeatureBound*c.FeatureBound + c.Alpha, nil
	}
	return 0, errors.New("the hinge loss is not differentiable: GIGA needs a smooth loss (logistic or squared)")
}
