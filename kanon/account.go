package kanon

import (
	"errors"
	"fmt"
	"math"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
)

// This file is the Li–Qardaji–Su calculator: the (ε, δ) guarantee of
// "sample each record with probability β, then keep only the values that
// occur at least k times in the sample" (safe k-anonymisation by frequency).
//
// Neighbouring relation: add or remove one record (one query occurrence).
// Guarantee (Li, Qardaji & Su 2012, Thm 5; Feyisetan et al. 2019 use it): a
// strongly-safe k-anonymisation run on a Bernoulli(β) sample is (ε, δ)-DP for
// every ε ≥ −ln(1 − β), with
//
//	γ   = (e^ε − 1 + β) / e^ε = 1 − (1 − β)e^{−ε}
//	n_m = ⌈k/γ − 1⌉
//	δ   = max_{n ≥ n_m} Σ_{j > γn}^{n} C(n, j) β^j (1 − β)^{n−j}.
//
// The maximum is not at n = n_m in general: while ⌊γn⌋ stays fixed the
// tail grows with n, so δ is searched over n until the Chernoff bound
// exp(−n·D(γ‖β)), which bounds every later tail, falls below the best value
// found (D is the Bernoulli relative entropy). The tails are summed in log
// space, so δ is accurate far below the float64 underflow of a naive sum.

// ErrNoGuarantee is returned (wrapped) when the requested parameters give
// no (ε, δ) guarantee under Li–Qardaji–Su: β = 1 (no sampling), or an ε
// below −ln(1 − β).
var ErrNoGuarantee = errors.New("no (ε, δ) guarantee")

// Bound is the Li–Qardaji–Su guarantee (Thm 5) of sampling at rate Beta
// then keeping values seen at least K times: (Epsilon, Delta)-DP under
// add/remove of one record.
type Bound struct {
	// Beta is the sampling rate β.
	Beta float64 `json:"beta"`
	// K is the frequency threshold.
	K int `json:"k"`
	// Epsilon is ε.
	Epsilon float64 `json:"epsilon"`
	// Delta is δ (0 when it underflows float64; LogDelta keeps it).
	Delta float64 `json:"delta"`
	// LogDelta is ln δ (−Inf when δ = 0).
	LogDelta float64 `json:"log_delta"`
	// NMin is n_m = ⌈k/γ − 1⌉, the smallest n the maximum runs over.
	NMin int `json:"n_min"`
	// NMax is the n at which the binomial tail peaks.
	NMax int `json:"n_max"`
}

// Loss returns the result as an (ε, δ) Loss for the ledger.
func (r Bound) Loss() account.Loss {
	l := account.Approx("sample-then-k-anonymise", r.Epsilon, r.Delta)
	l.Params = map[string]float64{"beta": r.Beta, "k": float64(r.K)}
	return l
}

// maxScan caps how many n the δ search walks past n_m; it is reached only
// for sampling rates so small that δ is useless anyway.
const maxScan = 50_000_000

// MinEpsilon returns −ln(1 − β), the smallest ε Theorem 5 covers.
func MinEpsilon(beta float64) float64 { return -math.Log1p(-beta) }

// ValidateSampling checks a sampling rate β ∈ (0, 1] and a threshold k ≥ 1.
// β = 1 is a valid rate but has no guarantee (see Delta).
func ValidateSampling(beta float64, k int) error {
	if !(beta > 0 && beta <= 1) {
		return fmt.Errorf("sampling rate beta must satisfy 0 < beta <= 1, got %v", beta)
	}
	if k < 1 {
		return fmt.Errorf("threshold k must be >= 1, got %d", k)
	}
	return nil
}

// checkSampled validates (β, k) and refuses β = 1, which the theorem does
// not cover (every ε would have to be infinite).
func checkSampled(beta float64, k int) error {
	if err := ValidateSampling(beta, k); err != nil {
		return err
	}
	if beta == 1 {
		return fmt.Errorf("beta = 1 (no sampling) needs epsilon >= -ln(1 - beta) = +Inf: %w", ErrNoGuarantee)
	}
	return nil
}

// Delta returns δ (and where it peaks) of sampling at rate β then
// k-anonymising, at the given ε ≥ −ln(1 − β).
func Delta(beta float64, k int, eps float64) (Bound, error) {
	if err := checkSampled(beta, k); err != nil {
		return Bound{}, err
	}
	if err := account.ValidateEpsilon(eps); err != nil {
		return Bound{}, err
	}
	if min := MinEpsilon(beta); eps < min {
		return Bound{}, fmt.Errorf("epsilon %v is below -ln(1 - beta) = %v for beta = %v: %w", eps, min, beta, ErrNoGuarantee)
	}
	return deltaAt(beta, k, eps)
}

