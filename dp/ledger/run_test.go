package ledger_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
)

// TestOpenRun: a run's open creates a ledger with the run's budget, and
// reopens an existing one with the budget it was created with, whatever
// the run's default; a budget the user gives lowers it for the run (the
// stored one stays) and cannot raise it. Entries past a lowered budget
// in other groups do not stop the open: only a charge to a group that
// would pass the budget fails, and its error says which group, by how
// much, and what to do.
func TestOpenRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "l.db")
	created := account.Budget{Epsilon: 10, Delta: 1e-5}
	l, err := ledger.OpenRun(path, ledger.RunBudget{New: created, SetEpsilon: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Charge(mech{lap(4)}, "ocp"); err != nil {
		t.Fatal(err)
	}
	l.Close()

	// Another command's run, whose default budget (its own ε) is below
	// what the ledger's ocp group has spent, opens the ledger and charges
	// its own group against the stored budget.
	l, err = ledger.OpenRun(path, ledger.RunBudget{New: account.Budget{Epsilon: 3, Delta: 1e-6}})
	if err != nil {
		t.Fatalf("a run with a smaller default budget: %v", err)
	}
	if l.Budget() != created {
		t.Errorf("budget in force %+v, want the stored %+v", l.Budget(), created)
	}
	for range 2 {
		if _, err := l.Charge(mech{lap(3)}, "train"); err != nil {
			t.Fatalf("the same run twice within the stored budget: %v", err)
		}
	}
	_, err = l.Charge(mech{lap(5)}, "train")
	var be *ledger.BudgetError
	if !errors.Is(err, account.ErrBudgetExceeded) || !errors.As(err, &be) || be.Group != "train" {
		t.Fatalf("charge past the budget: %v, want a BudgetError for group train", err)
	}
	for _, want := range []string{`"train"`, "ε = 11", "budget ε = 10", "over", "by 1", "new ledger"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	l.Close()

	// Lowered on purpose, for this run: the ocp group's 4 is past it, and
	// the open still succeeds.
	l, err = ledger.OpenRun(path, ledger.RunBudget{New: account.Budget{Epsilon: 2, Delta: 1e-3}, SetEpsilon: true})
	if err != nil {
		t.Fatalf("a lowered budget below another group's spend: %v", err)
	}
	if want := (account.Budget{Epsilon: 2, Delta: 1e-5}); l.Budget() != want || l.Meta().Budget != created {
		t.Errorf("in force %+v, stored %+v; want %+v and %+v", l.Budget(), l.Meta().Budget, want, created)
	}
	if _, err := l.Charge(mech{lap(1)}, "new"); err != nil {
		t.Errorf("a fresh group within the lowered budget: %v", err)
	}
	if _, err := l.Charge(mech{lap(0.1)}, "ocp"); !errors.Is(err, account.ErrBudgetExceeded) || !strings.Contains(err.Error(), "lowered") {
		t.Errorf("a group past the lowered budget: %v", err)
	}
	l.Close()

	for _, rb := range []ledger.RunBudget{
		{New: account.Budget{Epsilon: 11, Delta: 1e-5}, SetEpsilon: true},
		{New: account.Budget{Epsilon: 1, Delta: 1e-4}, SetEpsilon: true, SetDelta: true},
	} {
		if _, err := ledger.OpenRun(path, rb); err == nil || !strings.Contains(err.Error(), "cannot be raised") || !strings.Contains(err.Error(), path) {
			t.Errorf("raising the budget to %+v: %v", rb.New, err)
		}
	}
	if _, err := ledger.OpenRun(filepath.Join(t.TempDir(), "bad.db"), ledger.RunBudget{}); err == nil {
		t.Error("a new ledger without a budget was created")
	}
	l, err = ledger.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.Budget() != created || l.Len() != 4 {
		t.Errorf("stored budget %+v, %d entries; want %+v, 4", l.Budget(), l.Len(), created)
	}
}
