package pool

import (
	"fmt"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/rng"
)

// selectionLoss is the loss a selection of ε charges each scored record:
// pure ε under Basic accounting, the randomized-response curve of ε
// (account.PureRDP, valid for any ε-DP mechanism, the discrete Laplace
// top-k included) under RDP accounting; nothing for ε = 0.
func selectionLoss(name string, eps float64, acc Accounting) (account.Loss, error) {
	switch {
	case eps == 0:
		return account.Loss{Mechanism: name}, nil
	case acc == Basic:
		return account.Pure(name, eps), nil
	}
	orders := account.DefaultOrders()
	curve, err := account.PureRDP(eps, orders)
	if err != nil {
		return account.Loss{}, err
	}
	return account.RDPCurve(name, orders, curve)
}

// SelectionCharge is what one selection by a costs each record it scores
// under accounting acc (see Config.SelectionLoss, its planned counterpart).
func SelectionCharge(a *Acquire, acc Accounting) (account.Loss, error) {
	l, err := selectionLoss(a.Loss().Mechanism, a.Epsilon(), acc)
	if err != nil {
		return account.Loss{}, err
	}
	if !l.IsZero() {
		l.Params = a.Loss().Params
	}
	return l, nil
}

// Select runs one private selection phase and returns the ids of the
// selected records. ids are the ledger groups of the scored records, one
// per record in the order of passes (each record's class probabilities,
// one vector per forward pass; nil for random acquisition): the unlabelled
// pool, plus the labelled records if the acquisition scores them (§3.5).
//
// Every record's probabilities are validated first, so an invalid record
// is named and nothing is charged. Then the selection's loss
// (SelectionCharge) is committed to every id through ledger.ReleaseCharge,
// which refuses with account.ErrBudgetExceeded before any noise is drawn
// if a record's budget would be exceeded; only then is the noisy top-k
// drawn. Random acquisition reads no record: it is drawn without a charge.
func Select(l *ledger.Ledger, r *rng.Rand, a *Acquire, acc Accounting, ids []string, passes [][][]float64, note string) ([]string, error) {
	return selectOnce(l, r, a, acc, ids, passes, ledger.Charge{Note: note})
}

// selectOnce is Select with the charge's note and Once key in c.
func selectOnce(l *ledger.Ledger, r *rng.Rand, a *Acquire, acc Accounting, ids []string, passes [][][]float64, c ledger.Charge) ([]string, error) {
	scores := make([]float64, len(ids))
	if a.Kind() != Random {
		if len(passes) != len(ids) {
			return nil, fmt.Errorf("select: %d ids but %d records scored", len(ids), len(passes))
		}
		var err error
		if scores, err = a.Scores(passes); err != nil {
			return nil, fmt.Errorf("select: %w", err)
		}
	}
	charge, err := SelectionCharge(a, acc)
	if err != nil {
		return nil, fmt.Errorf("select: %w", err)
	}
	draw := func() ([]int, error) { return a.Select(r, scores) }
	var idx []int
	if charge.IsZero() { // random: reads no record, so no record pays
		idx, err = draw()
	} else {
		c.Groups, c.Loss = ids, charge
		idx, err = ledger.ReleaseCharge(l, c, draw)
	}
	if err != nil {
		return nil, fmt.Errorf("select: %w", err)
	}
	out := make([]string, len(idx))
	for i, j := range idx {
		out[i] = ids[j]
	}
	return out, nil
}
