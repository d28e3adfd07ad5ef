package main

// Tests of issue 24's "Resource limits and silent defaults": sizes and
// targets refused up front, flags that used to fall back to a default
// silently, the default δ, the rejected-events limit, and the tree
// update's new ledger.

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestStreamTreeNewLedger: a new --ledger file for the tree update gets
// the update's δ (it was created with δ = 0, and the learner refused it).
func TestStreamTreeNewLedger(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	path := filepath.Join(t.TempDir(), "ledger.db")
	out, _, err := runStreamCLI(t, "", "--update", "tree", "--label-budget", "200", "--ledger", path,
		"--seed", "1", "--no-baseline", "--json")
	if err != nil {
		t.Fatalf("dpal stream --update tree --ledger NEW: %v", err)
	}
	sum := summaryJSON(t, out)
	budget := sum["ledger"].(map[string]any)["meta"].(map[string]any)["budget"].(map[string]any)
	if budget["delta"] != 1e-5 {
		t.Errorf("new ledger's budget %v, want δ = 1e-5", budget)
	}
	// Event mode opens the file the same way.
	events := strings.Repeat("0.1,0.2\n0.3,-0.1\n", 10)
	path2 := filepath.Join(t.TempDir(), "ledger.db")
	if _, _, err := runStreamCLI(t, events, "--input", "-", "--out", filepath.Join(t.TempDir(), "out.jsonl"),
		"--update", "tree", "--label-budget", "200", "--ledger", path2, "--seed", "1"); err != nil {
		t.Fatalf("event mode, --update tree --ledger NEW: %v", err)
	}
}
