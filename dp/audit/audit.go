// Package audit owns dpal's empirical privacy audit: it runs a mechanism on
// two neighbouring inputs many times, finds the event that best tells the
// two output distributions apart, and turns the event's frequencies into a
// statistically valid lower bound on ε. Tests use it to check that a
// mechanism does not leak more than it claims and that a weakened mechanism
// (for instance one with half the noise) is caught.
//
// The bound follows the usual auditing recipe (Jagielski, Ullman, Oprea
// 2020; Nasr et al. 2021): if M is (ε, δ)-DP then for every event E,
// P[M(D0) ∈ E] ≤ e^ε P[M(D1) ∈ E] + δ, so
// ε ≥ ln((p0 − δ)/p1); replacing p0 by a Clopper–Pearson lower bound and p1
// by an upper bound (each at one-sided level (1−confidence)/2) makes the
// result a lower bound with probability at least confidence. The event is
// chosen on one half of the samples and evaluated on the other half, so the
// search over events does not bias the bound.
package audit

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/mathext"

	"github.com/dpal-dev/dpal/dp/rng"
)

// Config sets the size and confidence of an audit.
type Config struct {
	// Trials is the number of runs per input (≥ 4); half choose the event,
	// half estimate its probabilities.
	Trials int
	// Confidence of the lower bound, in (0, 1); 0 means 0.95.
	Confidence float64
	// Delta is the δ of the claim being audited (0 for pure ε-DP).
	Delta float64
}

// Result is the outcome of an audit.
type Result struct {
	// Epsilon is the lower bound on ε (0 when no event shows any leak).
	Epsilon float64
	// Event describes the chosen event and which input it favours.
	Event string
	// P0 and P1 are the held-out frequencies of the event under the
	// favoured input and under the other one.
	P0, P1 float64
	// Held is the number of held-out runs per input the bound rests on.
	Held int
}

func (c Config) validate() (Config, error) {
	if c.Trials < 4 {
		return c, fmt.Errorf("audit: need at least 4 trials, got %d", c.Trials)
	}
	if c.Confidence == 0 {
		c.Confidence = 0.95
	}
	if !(c.Confidence > 0 && c.Confidence < 1) {
		return c, fmt.Errorf("audit: confidence must be in (0, 1), got %v", c.Confidence)
	}
	if !(c.Delta >= 0 && c.Delta < 1) {
		return c, fmt.Errorf("audit: delta must be in [0, 1), got %v", c.Delta)
	}
	return c, nil
}

// ClopperPearson returns one-sided Clopper–Pearson bounds for a binomial
// proportion after k successes in n trials: P(p < lo) ≤ alpha and
// P(p > hi) ≤ alpha.
func ClopperPearson(k, n int, alpha float64) (lo, hi float64) {
	lo, hi = 0, 1
	if k > 0 {
		lo = mathext.InvRegIncBeta(float64(k), float64(n-k+1), alpha)
	}
	if k < n {
		hi = mathext.InvRegIncBeta(float64(k+1), float64(n-k), 1-alpha)
	}
	return lo, hi
}

// EpsilonLowerBound is ln((P0_lower − δ)/P1_upper) for an event seen k0 of
// n0 times under one input and k1 of n1 times under the other, each bound at
// one-sided level (1−confidence)/2; it is 0 when the ratio is below 1.
func EpsilonLowerBound(k0, n0, k1, n1 int, confidence, delta float64) float64 {
	alpha := (1 - confidence) / 2
	lo0, _ := ClopperPearson(k0, n0, alpha)
	_, hi1 := ClopperPearson(k1, n1, alpha)
	if lo0-delta <= hi1 {
		return 0
	}
	return math.Log((lo0 - delta) / hi1)
}

// Continuous audits a real-valued mechanism: m0 and m1 run it on the two
// neighbouring inputs. The events searched are x > c and x < c for about a
// thousand thresholds c spread over the pooled sample.
func Continuous(r *rng.Rand, m0, m1 func(*rng.Rand) float64, cfg Config) (Result, error) {
	cfg, err := cfg.validate()
	if err != nil {
		return Result{}, err
	}
	half := cfg.Trials / 2
	sel0, held0 := sampleSorted(r, m0, half)
	sel1, held1 := sampleSorted(r, m1, half)
	if math.IsNaN(sel0[len(sel0)-1]) || math.IsNaN(sel1[len(sel1)-1]) ||
		math.IsNaN(held0[len(held0)-1]) || math.IsNaN(held1[len(held1)-1]) {
		return Result{}, errors.New("audit: mechanism returned NaN")
	}
	pooled := slices.Concat(sel0, sel1)
	slices.Sort(pooled)
	best := thresholdEvent{}
	bestEps := -1.0
	const candidates = 1024
	for i := range candidates {
		c := pooled[(i*(len(pooled)-1))/(candidates-1)]
		for _, above := range []bool{true, false} {
			ev := thresholdEvent{c: c, above: above}
			k0, k1 := ev.count(sel0), ev.count(sel1)
			for _, swap := range []bool{false, true} {
				a, b := k0, k1
				if swap {
					a, b = k1, k0
				}
				if e := EpsilonLowerBound(a, half, b, half, cfg.Confidence, cfg.Delta); e > bestEps {
					bestEps, best = e, ev
					best.swap = swap
				}
			}
		}
	}
	k0, k1 := best.count(held0), best.count(held1)
	if best.swap {
		k0, k1 = k1, k0
	}
	return Result{
		Epsilon: EpsilonLowerBound(k0, len(held0), k1, len(held1), cfg.Confidence, cfg.Delta),
		Event:   best.String(),
		P0:      float64(k0) / float64(len(held0)),
		P1:      float64(k1) / float64(len(held1)),
		Held:    len(held0),
	}, nil
}

