package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpal-dev/dpal/dp/account"
)

// TestSearchDurableLedger: runs against one --ledger file continue its
// ledger, stop with an error once its budget is spent, and cannot raise
// its budget; `dpal ledger show` prints what they spent.
func TestSearchDurableLedger(t *testing.T) {
	scores := writeScores(t, 200, 17, false)
	path := filepath.Join(t.TempDir(), "ledger.db")
	search := func(extra ...string) (string, error) {
		args := append([]string{"--scores", scores, "--t-low", "1", "--t-high", "2", "--epsilon-answer", "1",
			"--halt-posterior", "0", "--ledger", path, "--seed", "1", "--json"}, extra...)
		return runSearchCLI(t, args...)
	}
	spent := func(out string) float64 {
		var v struct {
			EpsilonSpent float64 `json:"epsilon_spent"`
		}
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("%v in %s", err, out)
		}
		return v.EpsilonSpent
	}
	out, err := search("--epsilon", "5", "--max-queries", "3")
	if err != nil || spent(out) != 3 {
		t.Fatalf("first run: %v, spent %v", err, out)
	}
	out, err = search("--max-queries", "10")
	if err != nil || spent(out) != 5 {
		t.Fatalf("second run (stored budget 5): %v\n%s", err, out)
	}
	if _, err := search(); !errors.Is(err, account.ErrBudgetExceeded) {
		t.Fatalf("third run: %v, want ErrBudgetExceeded", err)
	}
	if _, err := search("--budget-epsilon", "50"); err == nil || !strings.Contains(err.Error(), "cannot be raised") {
		t.Fatalf("raised budget: %v", err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"text", nil, []string{"5 entries", "search", "ε = 5 (δ = 0) of 5, 0 left, 5 charges"}},
		{"json", []string{"--json"}, []string{`"groups": [`, `"remaining": 0`, `"seq": 5`}},
		{"csv", []string{"--csv"}, []string{"seq,time,groups,mechanism", "\n\ngroup,epsilon,delta,charges,budget,remaining\nsearch,5,0,5,5,0\n"}},
		{"group", []string{"--group", "search", "--delta", "1e-6"}, []string{"(δ = 1e-06)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := runCLI(t, "", append([]string{"ledger", "show", "--store", path}, tc.args...)...)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
	for name, args := range map[string][]string{
		"missing file":  {"--store", path + ".missing"},
		"no store":      {},
		"unknown group": {"--store", path, "--group", "nope"},
		"json and csv":  {"--store", path, "--json", "--csv"},
		"bad delta":     {"--store", path, "--delta", "2"},
	} {
		t.Run("refuses "+name, func(t *testing.T) {
			if _, _, err := runCLI(t, "", append([]string{"ledger", "show"}, args...)...); err == nil {
				t.Error("want an error")
			}
		})
	}
}

// TestStreamDurableLedger: a second learner on the same --ledger file
// finds the records' budget spent and stops; a resumed learner (same run
// id) continues without paying twice.
func TestStreamDurableLedger(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ledger.db")
	state := filepath.Join(dir, "state.json")
	args := []string{"--paper", "--events", "400", "--label-budget", "20", "--seed", "1", "--no-baseline", "--ledger", path}
	if _, _, err := runStreamCLI(t, "", append(args, "--save-state", state)...); err != nil {
		t.Fatal(err)
	}
	show := func() string {
		out, _, err := runCLI(t, "", "ledger", "show", "--store", path, "--csv")
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	want := "stream/batched,2,0,2,2,0\nstream/observed,1,0,1,2,1\n"
	if out := show(); !strings.Contains(out, want) {
		t.Fatalf("ledger after one run:\n%s\nwant groups\n%s", out, want)
	}
	resume := []string{"--events", "800", "--seed", "1", "--no-baseline", "--ledger", path, "--resume", state}
	if _, _, err := runStreamCLI(t, "", resume...); err != nil {
		t.Fatalf("resume: %v", err)
	}
	if out := show(); !strings.Contains(out, want) {
		t.Fatalf("ledger after the resume:\n%s\nwant unchanged groups\n%s", out, want)
	}
	if _, _, err := runStreamCLI(t, "", args...); !errors.Is(err, account.ErrBudgetExceeded) {
		t.Fatalf("second learner: %v, want ErrBudgetExceeded", err)
	}
	if _, _, err := runStreamCLI(t, "", "--budget-epsilon", "3", "--events", "10", "--no-baseline"); err == nil {
		t.Error("--budget without --ledger accepted")
	}
}

// TestStreamEventsDurableLedger: event mode charges a --ledger file and
// releases it at the end, so the next run can open it at once.
func TestStreamEventsDurableLedger(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	var events strings.Builder
	for i := range 20 {
		fmt.Fprintf(&events, "0.1,0.1,%g\n", float64(i%3)/10)
	}
	for run := range 2 {
		_, _, err := runStreamCLI(t, events.String(), "--input", "-", "--out", filepath.Join(t.TempDir(), "out.jsonl"),
			"--seed", "2", "--ledger", path, "--budget-epsilon", "4")
		if err != nil {
			t.Fatalf("run %d: %v", run+1, err)
		}
	}
	out, _, err := runCLI(t, "", "ledger", "show", "--store", path, "--csv")
	if err != nil || !strings.Contains(out, "stream/observed,2,0,2,4,2\n") {
		t.Fatalf("ledger after two event runs (%v):\n%s", err, out)
	}
}
