package groupsearch

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/bits"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/mech"
)

// meanGridBits sets the mean oracle's score grid: h = 2^⌊log₂ t_ℓ⌋·2^−24,
// so [0, t_ℓ] spans between 2^24 and 2^25 grid steps.
const meanGridBits = 24

// maxExactSteps bounds a released mean in Laplace grid steps, so that k·g
// is an exact float64 the mechanism rounds back to k.
const maxExactSteps = 1 << 53

// meanOracle releases the two group means with Laplace noise of scale
// t_ℓ/(|Q|ε) and t_ℓ/(|Q̄|ε): the aggregate §4.2 mentions before choosing the
// max. A non-anomalous score moves its group's mean by at most t_ℓ/|group|
// and leaves the other group's alone, so one answer is ε-DP.
//
// Floating-point sums would break both halves of that claim (rounding makes
// a sum move by more than t_ℓ, and a complement computed as total − sum_Q
// moves with Q's scores), so the oracle works on an integer grid: each score
// is floored to a multiple of h (which keeps [0, t_ℓ] inside [0, t_ℓ]) and
// capped (see scoreCap), both groups' sums are exact 128-bit integers,
// and each mean is rounded exactly to the Laplace mechanism's grid g before
// the release. One changed score then moves its group's sum by at most
// ⌊t_ℓ/h⌋ steps, its mean by at most t_ℓ/|group| before rounding, and the
// other group's mean not at all.
type meanOracle struct {
	oracleBase
	// q holds the scores in units of h, floored and capped; exp is log₂ h.
	q   []uint64
	exp int
	// totalHi, totalLo is Σ q as a 128-bit integer.
	totalHi, totalLo uint64
	// seen[i] == stamp marks the indices of the current query.
	seen  []uint32
	stamp uint32
}

func newMeanOracle(b oracleBase) (*meanOracle, error) {
	b.loss = account.Pure("groupsearch noisy mean pair (§4.2)", b.p.Epsilon)
	_, e := math.Frexp(b.p.TLow)
	exp := e - 1 - meanGridBits
	// With scores capped at scoreCap, every group mean stays within the
	// 2^53 grid steps the release handles exactly.
	capX := scoreCap(b.p)
	capQ := math.Floor(math.Ldexp(capX, -exp))
	if !(capQ < 1<<62) {
		return nil, fmt.Errorf("mean oracle: t_high/t_low = %v is too large for its exact sums", b.p.THigh/b.p.TLow)
	}
	o := &meanOracle{oracleBase: b, q: make([]uint64, len(b.scores)), exp: exp, seen: make([]uint32, len(b.scores))}
	var carry uint64
	for i, x := range b.scores {
		o.q[i] = uint64(min(math.Floor(math.Ldexp(x, -exp)), capQ))
		o.totalLo, carry = bits.Add64(o.totalLo, o.q[i], 0)
		o.totalHi += carry
	}
	return o, nil
}

// Ask releases (mean_Q x + Z, mean_Q̄ x + Z̄). An empty group's mean is 0.
// Nothing is spent when the query or the means are out of range.
func (o *meanOracle) Ask(q []int32) (Response, error) {
	hi, lo, err := o.sum(q)
	if err != nil {
		return Response{}, err
	}
	barLo, borrow := bits.Sub64(o.totalLo, lo, 0)
	barHi := o.totalHi - hi - borrow
	nq, nbar := len(q), len(o.scores)-len(q)
	lap, x, err := o.gridMean(hi, lo, nq)
	if err != nil {
		return Response{}, err
	}
	lapBar, xbar, err := o.gridMean(barHi, barLo, nbar)
	if err != nil {
		return Response{}, err
	}
	return o.answer(q, func() (Response, error) {
		y, err := lap.Release(o.r, x)
		if err != nil {
			return Response{}, err
		}
		ybar, err := lapBar.Release(o.r, xbar)
		if err != nil {
			return Response{}, err
		}
		return Response{Y: y, YBar: ybar, HasPair: true}, nil
	})
}

// sum returns the exact grid sum of the scores in q, rejecting an index out
// of range or repeated (which would distort |Q| and the sensitivity t_ℓ/|Q|).
func (o *meanOracle) sum(q []int32) (hi, lo uint64, err error) {
	o.stamp++
	if o.stamp == 0 {
		clear(o.seen)
		o.stamp = 1
	}
	var carry uint64
	for _, i := range q {
		if i < 0 || int(i) >= len(o.scores) {
			return 0, 0, fmt.Errorf("query index %d outside [0, %d)", i, len(o.scores))
		}
		if o.seen[i] == o.stamp {
			return 0, 0, fmt.Errorf("query index %d repeated", i)
		}
		o.seen[i] = o.stamp
		lo, carry = bits.Add64(lo, o.q[i], 0)
		hi += carry
	}
	return hi, lo, nil
}

// errMeanRange reports a group mean beyond the exact range of the release.
var errMeanRange = errors.New("mean oracle: a group mean exceeds the release's exact range")

// gridMean returns the Laplace mechanism for a group of m members,
// sensitivity t_ℓ/m (t_ℓ with the scale of one member for an empty group,
// whose mean is 0), and the group's mean (hi·2^64 + lo)·h/m rounded exactly
// to the mechanism's grid g, as the float64 k·g.
func (o *meanOracle) gridMean(hi, lo uint64, m int) (*mech.Laplace, float64, error) {
	lap, err := mech.NewLaplace(o.p.Epsilon, o.p.TLow/float64(max(m, 1)))
	if err != nil {
		return nil, 0, err
	}
	if m == 0 {
		return lap, 0, nil
	}
	_, e := math.Frexp(lap.Granularity())
	shift := o.exp - (e - 1) // h/g = 2^shift
	num := new(big.Int).Lsh(new(big.Int).SetUint64(hi), 64)
	num.Or(num, new(big.Int).SetUint64(lo))
	den := big.NewInt(int64(m))
	if shift >= 0 {
		num.Lsh(num, uint(shift))
	} else {
		den.Lsh(den, uint(-shift))
	}
	// k = ⌊(2·num + den)/(2·den)⌋ rounds half up, as the mechanism does.
	num.Add(num.Lsh(num, 1), den)
	k := num.Quo(num, den.Lsh(den, 1))
	if !k.IsUint64() || k.Uint64() > maxExactSteps {
		return nil, 0, errMeanRange
	}
	return lap, math.Ldexp(float64(k.Uint64()), e-1), nil
}
