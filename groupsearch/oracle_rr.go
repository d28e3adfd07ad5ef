package groupsearch

import (
	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/mech"
)

// rrOracle is the randomized-response oracle of eq. 5: it answers
// 1(Q holds an anomaly) ⊕ Bernoulli(p) with p = 1/(1+e^ε) (Prop. 1).
type rrOracle struct {
	oracleBase
	rr        *mech.RandomizedResponse
	anomalies smallSet
}

func newRROracle(b oracleBase, anomalies []int) (*rrOracle, error) {
	if len(anomalies) == 0 {
		return nil, ErrNoAnomaly
	}
	rr, err := mech.NewRandomizedResponse(b.p.Epsilon)
	if err != nil {
		return nil, err
	}
	b.loss = account.Pure("groupsearch randomized response (eq. 5, Prop. 1)", b.p.Epsilon)
	idx := make([]int32, len(anomalies))
	for j, i := range anomalies {
		idx[j] = int32(i)
	}
	return &rrOracle{oracleBase: b, rr: rr, anomalies: newSmallSet(idx)}, nil
}

// Ask releases 1(i* ∈ Q) ⊕ Bernoulli(p). With several anomalies (a subset of
// SearchSplit) the bit is whether Q holds any of them.
func (o *rrOracle) Ask(q []int32) (Response, error) {
	return o.answer(q, func() (Response, error) {
		in := false
		for _, i := range q {
			in = in || o.anomalies.find(i) >= 0
		}
		return Response{Bit: o.rr.Release(o.r, in)}, nil
	})
}
