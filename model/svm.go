package model

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dpal-dev/dpal/vec"
)

// SVMOptions configures TrainLinearSVM. Zero values select the defaults
// documented on each field.
type SVMOptions struct {
	// Lambda is the L2 regularisation weight λ of the primal objective
	// (λ/2)‖w‖² + (1/n)Σ max(0, 1 − yᵢ⟨w, xᵢ⟩). Zero means λ = 1/n, the
	// usual default cost C = 1 of LIBLINEAR.
	Lambda float64
	// Tol stops the solver once the spread of the projected dual gradient
	// over the active coordinates is at most Tol (Hsieh et al. 2008, §3).
	// Zero means 0.01.
	Tol float64
	// MaxEpochs bounds the number of passes over the data. Zero means 1000.
	MaxEpochs int
	// Seed fixes the coordinate order; the solution does not depend on it
	// beyond the tolerance.
	Seed uint64
}

// Defaults of SVMOptions' zero values.
const (
	defaultSVMTol       = 0.01
	defaultSVMMaxEpochs = 1000
)

// ErrNoData reports an empty training set.
var ErrNoData = errors.New("model: no training examples")

// TrainLinearSVM fits the non-private linear SVM of Ghassemi et al. (2016)
// eq. 3 with the hinge loss of eq. 2: it minimises
//
//	P(w) = (λ/2)‖w‖² + (1/n) Σᵢ max(0, 1 − yᵢ⟨w, xᵢ⟩)
//
// by dual coordinate descent with shrinking (Hsieh, Chang, Lin, Keerthi,
// Sundararajan, ICML 2008, Algorithm 1 and §3), i.e. LIBLINEAR's L1-loss
// SVM with C = 1/(λn). There is no bias term: the classifier is sgn⟨w, x⟩,
// as in the paper. To fit an offset, append a constant feature to every row.
//
// Rows must share one length, be finite, and labels must be ±1.
func TrainLinearSVM(X [][]float64, Y []float64, opt SVMOptions) ([]float64, error) {
	if err := validateLabelled(X, Y); err != nil {
		return nil, err
	}
	n, d := len(X), len(X[0])
	lambda, tol, maxEpochs := opt.Lambda, opt.Tol, opt.MaxEpochs
	if lambda == 0 {
		lambda = 1 / float64(n)
	}
	if tol == 0 {
		tol = defaultSVMTol
	}
	if maxEpochs == 0 {
		maxEpochs = defaultSVMMaxEpochs
	}
	switch {
	case !(lambda > 0) || math.IsInf(lambda, 0):
		return nil, fmt.Errorf("model: SVM lambda %v must be positive and finite", opt.Lambda)
	case !(tol > 0) || math.IsInf(tol, 0):
		return nil, fmt.Errorf("model: SVM tolerance %v must be positive and finite", opt.Tol)
	case maxEpochs < 0:
		return nil, fmt.Errorf("model: SVM max epochs %d must be positive", opt.MaxEpochs)
	}
	s := dcdSolver{X: X, Y: Y, C: 1 / (lambda * float64(n)), w: make([]float64, d)}
	s.run(tol, maxEpochs, rand.New(rand.NewPCG(opt.Seed, 0x5eed)))
	return s.w, nil
}

// dcdSolver holds the state of the dual coordinate descent: the dual
// variables α ∈ [0, C]ⁿ and the primal w = Σ αᵢ yᵢ xᵢ kept in step.
type dcdSolver struct {
	X     [][]float64
	Y     []float64
	C     float64
	w     []float64
	alpha []float64
}