// deltaAt is Delta on checked arguments. It works with
// 1 − γ = (1 − β)e^{−ε} in log space, so that γ close to 1 (large ε) keeps
// its meaning: the smallest j > γn is n − ⌈(1−γ)n⌉ + 1, and
// n_m = ⌈k/γ − 1⌉ = k − 1 + ⌈k(1−γ)/γ⌉.
func deltaAt(beta float64, k int, eps float64) (Bound, error) {
	logOmg := math.Log1p(-beta) - eps // ln(1 − γ)
	gamma := -math.Expm1(logOmg)
	nm := k - 1 + ceilExp(math.Log(float64(k))+logOmg-math.Log(gamma))
	res := Bound{Beta: beta, K: k, Epsilon: eps, NMin: nm, NMax: nm, LogDelta: math.Inf(-1)}
	// D(γ‖β), with ln(1−γ) − ln(1−β) = −ε exactly.
	kl := gamma*math.Log(gamma/beta) - math.Exp(logOmg)*eps
	lb, l1b := math.Log(beta), math.Log1p(-beta)
	threshold := func(n int) int { return n - ceilExp(logOmg+math.Log(float64(n))) + 1 } // smallest j > γn
	for n := max(nm, 1); ; n++ {
		if n-nm > maxScan {
			return Bound{}, fmt.Errorf("delta search for beta = %v, k = %d, epsilon = %v did not settle within %d values of n", beta, k, eps, maxScan)
		}
		// Every tail from n on is at most exp(−n·D(γ‖β)) (Chernoff), so
		// once that is below the best found, the maximum is known.
		if -float64(n)*kl*(1-1e-12) < res.LogDelta {
			break
		}
		j := threshold(n)
		if threshold(n+1) == j {
			continue // same threshold at n+1, whose tail is larger
		}
		if lt := logUpperTail(n, j, lb, l1b); lt > res.LogDelta {
			res.LogDelta, res.NMax = lt, n
		}
	}
	res.Delta = math.Exp(res.LogDelta)
	return res, nil
}

// ceilExp returns ⌈e^x⌉ for a positive quantity given by its log x: 1
// whenever e^x ≤ 1, including values that underflow.
func ceilExp(x float64) int {
	if x <= 0 {
		return 1
	}
	return int(math.Ceil(math.Exp(x)))
}

// logUpperTail returns ln P(Bin(n, β) ≥ j) for j > nβ, where the terms
// decrease: the first term in log space times a sum of ratios, stopped when
// the geometric bound on the rest is below 1e-17 of the sum.
func logUpperTail(n, j int, lb, l1b float64) float64 {
	if j > n {
		return math.Inf(-1)
	}
	first := account.LogBinomial(n, j) + float64(j)*lb + float64(n-j)*l1b
	odds := math.Exp(lb - l1b)
	sum, term := 1.0, 1.0
	for i := j; i < n; i++ {
		r := float64(n-i) / float64(i+1) * odds
		term *= r
		sum += term
		if r < 1 && term*r/(1-r) < sum*1e-17 {
			break
		}
	}
	return first + math.Log(sum)
}

// Epsilon returns the smallest ε whose δ is at most delta, by
// bisection on ε ≥ −ln(1 − β). The result is checked: its δ ≤ delta.
func Epsilon(beta float64, k int, delta float64) (Bound, error) {
	if err := checkSampled(beta, k); err != nil {
		return Bound{}, err
	}
	if err := checkTargetDelta(delta); err != nil {
		return Bound{}, err
	}
	// As ε → ∞, n_m falls to k (k/γ − 1 > k − 1) and the tail there to
	// P(j = n = k) = β^k: δ never goes below β^k, so smaller targets are
	// out of reach.
	if floor := float64(k) * math.Log(beta); math.Log(delta) <= floor {
		return Bound{}, fmt.Errorf("delta %v is at or below beta^k = %v, the least any epsilon gives at beta = %v, k = %d: %w", delta, math.Exp(floor), beta, k, ErrNoGuarantee)
	}
	lo := MinEpsilon(beta)
	at := func(eps float64) (Bound, error) { return deltaAt(beta, k, eps) }
	best, err := at(lo)
	if err != nil || best.Delta <= delta {
		return best, err
	}
	hi := lo + 1
	for {
		if best, err = at(hi); err != nil {
			return Bound{}, err
		}
		if best.Delta <= delta {
			break
		}
		if hi > 1e4 {
			return Bound{}, fmt.Errorf("no epsilon up to %v reaches delta %v for beta = %v, k = %d: %w", hi, delta, beta, k, ErrNoGuarantee)
		}
		lo, hi = hi, 2*hi
	}
	return bisect(hi, lo, best, at, delta)
}

// bisect narrows the bracket between a point good (δ ≤ delta, result best)
// and a point bad (δ > delta), in either order, to 1e-12 relative, and
// returns the result at its good end.
func bisect(good, bad float64, best Bound, at func(float64) (Bound, error), delta float64) (Bound, error) {
	for math.Abs(good-bad) > 1e-12*math.Max(math.Abs(good), math.Abs(bad)) {
		mid := bad + (good-bad)/2
		r, err := at(mid)
		if err != nil {
			return Bound{}, err
		}
		if r.Delta <= delta {
			good, best = mid, r
		} else {
			bad = mid
		}
	}
	return best, nil
}

