package mech

import (
	"errors"
	"fmt"
	"math"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/rng"
)

// Gaussian is the Gaussian mechanism on a grid, built from the exact
// discrete Gaussian sampler (Canonne, Kamath, Steinke 2020, Algorithm 3).
//
// Neighbouring relation: any two datasets whose query values satisfy
// |x − x'| ≤ Δ (L2 sensitivity Δ of a scalar query).
//
// Release: with g the power of two below min(Δ, σ)/4096, the input is
// rounded to k = round(x/g) and g·(k + Y) is released, Y an exact discrete
// Gaussian with variance σ_g² ≥ (σ/g)², where σ is calibrated for the
// rounded sensitivity K·g, K = ⌊Δ/g⌋+1 (rounding moves each input by at most
// g/2). σ_g² is rounded up to t·m with t = ⌈σ/g⌉ so the sampler's
// arithmetic stays in uint64.
//
// Guarantee: (ε, δ)-DP. σ is calibrated for the continuous Gaussian
// (analytic: Balle & Wang 2018, Theorem 8; classic: Dwork & Roth 2014,
// Theorem A.1, which needs ε < 1). The construction then evaluates the exact
// δ of the discrete Gaussian actually used (CKS 2020, Theorem 7; see
// DiscreteGaussianDelta) and widens σ_g until it is ≤ δ, so the stated
// (ε, δ) holds for the released values, not just for the continuous model.
// Construction costs at most a few 10^4 exponentials.
type Gaussian struct {
	name             string
	eps, delta, sens float64
	g                float64
	dg               dgauss
	sigma            float64 // actual noise σ in input units
}

// NewGaussian returns the analytically calibrated Gaussian mechanism
// (Balle & Wang 2018): the smallest σ with
// Φ(Δ/2σ − εσ/Δ) − e^ε Φ(−Δ/2σ − εσ/Δ) ≤ δ. Any ε > 0 and 0 < δ < 1.
func NewGaussian(eps, delta, l2sens float64) (*Gaussian, error) {
	return newGaussian("gaussian-analytic", eps, delta, l2sens, AnalyticGaussianSigma)
}

// NewClassicGaussian returns the classic Gaussian mechanism,
// σ = Δ·√(2 ln(1.25/δ))/ε, valid only for ε < 1 (Dwork & Roth 2014, Thm A.1).
func NewClassicGaussian(eps, delta, l2sens float64) (*Gaussian, error) {
	return newGaussian("gaussian-classic", eps, delta, l2sens, ClassicGaussianSigma)
}

func newGaussian(name string, eps, delta, sens float64, calib func(eps, delta, sens float64) (float64, error)) (*Gaussian, error) {
	sigma0, err := calib(eps, delta, sens)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	g, err := granularity(min(sens, sigma0))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	g = coarsen(g, sigma0)
	k, err := gridSensitivity(sens, g)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	sigma, err := calib(eps, delta, float64(k)*g)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	dg, err := gridGaussian(sigma / g)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if dg, err = meetDelta(dg, eps, delta, k); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &Gaussian{name: name, eps: eps, delta: delta, sens: sens, g: g, dg: dg,
		sigma: g * math.Sqrt(float64(dg.t)*float64(dg.m))}, nil
}

// maxSigmaSteps caps the noise σ in grid steps so that the discrete
// Gaussian's integers stay in uint64 (gridGaussian accepts up to 2^30).
const maxSigmaSteps = 1 << 28

// coarsen enlarges the grid step g when σ would exceed maxSigmaSteps grid
// steps (σ ≫ Δ, i.e. tiny ε); the rounding then costs more than 1/4096 of
// Δ but stays below Δ·σ/2^28.
func coarsen(g, sigma float64) float64 {
	if sigma/g > maxSigmaSteps {
		return pow2Floor(sigma / maxSigmaSteps)
	}
	return g
}

// gridGaussian returns the discrete Gaussian sampler with variance t·m ≥ s²,
// t = ⌈s⌉, so that σ²/t = m is an integer (see dgauss).
func gridGaussian(s float64) (dgauss, error) {
	if !(s >= 1) || s > 1<<30 {
		return dgauss{}, fmt.Errorf("noise scale %v grid steps out of range [1, 2^30]", s)
	}
	t := math.Ceil(s)
	m := math.Ceil(s * s / t * (1 + 1e-12))
	return newDGaussInt(uint64(t), uint64(m)), nil
}

// meetDelta checks the exact δ of the discrete Gaussian in grid steps for
// shift k (DiscreteGaussianDelta) and, should it exceed the target, widens
// the variance by 0.1 % steps until it does not.
func meetDelta(dg dgauss, eps, delta float64, k uint64) (dgauss, error) {
	for range 100 {
		if DiscreteGaussianDelta(eps, float64(dg.t)*float64(dg.m), k) <= delta {
			return dg, nil
		}
		dg = newDGaussInt(dg.t, uint64(math.Ceil(float64(dg.m)*1.001)))
	}
	return dgauss{}, fmt.Errorf("discrete Gaussian cannot meet delta %v", delta)
}

