package account

import (
	"errors"
	"fmt"
	"math"
)

// pldCalibrationTol is the relative width at which the coarse stage of a
// PLD calibration stops.
const pldCalibrationTol = 1e-6

// pldCoarse is how much coarser the grid of a calibration's first stage
// is. On a grid whose points are every pldCoarse-th of the fine one, the
// connect-the-dots pair is a further split of the fine one's, so it
// dominates it and certifies a larger ε: what the coarse stage finds
// feasible is feasible on the fine grid too, and the fine stage has only
// the last step to go.
const pldCoarse = 10

// CalibrateNoisePLD returns a noise multiplier σ, always on the safe side
// and within about 1e-5 (relative) of the smallest, for which the phases, sharing
// σ, stay within target by the PLD accountant's certified ε, with the
// guarantee reached (and its lower bound). See calibratePLD for the search.
func CalibrateNoisePLD(target Budget, phases []Phase, opt PLDOptions) (float64, PLDResult, error) {
	return calibrateNoisePLD(target, phases, opt, addRemoveCurve, PhaseTerms)
}

// CalibrateNoisePLDReplace is CalibrateNoisePLD under the replace-one
// relation (terms PhaseTermsReplace, started from
// CalibrateNoiseScheduleReplace's σ).
func CalibrateNoisePLDReplace(target Budget, phases []Phase, opt PLDOptions) (float64, PLDResult, error) {
	return calibrateNoisePLD(target, phases, opt, replaceCurve, PhaseTermsReplace)
}

func calibrateNoisePLD(target Budget, phases []Phase, opt PLDOptions, curve curveFunc, terms func([]Phase) ([]PLDTerm, error)) (float64, PLDResult, error) {
	at := func(sigma float64) []Phase { return withNoise(phases, sigma) }
	if err := validatePhases(at(1)); err != nil {
		return 0, PLDResult{}, err
	}
	if !spends(phases) {
		return 0, PLDResult{}, errors.New("noise calibration: no phase samples any record, so no noise is needed")
	}
	x0, _, err := calibrateNoise(target, phases, Options{}, curve)
	if err != nil {
		x0 = 1
	}
	x, res, err := calibratePLD(target, opt, searchSpace{at: at, terms: terms, min: 1e-3, max: pldMaxSigma}, x0)
	if err != nil {
		return 0, PLDResult{}, fmt.Errorf("noise calibration: %w", err)
	}
	return x, res, nil
}

// CalibrateSampleRatePLD returns a Poisson sampling rate q, always on the
// safe side and within about 1e-5 (relative) of the largest, for which steps steps
// with noise multiplier sigma stay within target by the PLD accountant's
// certified ε, with the guarantee reached (and its lower bound).
func CalibrateSampleRatePLD(target Budget, sigma float64, steps int, opt PLDOptions) (float64, PLDResult, error) {
	at := func(q float64) []Phase { return []Phase{{SampleRate: q, NoiseMultiplier: sigma, Steps: steps}} }
	if err := validatePhases(at(1)); err != nil {
		return 0, PLDResult{}, err
	}
	x0, _, err := CalibrateSampleRate(target, sigma, steps, Options{})
	if err != nil || !(x0 > 0) {
		x0 = 0.5
	}
	x, res, err := calibratePLD(target, opt, searchSpace{at: at, terms: PhaseTerms, rising: true, min: 1e-12, max: 1}, x0)
	if err != nil {
		return 0, PLDResult{}, fmt.Errorf("sample-rate calibration: %w", err)
	}
	return x, res, nil
}

// searchSpace is a parameter x in [min, max] of a schedule, on which the
// certified ε is monotone: rising with x, or falling. terms names the
// schedule's PLD terms (PhaseTerms or PhaseTermsReplace).
type searchSpace struct {
	at       func(x float64) []Phase
	terms    func([]Phase) ([]PLDTerm, error)
	rising   bool
	min, max float64
}