// SmallestK returns the smallest threshold k whose δ at (β, ε) is at most
// delta. δ never grows with k (n_m grows, so the maximum runs over fewer n),
// so the search is exact.
func SmallestK(beta, eps, delta float64) (Bound, error) {
	if _, err := Delta(beta, 1, eps); err != nil {
		return Bound{}, err
	}
	if err := checkTargetDelta(delta); err != nil {
		return Bound{}, err
	}
	at := func(k int) (Bound, error) { return deltaAt(beta, k, eps) }
	const maxK = 1 << 30
	lo, hi := 0, 1 // δ(lo) > delta ≥ δ(hi) once found
	best, err := at(hi)
	for ; err == nil && best.Delta > delta; best, err = at(hi) {
		if hi >= maxK {
			return Bound{}, fmt.Errorf("no k up to %d reaches delta %v for beta = %v, epsilon = %v: %w", maxK, delta, beta, eps, ErrNoGuarantee)
		}
		lo, hi = hi, 2*hi
	}
	if err != nil {
		return Bound{}, err
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		r, err := at(mid)
		if err != nil {
			return Bound{}, err
		}
		if r.Delta <= delta {
			hi, best = mid, r
		} else {
			lo = mid
		}
	}
	return best, nil
}

// LargestBeta returns the largest sampling rate β ≤ 1 − e^{−ε} (the range
// Theorem 5 covers at this ε) whose δ at (k, ε) is at most delta, by
// bisection; the result is checked: its δ ≤ delta.
func LargestBeta(k int, eps, delta float64) (Bound, error) {
	if err := account.ValidateEpsilon(eps); err != nil {
		return Bound{}, err
	}
	if k < 1 {
		return Bound{}, fmt.Errorf("threshold k must be >= 1, got %d", k)
	}
	if err := checkTargetDelta(delta); err != nil {
		return Bound{}, err
	}
	hi := -math.Expm1(-eps)
	at := func(beta float64) (Bound, error) {
		return deltaAt(beta, k, math.Max(eps, MinEpsilon(beta)))
	}
	best, err := at(hi)
	if err != nil || best.Delta <= delta {
		return best, err
	}
	lo := hi * 1e-9
	if best, err = at(lo); err != nil {
		return Bound{}, err
	}
	if best.Delta > delta {
		return Bound{}, fmt.Errorf("even beta = %v gives delta %v > %v at k = %d, epsilon = %v: %w", lo, best.Delta, delta, k, eps, ErrNoGuarantee)
	}
	return bisect(lo, hi, best, at, delta)
}

// checkTargetDelta accepts a target δ in (0, 1).
func checkTargetDelta(delta float64) error {
	if !(delta > 0 && delta < 1) {
		return fmt.Errorf("target delta must satisfy 0 < delta < 1, got %v", delta)
	}
	return nil
}

// What a pipeline run charges. Config.Loss is the one accounting function
// of both release paths: `dpal kanon run` (Run, through release) and
// dpal-beam's driver (Config.Charge) charge the same Loss, computed here.

// Loss is what one run of c charges the log (group Group): the
// Li–Qardaji–Su (ε, δ) of (β, k) at Delta for the exact threshold, the
// amplified loss of the noisy threshold for ThresholdDP, and the zero Loss
// for the non-private Baseline. An error means (β, k) gives no guarantee.
func (c Config) Loss() (account.Loss, error) {
	l, _, err := c.guarantee()
	return l, err
}

// guarantee is Loss with the n where the Li–Qardaji–Su tail peaks (exact
// threshold; 0 otherwise).
func (c Config) guarantee() (account.Loss, int, error) {
	switch {
	case c.Baseline:
		return account.Loss{}, 0, nil
	case c.Threshold == ThresholdDP:
		m, err := NewNoisyThreshold(c.NoiseEpsilon, c.K, c.Beta)
		if err != nil {
			return account.Loss{}, 0, err
		}
		return m.Loss(), 0, nil
	}
	g, err := Epsilon(c.Beta, c.K, c.Delta)
	if err != nil {
		return account.Loss{}, 0, fmt.Errorf("beta = %v, k = %d: %w (use the baseline for a non-private reference)", c.Beta, c.K, err)
	}
	return g.Loss(), g.NMax, nil
}

// Charge is the ledger entry of one private run of c: Loss on group Group,
// with a note naming the threshold; by prefixes the note with the program
// that released the set ("" for `dpal kanon run`). dpal-beam's driver
// records it before it publishes the set; Run records the same entry
// (without the prefix) before the set leaves the stage.
func (c Config) Charge(by string) (ledger.Charge, error) {
	loss, err := c.Loss()
	if err != nil {
		return ledger.Charge{}, err
	}
	return c.charge(loss, by), nil
}

// charge is Charge for an already computed loss (c.Loss's).
func (c Config) charge(loss account.Loss, by string) ledger.Charge {
	if by != "" {
		by += " "
	}
	return ledger.Charge{Groups: []string{Group}, Loss: loss,
		Note: fmt.Sprintf("%skanon %s threshold, beta=%v k=%d", by, c.Threshold, c.Beta, c.K)}
}
