package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger/pgstore/pgtest"
)

// TestPostgresLedger: --ledger postgres://… works as --ledger FILE does
// (runs continue one ledger and stop once its budget is spent), for the
// ledger the URL names, and `dpal ledger show --store postgres://…`
// prints it.
func TestPostgresLedger(t *testing.T) {
	u := pgtest.Start(t) + "&ledger=search"
	scores := writeScores(t, 200, 17, false)
	search := func(extra ...string) (string, error) {
		args := append([]string{"--scores", scores, "--t-low", "1", "--t-high", "2", "--epsilon-answer", "1",
			"--halt-posterior", "0", "--ledger", u, "--seed", "1", "--json"}, extra...)
		return runSearchCLI(t, args...)
	}
	if _, err := search("--epsilon", "5", "--max-queries", "3"); err != nil {
		t.Fatalf("first run: %v", err)
	}
	if _, err := search("--max-queries", "10"); err != nil {
		t.Fatalf("second run: %v", err)
	}
	if _, err := search(); !errors.Is(err, account.ErrBudgetExceeded) {
		t.Fatalf("third run: %v, want ErrBudgetExceeded", err)
	}
	out, _, err := runCLI(t, "", "ledger", "show", "--store", u)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ledger " + u + ": budget ε = 5", "5 entries", "ε = 5 (δ = 0) of 5, 0 left, 5 charges"} {
		if !strings.Contains(out, want) {
			t.Errorf("ledger show lacks %q:\n%s", want, out)
		}
	}
	if _, _, err := runCLI(t, "", "ledger", "show", "--store", strings.Replace(u, "ledger=search", "ledger=other", 1)); err == nil ||
		!strings.Contains(err.Error(), "holds no ledger of that name") {
		t.Errorf("ledger show of a missing ledger: %v", err)
	}
}