// thresholdEvent is x > c (above) or x < c; swap means it favours input 1.
type thresholdEvent struct {
	c           float64
	above, swap bool
}

// count returns how many of the sorted xs fall in the event.
func (e thresholdEvent) count(xs []float64) int {
	if e.above {
		i, found := slices.BinarySearch(xs, e.c)
		for found && i < len(xs) && xs[i] == e.c {
			i++
		}
		return len(xs) - i
	}
	i, _ := slices.BinarySearch(xs, e.c)
	return i
}

func (e thresholdEvent) String() string {
	op, in := "<", 0
	if e.above {
		op = ">"
	}
	if e.swap {
		in = 1
	}
	return fmt.Sprintf("x %s %g (favours input %d)", op, e.c, in)
}

// sampleSorted draws 2n outputs and returns two sorted halves.
func sampleSorted(r *rng.Rand, m func(*rng.Rand) float64, n int) (a, b []float64) {
	a, b = make([]float64, n), make([]float64, n)
	for i := range a {
		a[i] = m(r)
	}
	for i := range b {
		b[i] = m(r)
	}
	slices.Sort(a)
	slices.Sort(b)
	return a, b
}

// Discrete audits a mechanism with integer outputs (an index, a count). The
// events searched are the sets of outputs whose estimated likelihood ratio
// exceeds a threshold, which include the optimal (Neyman–Pearson) event.
func Discrete(r *rng.Rand, m0, m1 func(*rng.Rand) int, cfg Config) (Result, error) {
	cfg, err := cfg.validate()
	if err != nil {
		return Result{}, err
	}
	half := cfg.Trials / 2
	sel0, held0 := histogram(r, m0, half), histogram(r, m0, half)
	sel1, held1 := histogram(r, m1, half), histogram(r, m1, half)
	values := make([]int, 0, len(sel0)+len(sel1))
	for v := range sel0 {
		values = append(values, v)
	}
	for v := range sel1 {
		if _, ok := sel0[v]; !ok {
			values = append(values, v)
		}
	}
	ratio := func(v int) float64 { return (float64(sel0[v]) + 0.5) / (float64(sel1[v]) + 0.5) }
	slices.SortFunc(values, func(a, b int) int {
		if c := cmp.Compare(ratio(b), ratio(a)); c != 0 {
			return c
		}
		return a - b
	})
	bestEps, bestSet, bestSwap := -1.0, []int(nil), false
	for _, swap := range []bool{false, true} {
		order := values
		if swap {
			order = slices.Clone(values)
			slices.Reverse(order)
		}
		k0, k1 := 0, 0
		for i, v := range order {
			k0 += sel0[v]
			k1 += sel1[v]
			a, b := k0, k1
			if swap {
				a, b = k1, k0
			}
			if e := EpsilonLowerBound(a, half, b, half, cfg.Confidence, cfg.Delta); e > bestEps {
				bestEps, bestSet, bestSwap = e, order[:i+1], swap
			}
		}
	}
	k0, k1 := 0, 0
	for _, v := range bestSet {
		k0 += held0[v]
		k1 += held1[v]
	}
	in := 0
	if bestSwap {
		k0, k1, in = k1, k0, 1
	}
	return Result{
		Epsilon: EpsilonLowerBound(k0, half, k1, half, cfg.Confidence, cfg.Delta),
		Event:   fmt.Sprintf("x in %v (favours input %d)", shortSet(bestSet), in),
		P0:      float64(k0) / float64(half),
		P1:      float64(k1) / float64(half),
		Held:    half,
	}, nil
}

// Bool audits a mechanism with a binary output.
func Bool(r *rng.Rand, m0, m1 func(*rng.Rand) bool, cfg Config) (Result, error) {
	toInt := func(m func(*rng.Rand) bool) func(*rng.Rand) int {
		return func(r *rng.Rand) int {
			if m(r) {
				return 1
			}
			return 0
		}
	}
	return Discrete(r, toInt(m0), toInt(m1), cfg)
}

func histogram(r *rng.Rand, m func(*rng.Rand) int, n int) map[int]int {
	h := make(map[int]int)
	for range n {
		h[m(r)]++
	}
	return h
}

func shortSet(s []int) string {
	if len(s) <= 8 {
		return fmt.Sprint(s)
	}
	return fmt.Sprintf("%v… (%d values)", s[:8], len(s))
}
