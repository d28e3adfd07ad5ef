package account

import (
	"errors"
	"fmt"
	"math"
)

// calibrationTol is the relative width at which calibration stops
// bisecting (Opacus stops at 0.01 in ε).
const calibrationTol = 1e-9

// CalibrateNoise returns the smallest noise multiplier σ, to relative
// tolerance 1e-9 and rounded to the safe side, for which steps steps of the
// Poisson subsampled Gaussian with sampling rate q stay within target,
// together with the guarantee actually reached.
func CalibrateNoise(target Budget, q float64, steps int, opt Options) (float64, EpsilonResult, error) {
	return CalibrateNoiseSchedule(target, []Phase{{SampleRate: q, NoiseMultiplier: 1, Steps: steps}}, opt)
}

// CalibrateNoiseSchedule is CalibrateNoise for a schedule of phases that
// share one noise multiplier; the phases' own NoiseMultiplier is ignored.
func CalibrateNoiseSchedule(target Budget, phases []Phase, opt Options) (float64, EpsilonResult, error) {
	return calibrateNoise(target, phases, opt, addRemoveCurve)
}

// CalibrateNoiseScheduleReplace is CalibrateNoiseSchedule under the
// replace-one relation: the smallest shared σ (to relative tolerance 1e-9,
// rounded to the safe side) for which the phases' curve
// ScheduleRDPReplace converts to at most target, with the guarantee
// reached. The same solver, on the replace-one curve.
func CalibrateNoiseScheduleReplace(target Budget, phases []Phase, opt Options) (float64, EpsilonResult, error) {
	return calibrateNoise(target, phases, opt, replaceCurve)
}

func calibrateNoise(target Budget, phases []Phase, opt Options, curve curveFunc) (float64, EpsilonResult, error) {
	at := func(sigma float64) []Phase { return withNoise(phases, sigma) }
	if err := validatePhases(at(1)); err != nil {
		return 0, EpsilonResult{}, err
	}
	s, err := newSolver(target, opt, at, curve)
	if err != nil {
		return 0, EpsilonResult{}, err
	}
	lo, hi, err := s.bracketDown(1, 1e-6, 1e6)
	if err != nil {
		return 0, EpsilonResult{}, fmt.Errorf("noise calibration: %w", err)
	}
	sigma := s.bisect(lo, hi, true)
	return sigma, s.result(sigma), nil
}

// withNoise returns the phases with every noise multiplier set to sigma.
func withNoise(phases []Phase, sigma float64) []Phase {
	out := make([]Phase, len(phases))
	for i, p := range phases {
		p.NoiseMultiplier = sigma
		out[i] = p
	}
	return out
}

// CalibrateSampleRate returns the largest Poisson sampling rate q, to
// relative tolerance 1e-9 and rounded to the safe side, for which steps
// steps with noise multiplier sigma stay within target, with the guarantee
// actually reached.
func CalibrateSampleRate(target Budget, sigma float64, steps int, opt Options) (float64, EpsilonResult, error) {
	at := func(q float64) []Phase { return []Phase{{SampleRate: q, NoiseMultiplier: sigma, Steps: steps}} }
	if err := validatePhases(at(1)); err != nil {
		return 0, EpsilonResult{}, err
	}
	s, err := newSolver(target, opt, at, addRemoveCurve)
	if err != nil {
		return 0, EpsilonResult{}, err
	}
	if s.feasible(1) {
		return 1, s.result(1), nil
	}
	// ε grows with q: feasible points lie below the answer.
	hi := 1.0
	lo := 0.5
	for !s.feasible(lo) {
		hi, lo = lo, lo/2
		if lo < 1e-300 {
			return 0, EpsilonResult{}, fmt.Errorf("sample-rate calibration: no sampling rate reaches ε=%v", target.Epsilon)
		}
	}
	q := s.bisect(lo, hi, false)
	return q, s.result(q), nil
}

// solver bisects a parameter x on which every order's ε is monotone. It
// keeps the orders that can still meet the target: an order whose ε misses
// it at a feasible point misses it at every later point of the bisection,
// which lie on the costlier side of that point, so it is dropped for good.
type solver struct {
	ev     *evaluator
	target float64
	at     func(x float64) []Phase
	curve  curveFunc
	alive  []int
}