// DiscreteGaussianDelta is the exact δ(ε) of adding discrete Gaussian noise
// with variance parameter s2 to an integer query of sensitivity k
// (Canonne, Kamath, Steinke 2020, Theorem 7):
// δ = P[Y > εσ²/k − k/2] − e^ε·P[Y > εσ²/k + k/2], Y ~ N_ℤ(0, σ²). The
// tails are summed term by term (until the terms drop below 1e-18 of the
// sum) for σ ≤ 2^12 and by the Euler–Maclaurin formula beyond, with the
// normaliser from Poisson
// summation (√(2π)σ·(1 + 2e^{−2π²σ²}), exact to double precision for σ ≥ 1).
// Its cost is at most a few·2^12 exponentials.
func DiscreteGaussianDelta(eps, s2 float64, k uint64) float64 {
	a := eps*s2/float64(k) - float64(k)/2
	b := a + float64(k)
	d := dgTail(s2, a)
	if tb := dgTail(s2, b); tb > 0 {
		d -= math.Exp(eps) * tb
	}
	return max(d, 0)
}

// dgTail is P[Y > a] for Y ~ N_ℤ(0, s2), s2 ≥ 1.
func dgTail(s2, a float64) float64 {
	c := math.Floor(a) + 1 // P[Y > a] = P[Y ≥ c]
	if c <= 0 {
		return 1 - dgTailGE(s2, 1-c) // P[Y ≥ c] = 1 − P[Y ≥ 1 − c] by symmetry
	}
	return dgTailGE(s2, c)
}

// dgTailGE is P[Y ≥ c] for integer c ≥ 1: a direct sum for σ ≤ 2^12,
// else the Euler–Maclaurin formula.
func dgTailGE(s2, c float64) float64 {
	sigma := math.Sqrt(s2)
	z := math.Sqrt(2*math.Pi) * sigma * (1 + 2*math.Exp(-2*math.Pi*math.Pi*s2))
	if sigma > 1<<12 {
		return dgTailEM(s2, c) / z
	}
	var sum float64
	for x := c; x <= c+14*sigma+1; x++ {
		term := math.Exp(-x * x / (2 * s2))
		sum += term
		if term < 1e-18*sum {
			break // the rest of the tail is below double precision
		}
	}
	return sum / z
}

// dgTailEM is Σ_{x ≥ c} f(x), f(x) = exp(−x²/(2σ²)), by the Euler–Maclaurin
// formula ∫_c^∞ f + f(c)/2 − f′(c)/12 + f‴(c)/720. The next term is of order
// f(c)·(c/σ²)^5, below 1e-15 of the sum for σ > 2^12.
func dgTailEM(s2, c float64) float64 {
	sigma := math.Sqrt(s2)
	f := math.Exp(-c * c / (2 * s2))
	u := c / s2
	d1 := -u * f               // f′(c)
	d3 := (3*u/s2 - u*u*u) * f // f‴(c)
	integral := sigma * math.Sqrt(math.Pi/2) * math.Erfc(c/(sigma*math.Sqrt2))
	return integral + f/2 - d1/12 + d3/720
}

// Release returns the noisy value of x; it errors on NaN, ±Inf or |x|
// beyond 2^61 grid steps.
func (m *Gaussian) Release(r *rng.Rand, x float64) (float64, error) {
	k, err := toGrid(x, m.g)
	if err != nil {
		return 0, fmt.Errorf("%s release: %w", m.name, err)
	}
	return m.g * float64(addSat(k, m.dg.sample(r))), nil
}

// Sigma is the standard-deviation parameter of the released noise in input
// units (slightly above the calibrated σ, see the type's doc).
func (m *Gaussian) Sigma() float64 { return m.sigma }

// Granularity is the grid step g of the released values.
func (m *Gaussian) Granularity() float64 { return m.g }

// Loss is the ledger entry of one release: (ε, δ)-DP.
func (m *Gaussian) Loss() account.Loss {
	l := account.Approx(m.name, m.eps, m.delta)
	l.Params = map[string]float64{"sensitivity": m.sens, "sigma": m.sigma, "granularity": m.g}
	return l
}

func validateGaussian(eps, delta, sens float64) error {
	if err := account.ValidateEpsilon(eps); err != nil {
		return err
	}
	if err := account.ValidateDelta(delta); err != nil {
		return err
	}
	if delta == 0 {
		return errors.New("the Gaussian mechanism needs delta > 0")
	}
	return validateSensitivity("l2 sensitivity", sens)
}

