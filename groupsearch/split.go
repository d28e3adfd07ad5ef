package groupsearch

import (
	"cmp"
	"errors"
	"fmt"
	"math"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/rng"
)

// SubsetsFor returns how many disjoint uniformly random subsets make it at
// most collision likely that two of up to k anomalies share one: by the
// union bound over the k(k−1)/2 pairs, m = ⌈k(k−1)/(2·collision)⌉ (at least
// k). This is the "good upper bound on the number of anomalies" §7 asks for;
// the anomalies' positions must not depend on the random partition.
func SubsetsFor(k int, collision float64) (int, error) {
	if k < 1 || !(collision > 0 && collision < 1) {
		return 0, fmt.Errorf("need k >= 1 anomalies and a collision probability in (0, 1), got %d, %v", k, collision)
	}
	return max(k, int(math.Ceil(float64(k*(k-1))/(2*collision)))), nil
}

// SubsetResult is the search of one subset, with Top given as indices into
// the full population.
type SubsetResult struct {
	// Members is the subset's size.
	Members int `json:"members"`
	Result
}

// SplitResult is the outcome of SearchSplit.
type SplitResult struct {
	// Subsets holds each subset's search, in partition order.
	Subsets []SubsetResult `json:"subsets"`
	// Epsilon is the privacy spent by any one individual: the largest
	// subset's spend (parallel composition, Definition 5).
	Epsilon float64 `json:"epsilon"`
}

// SearchSplit is the §7 extension to several anomalies: it partitions the
// population uniformly at random into the given number of disjoint subsets
// and runs an independent search (its own oracle of kind, its own ledger
// group "<group>/<j>") on each. Every individual is queried only within its
// subset, so the total guarantee is the largest per-subset ε.
//
// The single-anomaly model is assumed within each subset. When it fails, a
// subset without an anomaly still returns its most likely members (false
// positives: the posterior drifts on noise and halts on the budget or by
// chance), and a subset with two or more returns at most those its top set
// happens to hold (with noisy max, mostly the larger one).
func SearchSplit(scores []float64, kind Kind, p Params, subsets int, h Halting, top int,
	led *ledger.Ledger, group string, r *rng.Rand) (SplitResult, error) {
	if subsets < 1 || 2*subsets > len(scores) {
		return SplitResult{}, fmt.Errorf("need 1 <= subsets <= %d (two members each), got %d", len(scores)/2, subsets)
	}
	if _, _, err := CheckScores(scores, p); err != nil {
		return SplitResult{}, err
	}
	lik, err := p.Likelihood(kind)
	if err != nil {
		return SplitResult{}, err
	}
	perm := r.Perm(len(scores))
	var out SplitResult
	var budgetErr error
	queries := 0
	for j := range subsets {
		lo, hi := j*len(scores)/subsets, (j+1)*len(scores)/subsets
		members := perm[lo:hi]
		sub := make([]float64, len(members))
		for k, i := range members {
			sub[k] = scores[i]
		}
		res, err := searchSubset(sub, kind, p, lik, h, top, led, fmt.Sprintf("%s/%d", group, j), r)
		// Every charged answer counts, a failed subset's too.
		out.Epsilon = max(out.Epsilon, res.EpsilonSpent)
		if errors.Is(err, account.ErrBudgetExceeded) {
			budgetErr = cmp.Or(budgetErr, err)
		} else if err != nil && !errors.Is(err, ErrNoAnomaly) {
			return out, fmt.Errorf("subset %d: %w", j, err)
		}
		for k, i := range res.Top {
			res.Top[k] = members[i]
		}
		out.Subsets = append(out.Subsets, SubsetResult{Members: len(members), Result: res})
		queries += res.Queries
	}
	if queries == 0 && budgetErr != nil {
		return out, fmt.Errorf("no subset could be queried: %w", budgetErr)
	}
	return out, nil
}

// searchSubset runs one subset's search. A randomized-response oracle needs
// an anomaly to answer about; for a subset without one the result is empty
// with HaltedBy "error" and ErrNoAnomaly.
func searchSubset(xs []float64, kind Kind, p Params, lik Likelihood, h Halting, top int,
	led *ledger.Ledger, group string, r *rng.Rand) (Result, error) {
	o, err := NewOracle(kind, xs, p, led, group, r)
	if err != nil {
		return Result{HaltedBy: HaltError}, err
	}
	s, err := NewSearcher(len(xs), lik, r)
	if err != nil {
		return Result{HaltedBy: HaltError}, err
	}
	return s.Run(o, h, top)
}
