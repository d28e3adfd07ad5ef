package groupsearch_test

import (
	"fmt"
	"slices"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
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
	led, _ := ledger.New(account.Budget{Epsilon: 100})
	oracle, err := groupsearch.NewOracle(groupsearch.NoisyMax, scores, p, led, "search", r)
	if err != nil {
		panic(err)
	}
	lik, _ := p.Likelihood(groupsearch.NoisyMax)
	s, _ := groupsearch.NewSearcher(len(scores), lik, r)
	res, err := s.Run(oracle, groupsearch.Halting{Budget: 100, Posterior: 0.99}, 4)
	if err != nil {
		panic(err)
	}
	spent, _ := led.Spent("search")
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

// Two anomalies among 2,000 scores (§7): SubsetsFor picks how many random
// disjoint subsets keep the chance that both land in one subset below 25 %,
// and SearchSplit searches each subset with its own oracle and ledger group.
// A subset without an anomaly halts on its budget with a false positive, so
// only confident subsets are reported. By parallel composition every
// individual spends at most the largest subset's ε.
func ExampleSearchSplit() {
	r := rng.Seeded(2)
	scores := make([]float64, 2000)
	for i := range scores {
		scores[i] = 0.9 * r.Float64()
	}
	scores[123], scores[1500] = 3, 4

	m, _ := groupsearch.SubsetsFor(2, 0.25)
	p := groupsearch.Params{TLow: 1, THigh: 2, Epsilon: 1}
	led, _ := ledger.New(account.Budget{Epsilon: 40})
	h := groupsearch.Halting{Budget: 40, Posterior: 0.99}
	res, err := groupsearch.SearchSplit(scores, groupsearch.NoisyMax, p, m, h, 1, led, "split", r)
	if err != nil {
		panic(err)
	}
	var found []int
	for _, s := range res.Subsets {
		if s.HaltedBy == groupsearch.HaltPosterior {
			found = append(found, s.Top[0])
		}
	}
	slices.Sort(found)
	fmt.Printf("%d subsets, found %v, epsilon per individual %g\n", m, found, res.Epsilon)
	// Output: 4 subsets, found [123 1500], epsilon per individual 40
}
