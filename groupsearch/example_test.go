package groupsearch_test

import (
	"fmt"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/groupsearch"
)

// A search over 1,000 scores with the noisy-max oracle. The oracle owns the
// ledger; the searcher sees only the answers. Production code would use
// rng.Secure().
func Example() {
	r := rng.Seeded(1)
	scores := make([]float64, 1000)
	for i := range scores {
		scores[i] = 0.9 * r.Float64() // non-anomalous: in [0, t_low]
	}
	scores[417] = 3 // the anomaly: at least t_high

	p := groupsearch.Params{TLow: 1, THigh: 2, Epsilon: 1}
	ledger, _ := account.NewLedger(account.Budget{Epsilon: 100})
	oracle, err := groupsearch.NewOracle(groupsearch.NoisyMax, scores, p, ledger, "search", r)
	if err != nil {
		panic(err)
	}
	lik, _ := p.Likelihood(groupsearch.NoisyMax)
	s, _ := groupsearch.NewSearcher(len(scores), lik, r)
	res, err := s.Run(oracle, groupsearch.Halting{Budget: 100, Posterior: 0.99}, 4)
	if err != nil {
		panic(err)
	}
	spent, _ := ledger.Spent("search")
	fmt.Println(res.Top[0], res.HaltedBy, spent == res.EpsilonSpent)
	// Output: 417 posterior true
}

// Eq. 24: the binarised oracle's error bound at threshold ratio 1 and ε = 1,
// and eq. 26's bound on the expected number of queries it implies.
func ExampleBinarizedErrorProb() {
	p := groupsearch.Params{TLow: 1, THigh: 2, Epsilon: 1}
	pe := groupsearch.BinarizedErrorProb(p)
	bits, _ := groupsearch.Prop3Bound(1024, 0.01, p.Epsilon, pe)
	fmt.Printf("p = %.4f, E[T] <= %.1f\n", pe, bits)
	// Output: p = 0.2759, E[T] <= 117.5
}
