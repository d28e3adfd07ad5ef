package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReproStreamQuickDemo(t *testing.T) {
	out := t.TempDir()
	stdout, stderr, err := runCLI(t, "", "repro", "stream", "--quick", "--seed", "3", "--perms", "1",
		"--figures", "3,4", "--no-progress", "--out", out)
	if err != nil {
		t.Fatalf("repro stream: %v\n%s", err, stderr)
	}
	for _, want := range []string{"demo (d=", "Bernoulli-FLMB", "NonPrivate-Batch", "cross-validated", "seed 3"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	for _, f := range []string{"demo/fig3_error_vs_labels.png", "demo/fig4_error_vs_batch_size.csv"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "demo/fig2_error_vs_updates.png")); err == nil {
		t.Error("figure 2 written although --figures 3,4")
	}
	b, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Seed      uint64   `json:"seed"`
		PermSeeds []uint64 `json:"perm_seeds"`
	}
	if err := json.Unmarshal(b, &sum); err != nil || sum.Seed != 3 || len(sum.PermSeeds) != 1 {
		t.Errorf("summary seeds %+v (%v)", sum, err)
	}
}

func TestReproStreamBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--datasets", "iris"}, `unknown dataset "iris"`},
		{[]string{"--figures", "7"}, "figure 7"},
		{[]string{"--epsilon-grad", "0"}, "eps-grad"},
		{[]string{"--radius", "-1"}, "radius"},
	} {
		args := append([]string{"repro", "stream", "--quick", "--seed", "1", "--no-progress", "--out", t.TempDir()}, tc.args...)
		_, _, err := runCLI(t, "", args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one containing %q", tc.args, err, tc.want)
		}
	}
}

// TestReproStreamDetector: --detector writes the update comparison (error
// vs ε_g and vs labels) with the ledger's per-record ε in its table.
func TestReproStreamDetector(t *testing.T) {
	out := t.TempDir()
	stdout, _, err := runCLI(t, "", "repro", "stream", "--quick", "--detector", "--seed", "1", "--no-progress", "--out", out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"gaussian ", "gamma ", "gaussian-noiseless", "record eps 2.0000"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	for _, f := range []string{"detector_error_vs_eps.csv", "detector_error_vs_labels.png", "detector.json"} {
		if _, err := os.Stat(filepath.Join(out, "demo", f)); err != nil {
			t.Error(err)
		}
	}
}