func newSolver(target Budget, opt Options, at func(float64) []Phase, curve curveFunc) (*solver, error) {
	if err := target.ValidateTarget(); err != nil {
		return nil, fmt.Errorf("calibration target: %w", err)
	}
	ev, err := newEvaluator(opt, target.Delta)
	if err != nil {
		return nil, err
	}
	s := &solver{ev: ev, target: target.Epsilon, at: at, curve: curve}
	// With no RDP at all, ε is the conversion's own term: the floor no
	// parameter value can go below.
	floor := math.Inf(1)
	for k, a := range ev.orders {
		floor = math.Min(floor, ev.conv.epsilonAt(a, 0, ev.logDelta))
		s.alive = append(s.alive, k)
	}
	if floor >= target.Epsilon {
		return nil, fmt.Errorf("ε=%v is out of reach at δ=%v with these orders (even zero RDP gives ε=%.6g); add larger orders or raise δ",
			target.Epsilon, target.Delta, floor)
	}
	return s, nil
}

// feasible reports whether some order meets the target at x. When x is
// feasible the orders that miss it are dropped, so near the answer only the
// optimal order or two are evaluated.
func (s *solver) feasible(x float64) bool {
	m := s.ev.memo(s.curve(s.at(x)))
	var met []int
	for _, k := range s.alive {
		if m.lowerEps(k) <= s.target && m.eps(k) <= s.target {
			met = append(met, k)
		}
	}
	if len(met) == 0 {
		return false
	}
	s.alive = met
	return true
}

// bracketDown finds lo < hi with hi feasible and lo not, for a parameter
// whose ε falls as it grows, starting at x0 and staying within [min, max].
func (s *solver) bracketDown(x0, min, max float64) (lo, hi float64, err error) {
	if s.feasible(x0) {
		hi, lo = x0, x0/2
		for s.feasible(lo) {
			if lo < min {
				return 0, 0, fmt.Errorf("target met at every value down to %v (nothing is spent?)", lo)
			}
			hi, lo = lo, lo/2
		}
		return lo, hi, nil
	}
	lo, hi = x0, 2*x0
	for !s.feasible(hi) {
		if hi > max {
			return 0, 0, fmt.Errorf("target not met even at %v", hi)
		}
		lo, hi = hi, 2*hi
	}
	return lo, hi, nil
}

// bisect narrows [lo, hi] to relative width calibrationTol and returns the
// feasible end: hi when ε falls with x (falling), else lo.
func (s *solver) bisect(lo, hi float64, falling bool) float64 {
	for hi-lo > calibrationTol*hi {
		mid := lo + (hi-lo)/2
		if s.feasible(mid) == falling {
			hi = mid
		} else {
			lo = mid
		}
	}
	if falling {
		return hi
	}
	return lo
}

// result is the full guarantee at x.
func (s *solver) result(x float64) EpsilonResult {
	res := s.ev.best(s.ev.memo(s.curve(s.at(x))))
	warnEdge(&res, s.ev.orders)
	return res
}

// CalibrateZCDP returns the largest ρ, to relative tolerance 1e-9 and
// rounded to the safe side, whose ρ-zCDP loss converts with conv to at most
// target.Epsilon at target.Delta (Loss.EpsilonAt, the conversion the ledger
// applies): the Gaussian mechanism with ℓ2 sensitivity Δ then needs
// noise multiplier z = 1/√(2ρ), σ = zΔ (Bun & Steinke 2016, Prop. 1.6).
func CalibrateZCDP(target Budget, conv Conversion) (float64, error) {
	if err := target.Validate(); err != nil {
		return 0, fmt.Errorf("zcdp calibration: %w", err)
	}
	if target.Delta == 0 {
		return 0, errors.New("zcdp calibration: a zCDP loss needs delta > 0")
	}
	eps := func(rho float64) float64 {
		e, err := ZCDP("calibration", rho).EpsilonAt(target.Delta, conv)
		if err != nil {
			return math.Inf(1)
		}
		return e
	}
	// ε(ρ) is increasing, and ε(ρ) ≥ ρ: ρ = ε is infeasible or exact.
	lo, hi := target.Epsilon, target.Epsilon
	if eps(hi) <= target.Epsilon {
		return hi, nil
	}
	for eps(lo) > target.Epsilon {
		if lo < 1e-300 {
			return 0, fmt.Errorf("zcdp calibration: ε=%v is out of reach at δ=%v", target.Epsilon, target.Delta)
		}
		hi, lo = lo, lo/2
	}
	for hi-lo > calibrationTol*hi {
		if mid := lo + (hi-lo)/2; eps(mid) <= target.Epsilon {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, nil
}