// calibratePLD returns the feasible x nearest the boundary. The search
// runs on a grid pldCoarse times coarser, bracketing from x0 (the RDP
// accountant's answer, feasible or nearly) by factors of 1.25 and closing
// in by regula falsi; what it finds is feasible on the fine grid too. One
// secant step on the fine grid, along the coarse slope, then takes most of
// the little that is left: full PLD compositions on the fine grid are the
// cost, and this needs two. Where the coarse stage fails (a target only
// the fine grid meets) the search runs on the fine grid.
func calibratePLD(target Budget, opt PLDOptions, sp searchSpace, x0 float64) (float64, PLDResult, error) {
	if err := target.ValidateTarget(); err != nil {
		return 0, PLDResult{}, fmt.Errorf("calibration target: %w", err)
	}
	fine := opt.step()
	if err := validateStep(fine); err != nil {
		return 0, PLDResult{}, err
	}
	x0 = math.Min(math.Max(x0, sp.min), sp.max)
	full := func(x float64) (PLDResult, error) {
		terms, err := sp.terms(sp.at(x))
		if err != nil || len(terms) == 0 {
			return PLDResult{Delta: target.Delta}, err
		}
		return PLDEpsilon(terms, target.Delta, PLDOptions{Step: fine})
	}
	coarse := newPLDSolver(target, math.Min(fine*pldCoarse, pldMaxStep), sp)
	in, out, err := coarse.find(x0, 1.25, pldCalibrationTol)
	if err == nil {
		res, err := full(in)
		if err == nil && res.Epsilon <= target.Epsilon {
			if x, r, ok := coarse.secant(in, out, res, full); ok {
				return x, r, nil
			}
			return in, res, nil
		}
	}
	s := newPLDSolver(target, fine, sp)
	if in, _, err = s.find(x0, 1.25, pldCalibrationTol); err != nil {
		return 0, PLDResult{}, err
	}
	res, err := full(in)
	return in, res, err
}

// secant predicts where the fine grid's ε (res at in) reaches the target,
// along the coarse grid's slope of log ε against log x between in and out,
// and returns a point 95% of the way there if the fine grid finds it
// feasible.
func (s *pldSolver) secant(in, out float64, res PLDResult, full func(float64) (PLDResult, error)) (float64, PLDResult, bool) {
	if math.IsNaN(out) || !(res.Epsilon > 0) {
		return 0, PLDResult{}, false
	}
	// The slope over a baseline of at least 1e-3 in log x: a grid's ε is
	// not smooth at the finest scales.
	ein := s.seen[in]
	other, dist := math.NaN(), math.Inf(1)
	for x, e := range s.seen {
		if d := math.Abs(math.Log(x / in)); d >= 1e-3 && d < dist && !math.IsInf(e, 1) && e > 0 {
			other, dist = x, d
		}
	}
	if math.IsNaN(other) {
		return 0, PLDResult{}, false
	}
	slope := (math.Log(s.seen[other]) - math.Log(ein)) / (math.Log(other) - math.Log(in))
	// 95% of the step: the fine slope differs a little from the coarse
	// one, and landing just short keeps the point feasible.
	x := in * math.Exp(0.95*(math.Log(s.target.Epsilon)-math.Log(res.Epsilon))/slope)
	x = math.Min(math.Max(x, s.sp.min), s.sp.max)
	if x == in || !(slope != 0) {
		return 0, PLDResult{}, false
	}
	r, err := full(x)
	if err != nil || r.Epsilon > s.target.Epsilon {
		return 0, PLDResult{}, false
	}
	return x, r, true
}

// pldSolver evaluates the certified ε (upper grid only) of a search
// space's schedules against a target, remembering every value: each is a
// full PLD composition.
type pldSolver struct {
	target Budget
	opt    PLDOptions
	sp     searchSpace
	seen   map[float64]float64
}

func newPLDSolver(target Budget, step float64, sp searchSpace) *pldSolver {
	return &pldSolver{target: target, opt: PLDOptions{Step: step, upperOnly: true}, sp: sp, seen: map[float64]float64{}}
}

