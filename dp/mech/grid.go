package mech

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
)

// gridSteps is how many grid points the mechanisms place inside the smaller
// of the sensitivity and the noise scale. Rounding the input to a grid of
// step g moves it by at most g/2, so two neighbouring inputs can differ by
// ⌊Δ/g⌋+1 grid steps; with about 4096 steps per Δ that costs ≈ 0.025 % more
// noise while keeping the stated ε exact.
const gridSteps = 4096

// maxGridIndex bounds |x/g| so that grid indices plus noise stay in int64.
const maxGridIndex = 1 << 61

// pow2Floor returns the largest power of two ≤ x, for finite x > 0.
func pow2Floor(x float64) float64 {
	_, e := math.Frexp(x)
	return math.Ldexp(1, e-1)
}

// granularity picks the power-of-two grid step for a mechanism whose
// sensitivity and noise scale are both at least base.
func granularity(base float64) (float64, error) {
	g := pow2Floor(base / gridSteps)
	if !(g > 0) || math.IsInf(g, 0) {
		return 0, fmt.Errorf("sensitivity/scale %v out of the representable range", base)
	}
	return g, nil
}

// gridSensitivity is the sensitivity in grid steps after rounding inputs to
// the grid: |round(x/g) − round(x'/g)| ≤ |x−x'|/g + 1, an integer.
// It errors beyond 2^40 steps, which only an absurd ε (> 2^28) can cause.
func gridSensitivity(sens, g float64) (uint64, error) {
	steps := math.Floor(sens / g)
	if !(steps < 1<<40) {
		return 0, fmt.Errorf("sensitivity %v is %v grid steps of %v: epsilon too large", sens, steps, g)
	}
	return uint64(steps) + 1, nil
}

// toGrid returns round(x/g), rejecting NaN, ±Inf and values too large for
// the integer arithmetic.
func toGrid(x, g float64) (int64, error) {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0, fmt.Errorf("input %v is not finite", x)
	}
	q := math.Round(x / g)
	if math.Abs(q) > maxGridIndex {
		return 0, fmt.Errorf("input %v exceeds the mechanism's range (±%g)", x, maxGridIndex*g)
	}
	return int64(q), nil
}

// addSat adds with saturation at ±MaxInt64; saturation needs noise of
// magnitude > 2^62 grid steps, which no released value can reach in
// practice, and it is post-processing in any case.
func addSat(a, b int64) int64 {
	s := a + b
	if (a > 0 && b > 0 && s < 0) || (a < 0 && b < 0 && s >= 0) {
		if a > 0 {
			return math.MaxInt64
		}
		return math.MinInt64
	}
	return s
}

// errEpsilonRange reports an ε whose rational form does not fit.
var errEpsilonRange = errors.New("epsilon out of the range the exact samplers support")

// rationalScale returns integers t, s with t/s = mult/ε', where ε' ≤ ε is ε
// truncated to a dyadic rational a/2^k of at most 30 significant bits and
// t = mult·2^k < 2^62. Calibrating to ε' ≤ ε adds at most a 2^-20 relative
// amount of noise and keeps the guarantee at the stated ε.
func rationalScale(eps float64, mult uint64) (t, s uint64, err error) {
	_, e := math.Frexp(eps) // eps < 2^e
	k := min(62-bits.Len64(mult), 30-e)
	if k < 0 {
		k = 0
	}
	a := math.Floor(math.Ldexp(eps, k))
	if a < 1<<20 {
		return 0, 0, fmt.Errorf("%w: epsilon %v too small for %d grid steps of sensitivity", errEpsilonRange, eps, mult)
	}
	if a >= 1<<62 {
		return 0, 0, fmt.Errorf("%w: epsilon %v too large", errEpsilonRange, eps)
	}
	return mult << uint(k), uint64(a), nil
}

// validateSensitivity accepts finite sensitivities > 0.
func validateSensitivity(name string, sens float64) error {
	if !(sens > 0) || math.IsInf(sens, 0) {
		return fmt.Errorf("%s must be finite and > 0, got %v", name, sens)
	}
	return nil
}