// run performs passes in random order, shrinking coordinates whose dual
// variable sits at a bound with a gradient pushing outwards, until the
// projected-gradient spread is below tol on the full set.
func (s *dcdSolver) run(tol float64, maxEpochs int, r *rand.Rand) {
	n := len(s.X)
	s.alpha = make([]float64, n)
	qii := make([]float64, n)
	active := make([]int, n)
	for i, x := range s.X {
		qii[i] = vec.Dot(x, x)
		active[i] = i
	}
	// pgMaxOld/pgMinOld are the previous pass's projected-gradient extremes,
	// used to decide which bound coordinates to shrink (LIBLINEAR's rule).
	pgMaxOld, pgMinOld := math.Inf(1), math.Inf(-1)
	nActive := n
	for epoch := 0; epoch < maxEpochs; epoch++ {
		r.Shuffle(nActive, func(i, j int) { active[i], active[j] = active[j], active[i] })
		pgMax, pgMin := math.Inf(-1), math.Inf(1)
		for k := 0; k < nActive; k++ {
			i := active[k]
			g := s.Y[i]*vec.Dot(s.w, s.X[i]) - 1
			pg, shrink := projectedGradient(g, s.alpha[i], s.C, pgMaxOld, pgMinOld)
			if shrink {
				nActive--
				active[k], active[nActive] = active[nActive], active[k]
				k--
				continue
			}
			pgMax, pgMin = math.Max(pgMax, pg), math.Min(pgMin, pg)
			if pg != 0 && qii[i] > 0 {
				s.step(i, g/qii[i])
			}
		}
		if pgMax-pgMin <= tol {
			if nActive == n {
				return
			}
			// Converged on the shrunk set: verify on all coordinates.
			nActive, pgMaxOld, pgMinOld = n, math.Inf(1), math.Inf(-1)
			continue
		}
		pgMaxOld, pgMinOld = pgMax, pgMin
		if pgMaxOld <= 0 {
			pgMaxOld = math.Inf(1)
		}
		if pgMinOld >= 0 {
			pgMinOld = math.Inf(-1)
		}
	}
}

// step moves αᵢ by −delta, clipped to [0, C], and updates w to match.
func (s *dcdSolver) step(i int, delta float64) {
	old := s.alpha[i]
	s.alpha[i] = math.Min(math.Max(old-delta, 0), s.C)
	if d := (s.alpha[i] - old) * s.Y[i]; d != 0 {
		for j, v := range s.X[i] {
			s.w[j] += d * v
		}
	}
}

// projectedGradient returns the projected dual gradient of a coordinate
// with gradient g at α ∈ [0, C], and whether the coordinate can be shrunk.
func projectedGradient(g, alpha, c, pgMaxOld, pgMinOld float64) (pg float64, shrink bool) {
	switch {
	case alpha == 0:
		if g > pgMaxOld {
			return 0, true
		}
		return math.Min(g, 0), false
	case alpha == c:
		if g < pgMinOld {
			return 0, true
		}
		return math.Max(g, 0), false
	}
	return g, false
}

// SVMObjective returns the primal objective P(w) that TrainLinearSVM
// minimises, (λ/2)‖w‖² + (1/n)Σ max(0, 1 − yᵢ⟨w, xᵢ⟩).
func SVMObjective(w []float64, X [][]float64, Y []float64, lambda float64) float64 {
	var loss float64
	h := Hinge{}
	for i, x := range X {
		loss += h.Value(Y[i] * vec.Dot(w, x))
	}
	return lambda/2*vec.Dot(w, w) + loss/float64(len(X))
}

// ErrorRate returns the fraction of rows that sgn⟨w, x⟩ (Sign, ties to +1)
// misclassifies, or NaN for an empty set.
func ErrorRate(w []float64, X [][]float64, Y []float64) float64 {
	if len(X) == 0 {
		return math.NaN()
	}
	wrong := 0
	for i, x := range X {
		if Sign(vec.Dot(w, x)) != Y[i] {
			wrong++
		}
	}
	return float64(wrong) / float64(len(X))
}

// validateLabelled checks a labelled training set: non-empty, one row per
// label, rows of one positive length, finite values, labels ±1. Errors name
// the first offending row.
func validateLabelled(X [][]float64, Y []float64) error {
	if len(X) == 0 {
		return ErrNoData
	}
	if len(X) != len(Y) {
		return fmt.Errorf("model: %d rows but %d labels", len(X), len(Y))
	}
	d := len(X[0])
	if d == 0 {
		return fmt.Errorf("model: row 0 has no features")
	}
	for i, x := range X {
		if len(x) != d {
			return fmt.Errorf("model: row %d has %d features, row 0 has %d", i, len(x), d)
		}
		for j, v := range x {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("model: row %d feature %d is %v", i, j, v)
			}
		}
		if Y[i] != 1 && Y[i] != -1 {
			return fmt.Errorf("model: row %d label %v is not ±1", i, Y[i])
		}
	}
	return nil
}