// ClassicGaussianSigma is σ = Δ·√(2 ln(1.25/δ))/ε (Dwork & Roth 2014,
// Theorem A.1), which needs ε < 1.
func ClassicGaussianSigma(eps, delta, sens float64) (float64, error) {
	if err := validateGaussian(eps, delta, sens); err != nil {
		return 0, err
	}
	if eps >= 1 {
		return 0, fmt.Errorf("the classic Gaussian calibration needs epsilon < 1, got %v", eps)
	}
	return sens * math.Sqrt(2*math.Log(1.25/delta)) / eps, nil
}

// AnalyticGaussianSigma is the smallest σ for which the Gaussian mechanism
// with L2 sensitivity Δ is (ε, δ)-DP (Balle & Wang 2018, Theorem 8), found
// by bisection on AnalyticGaussianDelta to a relative precision of 1e-14.
func AnalyticGaussianSigma(eps, delta, sens float64) (float64, error) {
	if err := validateGaussian(eps, delta, sens); err != nil {
		return 0, err
	}
	lo, hi := 1.0, 1.0 // σ/Δ
	for AnalyticGaussianDelta(eps, hi) > delta {
		hi *= 2
		if hi > 1e300 {
			return 0, fmt.Errorf("no sigma achieves delta %v at epsilon %v", delta, eps)
		}
	}
	for AnalyticGaussianDelta(eps, lo) <= delta {
		lo /= 2
		if lo < 1e-300 {
			return 0, fmt.Errorf("no sigma achieves delta %v at epsilon %v", delta, eps)
		}
	}
	return bisectFeasible(lo, hi, 1e-14, func(s float64) bool { return AnalyticGaussianDelta(eps, s) <= delta }) * sens, nil
}

// bisectFeasible narrows [lo, hi], hi feasible and lo not, to relative
// width rel and returns the feasible end hi (feasibility monotone in x).
func bisectFeasible(lo, hi, rel float64, feasible func(x float64) bool) float64 {
	for hi-lo > rel*hi {
		mid := lo + (hi-lo)/2
		if feasible(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// AnalyticGaussianDelta is the exact δ(ε) of the Gaussian mechanism with
// noise σ = s·Δ (Balle & Wang 2018, Theorem 8):
// Φ(1/(2s) − εs) − e^ε Φ(−1/(2s) − εs).
func AnalyticGaussianDelta(eps, s float64) float64 {
	a := 1/(2*s) - eps*s
	b := -1/(2*s) - eps*s
	return math.Exp(logPhi(a)) - math.Exp(eps+logPhi(b))
}

// GaussianEpsilon is the exact ε(δ) of μ-GDP (Dong, Roth, Su 2022,
// Cor. 2.13), i.e. of the Gaussian mechanism with σ = Δ/μ: the smallest
// ε ≥ 0 with AnalyticGaussianDelta(ε, 1/μ) ≤ δ, found by bisection to a
// relative precision of 1e-12 and rounded up. A sequence of Gaussian
// releases whose means move by Δ_i under noise σ_i is μ-GDP with
// μ² = Σ (Δ_i/σ_i)², so this is the tight figure for a whole run.
func GaussianEpsilon(mu, delta float64) (float64, error) {
	if !(mu > 0) || math.IsInf(mu, 0) {
		return 0, fmt.Errorf("gaussian epsilon: mu must be finite and > 0, got %v", mu)
	}
	if !(delta > 0 && delta < 1) {
		return 0, fmt.Errorf("gaussian epsilon: delta must satisfy 0 < delta < 1, got %v", delta)
	}
	s := 1 / mu
	if AnalyticGaussianDelta(0, s) <= delta {
		return 0, nil
	}
	lo, hi := 0.0, 1.0
	for AnalyticGaussianDelta(hi, s) > delta {
		lo, hi = hi, 2*hi
		if hi > 1e6 {
			return 0, fmt.Errorf("gaussian epsilon: no epsilon below %v reaches delta %v at mu %v", hi, delta, mu)
		}
	}
	return bisectFeasible(lo, hi, 1e-12, func(e float64) bool { return AnalyticGaussianDelta(e, s) <= delta }), nil
}

// logPhi is log Φ(x) for the standard normal CDF, accurate in the far left
// tail (asymptotic series below −30, where erfc underflows).
func logPhi(x float64) float64 {
	if x > -30 {
		return math.Log(0.5 * math.Erfc(-x/math.Sqrt2))
	}
	x2 := x * x
	series := 1 - 1/x2 + 3/(x2*x2) - 15/(x2*x2*x2)
	return -x2/2 - math.Log(-x) - 0.5*math.Log(2*math.Pi) + math.Log(series)
}
