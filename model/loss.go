// Package model owns dpal's learners' shared pieces: the sign of a linear
// score, the losses of Ghassemi et al. (2016) eq. 2–3 (hinge, and logistic
// as the smooth alternative), and the non-private baselines the papers
// compare to. The vector arithmetic it shares with the data loaders (inner
// product, norm, projection onto a ball) lives in package vec, so that data
// does not depend on model.
package model

import "math"

// Loss is a margin loss ℓ(y⟨w, x⟩) of a linear classifier. Deriv returns
// dℓ/dm at margin m, so the gradient in w of ℓ(y⟨w, x⟩) is Deriv(m)·y·x.
type Loss interface {
	Name() string
	Value(margin float64) float64
	Deriv(margin float64) float64
}

// Hinge is ℓ(m) = max(0, 1 − m) (Ghassemi et al. eq. 2). Its derivative is
// −1[m < 1], which makes u_t = 1[ℓ > 0] of eq. 9 the (negated) derivative.
type Hinge struct{}

// Name returns "hinge".
func (Hinge) Name() string { return "hinge" }

// Value returns max(0, 1 − m).
func (Hinge) Value(m float64) float64 { return math.Max(0, 1-m) }

// Deriv returns −1 when m < 1 and 0 otherwise (the subgradient 0 at m = 1).
func (Hinge) Deriv(m float64) float64 {
	if m < 1 {
		return -1
	}
	return 0
}

// Logistic is ℓ(m) = ln(1 + e^−m); |ℓ'| ≤ 1, so it has the same gradient
// sensitivity as the hinge loss.
type Logistic struct{}

// Name returns "logistic".
func (Logistic) Name() string { return "logistic" }

// Value returns ln(1 + e^−m), computed without overflow.
func (Logistic) Value(m float64) float64 {
	if m > 0 {
		return math.Log1p(math.Exp(-m))
	}
	return -m + math.Log1p(math.Exp(m))
}

// Deriv returns −1/(1 + e^m).
func (Logistic) Deriv(m float64) float64 {
	if m > 0 {
		e := math.Exp(-m)
		return -e / (1 + e)
	}
	return -1 / (1 + math.Exp(m))
}

// LossByName returns the loss called name ("hinge" or "logistic").
func LossByName(name string) (Loss, bool) {
	switch name {
	case "hinge":
		return Hinge{}, true
	case "logistic":
		return Logistic{}, true
	}
	return nil, false
}

// Sign returns +1 for s ≥ 0 and −1 otherwise: the prediction sgn⟨w, x⟩,
// with ties (including w = 0) broken towards +1.
func Sign(s float64) float64 {
	if s >= 0 {
		return 1
	}
	return -1
}
