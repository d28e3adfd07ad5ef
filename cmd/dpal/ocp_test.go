package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOCPJSON(t *testing.T) {
	for _, alg := range []string{"ftl", "igd", "giga"} {
		t.Run(alg, func(t *testing.T) {
			out, _, err := runCLI(t, "", "ocp", "--algorithm", alg, "--records", "2000", "--seed", "3", "--json", "--no-progress")
			if err != nil {
				t.Fatal(err)
			}
			var s ocpSummary
			if err := json.Unmarshal([]byte(out), &s); err != nil {
				t.Fatalf("%v in %s", err, out)
			}
			if s.Privacy == nil || s.Privacy.ChargedEpsilon > 1+1e-9 || s.Privacy.ChargedEpsilon < 0.999 || s.Privacy.ChargedEpsilon < s.Privacy.ExactEpsilon {
				t.Fatalf("privacy %+v", s.Privacy)
			}
			if s.Ledger == nil || len(s.Ledger.Entries) != 1 {
				t.Fatalf("want one ledger entry for the whole run, got %+v", s.Ledger)
			}
			if alg == "ftl" && (s.Regret == nil || s.TestMSE == nil) {
				t.Fatal("ftl: no regret or MSE")
			}
			if alg != "ftl" && s.TestAccuracy == nil {
				t.Fatal("no test accuracy")
			}
		})
	}
}

func TestOCPOutAndLedgerFile(t *testing.T) {
	dir := t.TempDir()
	outPath, ledPath := filepath.Join(dir, "x.jsonl"), filepath.Join(dir, "l.db")
	args := []string{"ocp", "--records", "300", "--seed", "1", "--out", outPath, "--ledger", ledPath, "--no-progress"}
	if _, _, err := runCLI(t, "", args...); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(outPath)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(string(b), "\n"); lines != 299 {
		t.Fatalf("%d released iterates, want T − 1 = 299", lines)
	}
	// A second run on the same records finds the budget spent (--force
	// lets it replace the first run's --out, which it would otherwise
	// refuse first).
	if _, _, err := runCLI(t, "", append(args, "--force")...); err == nil || !strings.Contains(err.Error(), "budget exceeded") {
		t.Fatalf("second run: %v", err)
	}
}

func TestOCPBadArguments(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--algorithm", "sgd"}, "--algorithm"},
		{[]string{"--loss", "logistic"}, "ftl is for the squared loss"},
		{[]string{"--epsilon", "0"}, "--epsilon"},
		{[]string{"--delta", "1"}, "--delta"},
		{[]string{"--data", "beijing", "--algorithm", "igd"}, "regression set"},
		{[]string{"--data", "/no/such/file"}, "not a readable file"},
		{[]string{"--records", "1"}, "need at least 2"},
		{[]string{"--algorithm", "giga", "--loss", "hinge"}, "hinge loss is not differentiable"},
	} {
		t.Run(c.want, func(t *testing.T) {
			_, _, err := runCLI(t, "", append([]string{"ocp", "--no-progress"}, c.args...)...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}

// A budget below the run's charge stops it before anything is released.
func TestOCPBudgetTooSmall(t *testing.T) {
	dir := t.TempDir()
	outPath := filepath.Join(dir, "x.jsonl")
	_, _, err := runCLI(t, "", "ocp", "--records", "300", "--seed", "1", "--out", outPath,
		"--ledger", filepath.Join(dir, "l.db"), "--budget-epsilon", "0.5", "--no-progress")
	if err == nil || !strings.Contains(err.Error(), "budget exceeded") {
		t.Fatalf("error %v, want the budget exceeded", err)
	}
	if b, err := os.ReadFile(outPath); err == nil && len(b) > 0 {
		t.Fatalf("released %d bytes despite the refused charge", len(b))
	}
}
