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
	s, tol, err := newSVMSolver(X, Y, opt)
	if err != nil {
		return nil, err
	}
	s.run(tol)
	return s.w, nil
}

// TrainLinearSVMWithin is TrainLinearSVM run until its solution w is
// provably within dist of the exact minimiser w* of P: it tightens the
// tolerance tenfold, warm-started, until √(2·gap) ≤ dist, where gap is the
// duality gap in LIBLINEAR's scaling P_C = ½‖w‖² + C Σ hinge (C = 1/(λn)),
// D_C(α) = Σ αᵢ − ½‖Σ αᵢyᵢxᵢ‖². P_C is 1-strongly convex with the same
// minimiser as P, and D_C(α) ≤ P_C(w*) (weak duality), so ‖w − w*‖² ≤
// 2(P_C(w) − P_C(w*)) ≤ 2·gap. Rounding in the gap's sums is bounded and
// added. Output perturbation needs this: the sensitivity of w* is proven
// for the exact minimiser, and dist bounds how far the solver's w can
// be from it. It errors when no tolerance down to 1e-14 certifies dist.
func TrainLinearSVMWithin(X [][]float64, Y []float64, opt SVMOptions, dist float64) ([]float64, error) {
	if !(dist > 0) || math.IsInf(dist, 0) {
		return nil, fmt.Errorf("model: SVM distance bound %v must be positive and finite", dist)
	}
	s, tol, err := newSVMSolver(X, Y, opt)
	if err != nil {
		return nil, err
	}
	for {
		s.run(tol)
		b := s.distBound()
		if b <= dist {
			return s.w, nil
		}
		if tol < 1e-14 {
			return nil, fmt.Errorf("model: SVM solution not certified within %v of the minimiser (bound %v)", dist, b)
		}
		tol /= 10
	}
}

// newSVMSolver validates the inputs, applies SVMOptions' defaults and
// returns the solver at α = 0 with the tolerance to run it at.
func newSVMSolver(X [][]float64, Y []float64, opt SVMOptions) (*dcdSolver, float64, error) {
	if err := validateLabelled(X, Y); err != nil {
		return nil, 0, err
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
		return nil, 0, fmt.Errorf("model: SVM lambda %v must be positive and finite", opt.Lambda)
	case !(tol > 0) || math.IsInf(tol, 0):
		return nil, 0, fmt.Errorf("model: SVM tolerance %v must be positive and finite", opt.Tol)
	case maxEpochs < 0:
		return nil, 0, fmt.Errorf("model: SVM max epochs %d must be positive", opt.MaxEpochs)
	}
	return &dcdSolver{X: X, Y: Y, C: 1 / (lambda * float64(n)), w: make([]float64, d),
		maxEpochs: maxEpochs, r: rand.New(rand.NewPCG(opt.Seed, 0x5eed))}, tol, nil
}

// distBound returns √(2·gap) ≥ ‖w − w*‖ (see TrainLinearSVMWithin), with
// Σ αᵢyᵢxᵢ recomputed from α rather than taken from the running w, and
// the sums' rounding error (at most about (n + d)·2⁻⁵³ of their absolute
// terms, all non-negative here) added at 8 times that.
func (s *dcdSolver) distBound() float64 {
	wa := make([]float64, len(s.w))
	var sumAlpha, hinge float64
	h := Hinge{}
	for i, x := range s.X {
		sumAlpha += s.alpha[i]
		for j, v := range x {
			wa[j] += s.alpha[i] * s.Y[i] * v
		}
		hinge += h.Value(s.Y[i] * vec.Dot(s.w, x))
	}
	primal := 0.5*vec.Dot(s.w, s.w) + s.C*hinge
	dual := sumAlpha - 0.5*vec.Dot(wa, wa)
	slack := float64(len(s.X)+len(s.w)+2) * 0x1p-50 * (math.Abs(primal) + math.Abs(dual) + sumAlpha + vec.Dot(wa, wa))
	return math.Sqrt(2 * (math.Max(primal-dual, 0) + slack))
}

// dcdSolver holds the state of the dual coordinate descent: the dual
// variables α ∈ [0, C]ⁿ and the primal w = Σ αᵢ yᵢ xᵢ kept in step.
type dcdSolver struct {
	X     [][]float64
	Y     []float64
	C     float64
	w     []float64
	alpha []float64
	// maxEpochs bounds each run's passes; r orders the coordinates.
	maxEpochs int
	r         *rand.Rand
}

// run performs passes in random order, shrinking coordinates whose dual
// variable sits at a bound with a gradient pushing outwards, until the
// projected-gradient spread is below tol on the full set.
func (s *dcdSolver) run(tol float64) {
	n := len(s.X)
	if s.alpha == nil { // a warm start keeps α and w
		s.alpha = make([]float64, n)
	}
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
	for epoch := 0; epoch < s.maxEpochs; epoch++ {
		s.r.Shuffle(nActive, func(i, j int) { active[i], active[j] = active[j], active[i] })
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
