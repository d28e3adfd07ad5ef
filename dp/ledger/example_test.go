package ledger_test

import (
	"errors"
	"fmt"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
)

// laplaceCount stands for a mechanism: it reports the privacy loss of one
// release.
type laplaceCount struct{ eps float64 }

func (m laplaceCount) Loss() account.Loss { return account.Pure("laplace", m.eps) }

// Every record may spend ε = 1. Each release is charged to the groups it
// touches before its noise is drawn; the third release to alice would
// take her past the budget, so nothing is drawn.
func Example() {
	l, err := ledger.New(account.Budget{Epsilon: 1})
	if err != nil {
		panic(err)
	}
	count := laplaceCount{eps: 0.4}
	for i, groups := range [][]string{{"alice", "bob"}, {"alice"}, {"alice", "carol"}, {"carol"}} {
		v, err := ledger.Release(l, count, groups, func() (float64, error) { return 100 + float64(i), nil })
		if errors.Is(err, account.ErrBudgetExceeded) {
			fmt.Printf("release %d to %v refused: budget exceeded\n", i, groups)
			continue
		}
		if err != nil {
			panic(err)
		}
		fmt.Printf("release %d to %v: %v\n", i, groups, v)
	}
	eps, _ := l.Spent("alice")
	fmt.Printf("alice has spent ε = %.1f\n", eps)
	for _, g := range l.Summary() {
		fmt.Printf("%-5s ε = %.1f of %.0f in %d charges, %.1f left\n", g.Group, g.Epsilon, g.Budget, g.Charges, g.Remaining)
	}
	// Output:
	// release 0 to [alice bob]: 100
	// release 1 to [alice]: 101
	// release 2 to [alice carol] refused: budget exceeded
	// release 3 to [carol]: 103
	// alice has spent ε = 0.8
	// alice ε = 0.8 of 1 in 2 charges, 0.2 left
	// bob   ε = 0.4 of 1 in 1 charges, 0.6 left
	// carol ε = 0.4 of 1 in 1 charges, 0.6 left
}
