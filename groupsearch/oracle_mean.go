package groupsearch

import (
	"fmt"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/mech"
)

// meanOracle releases the two group means with Laplace noise of scale
// t_ℓ/(|Q|ε) and t_ℓ/(|Q̄|ε): the aggregate §4.2 mentions before choosing the
// max. A non-anomalous score moves its group's mean by at most t_ℓ/|group|
// and leaves the other group's alone, so one answer is ε-DP.
type meanOracle struct {
	oracleBase
	total float64
	// seen[i] == stamp marks the indices of the current query.
	seen  []uint32
	stamp uint32
}

func newMeanOracle(b oracleBase) (*meanOracle, error) {
	b.cost = account.Cost{Mechanism: "groupsearch noisy mean pair (§4.2)", Epsilon: b.p.Epsilon}
	var total float64
	for _, x := range b.scores {
		total += x
	}
	return &meanOracle{oracleBase: b, total: total, seen: make([]uint32, len(b.scores))}, nil
}

// Ask releases (mean_Q x + Z, mean_Q̄ x + Z̄). An empty group's mean is 0.
func (o *meanOracle) Ask(q []int32) (Response, error) {
	sq, err := o.sum(q)
	if err != nil {
		return Response{}, err
	}
	if err := o.begin(q); err != nil {
		return Response{}, err
	}
	nq, nbar := len(q), len(o.scores)-len(q)
	y, err := o.noisyMean(sq, nq)
	if err != nil {
		return Response{}, err
	}
	ybar, err := o.noisyMean(o.total-sq, nbar)
	if err != nil {
		return Response{}, err
	}
	return Response{Y: y, YBar: ybar, HasPair: true}, nil
}

// sum returns the sum of the scores in q, rejecting an index out of range
// or repeated (which would distort |Q| and the sensitivity t_ℓ/|Q|).
func (o *meanOracle) sum(q []int32) (float64, error) {
	o.stamp++
	if o.stamp == 0 {
		clear(o.seen)
		o.stamp = 1
	}
	var sq float64
	for _, i := range q {
		if i < 0 || int(i) >= len(o.scores) {
			return 0, fmt.Errorf("query index %d outside [0, %d)", i, len(o.scores))
		}
		if o.seen[i] == o.stamp {
			return 0, fmt.Errorf("query index %d repeated", i)
		}
		o.seen[i] = o.stamp
		sq += o.scores[i]
	}
	return sq, nil
}

// noisyMean adds Lap(t_ℓ/(m ε)) to sum/m (to 0 for an empty group, with
// the scale of a single member).
func (o *meanOracle) noisyMean(sum float64, m int) (float64, error) {
	mean := 0.0
	if m > 0 {
		mean = sum / float64(m)
	}
	lap, err := mech.NewLaplace(o.p.Epsilon, o.p.TLow/float64(max(m, 1)))
	if err != nil {
		return 0, err
	}
	return lap.Release(o.r, mean)
}