// eps is the certified ε at x; +Inf where no finite ε exists or the
// losses spread too wide for the grid (for the search, an ε that misses
// every target).
func (s *pldSolver) eps(x float64) (float64, error) {
	if e, ok := s.seen[x]; ok {
		return e, nil
	}
	terms, err := s.sp.terms(s.sp.at(x))
	if err != nil {
		return 0, err
	}
	var e float64
	if len(terms) > 0 {
		res, err := PLDEpsilon(terms, s.target.Delta, s.opt)
		switch {
		case errors.Is(err, ErrNoFiniteEpsilon) || errors.Is(err, ErrGridTooLong):
			e = math.Inf(1)
		case err != nil:
			return 0, err
		default:
			e = res.Epsilon
		}
	}
	s.seen[x] = e
	return e, nil
}

func (s *pldSolver) feasible(x float64) (bool, error) {
	e, err := s.eps(x)
	return e <= s.target.Epsilon, err
}

// find brackets the boundary from x0 by factors r and narrows the bracket
// to relative width tol; it returns the feasible end and the infeasible
// one (NaN when the whole range is feasible).
func (s *pldSolver) find(x0, r, tol float64) (in, out float64, err error) {
	in, out, err = s.bracket(x0, r)
	if err != nil {
		return 0, 0, err
	}
	return s.solve(in, out, tol)
}

// move steps x by the factor r towards the infeasible side (worse=true)
// or the feasible one, within [min, max].
func (s *pldSolver) move(x, r float64, worse bool) float64 {
	if worse == s.sp.rising {
		return math.Min(x*r, s.sp.max)
	}
	return math.Max(x/r, s.sp.min)
}

// bracket returns a feasible and an infeasible x a factor r apart.
func (s *pldSolver) bracket(x0, r float64) (in, out float64, err error) {
	x := x0
	ok, err := s.feasible(x)
	if err != nil {
		return 0, 0, err
	}
	for {
		next := s.move(x, r, ok)
		if next == x {
			if ok {
				return x, math.NaN(), nil // feasible up to the end of the range
			}
			return 0, 0, fmt.Errorf("ε=%v at δ=%v is not reached anywhere in [%v, %v]", s.target.Epsilon, s.target.Delta, s.sp.min, s.sp.max)
		}
		nok, err := s.feasible(next)
		if err != nil {
			return 0, 0, err
		}
		if nok != ok {
			if ok {
				return x, next, nil
			}
			return next, x, nil
		}
		x = next
	}
}

// solve narrows [in, out] (feasible, infeasible) to relative width tol by
// regula falsi on log x against log ε (Illinois variant, with a bisection
// every few steps), and returns it.
func (s *pldSolver) solve(in, out, tol float64) (float64, float64, error) {
	if math.IsNaN(out) {
		return in, out, nil
	}
	f := func(x float64) (float64, error) {
		e, err := s.eps(x)
		if math.IsInf(e, 1) {
			return 50, err
		}
		return math.Log(e) - math.Log(s.target.Epsilon), err
	}
	fin, err := f(in)
	if err != nil {
		return 0, 0, err
	}
	fout, err := f(out)
	if err != nil {
		return 0, 0, err
	}
	last := 0
	for i := 0; math.Abs(out-in) > tol*math.Max(in, out); i++ {
		a, b := math.Log(in), math.Log(out)
		m := a - fin*(b-a)/(fout-fin)
		if !(m > math.Min(a, b) && m < math.Max(a, b)) || i%6 == 5 {
			m = (a + b) / 2
		}
		x := math.Exp(m)
		fx, err := f(x)
		if err != nil {
			return 0, 0, err
		}
		if fx <= 0 {
			in, fin = x, fx
			if last == 1 {
				fout /= 2
			}
			last = 1
		} else {
			out, fout = x, fx
			if last == -1 {
				fin /= 2
			}
			last = -1
		}
	}
	return in, out, nil
}
