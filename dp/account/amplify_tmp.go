package account

import (
	"errors"
	"fmt"
	"math"
)

// AmplifyPoissonRDP (temporary, replaced by the subst branch's version).
func AmplifyPoissonRDP(l Loss, gamma float64) (Loss, error) {
	if !(gamma > 0 && gamma <= 1) {
		return Loss{}, fmt.Errorf("rate %v", gamma)
	}
	if len(l.Orders) == 0 || l.Epsilon != 0 || l.Delta != 0 || l.Rho != 0 || len(l.PLD) != 0 {
		return Loss{}, errors.New("need a pure RDP curve")
	}
	eps := map[int]float64{}
	for i, a := range l.Orders {
		if a == math.Trunc(a) {
			eps[int(a)] = l.RDP[i]
		}
	}
	var orders, out []float64
	lg, l1g := math.Log(gamma), math.Log1p(-gamma)
	for a := 2; ; a++ {
		if _, ok := eps[a]; !ok {
			break
		}
		af := float64(a)
		terms := []float64{(af-1)*l1g + math.Log(af*gamma-gamma+1), logBinomInt(a, 2) + 2*lg + (af-2)*l1g + eps[2]}
		for j := 3; j <= a; j++ {
			terms = append(terms, math.Log(3)+logBinomInt(a, j)+float64(a-j)*l1g+float64(j)*lg+float64(j-1)*eps[j])
		}
		if gamma == 1 {
			orders, out = append(orders, af), append(out, eps[a])
			continue
		}
		t := math.Inf(-1)
		for _, v := range terms {
			t = logAdd(t, v)
		}
		orders, out = append(orders, af), append(out, math.Min(t/(af-1), eps[a]))
	}
	return RDPCurve("amplified "+l.Mechanism, orders, out)
}
