package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPoolRunCSV(t *testing.T) {
	file := twoBlobsCSV(t, 1000)
	for _, acq := range []string{"entropy", "random"} {
		t.Run(acq, func(t *testing.T) {
			es := "1"
			if acq == "random" {
				es = "0"
			}
			led := filepath.Join(t.TempDir(), "ledger.db")
			out, _, err := runCLI(t, "", "pool", "run", "--data", "csv", "--file", file, "--acquisition", acq, "--selection", "topk",
				"--epsilon", "4", "--epsilon-select", es, "--initial", "200", "--queries", "100,100", "--batch", "50",
				"--epochs", "3", "--seed", "2", "--ledger", led, "--json")
			if err != nil {
				t.Fatal(err)
			}
			var got poolRunOutput
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			r := got.Result
			if got.Delta != 1e-5 || len(r.Rounds) != 3 || r.Privacy.MaxDeviation > 1e-9 {
				t.Errorf("δ %v, %d rounds, deviation %v", got.Delta, len(r.Rounds), r.Privacy.MaxDeviation)
			}
			for _, g := range r.Privacy.Trained {
				if math.Abs(g.Ledger.Max-4) > 1e-9 {
					t.Errorf("%s at ε %v, want 4", g.Group, g.Ledger.Max)
				}
			}
			if r.TestAccuracy < 0.9 {
				t.Errorf("test accuracy %v", r.TestAccuracy)
			}
			// The same records cannot pay twice: a second run on the ledger is refused.
			_, _, err = runCLI(t, "", "pool", "run", "--data", "csv", "--file", file, "--acquisition", acq, "--selection", "topk",
				"--epsilon", "4", "--epsilon-select", es, "--initial", "200", "--queries", "100,100", "--batch", "50",
				"--epochs", "3", "--seed", "2", "--ledger", led)
			if err == nil || !strings.Contains(err.Error(), "budget") {
				t.Errorf("second run on the same ledger: %v", err)
			}
		})
	}
}

func TestPoolRunTextAndOracle(t *testing.T) {
	file := twoBlobsCSV(t, 300)
	answers := strings.Repeat("1\n", 60)
	out, stderr, err := runCLI(t, answers, "pool", "run", "--data", "csv", "--file", file, "--acquisition", "margin",
		"--not-dp", "--selection", "topk", "--epsilon", "4", "--initial", "50", "--queries", "10", "--batch", "25", "--epochs", "2",
		"--seed", "1", "--labels-from", "-")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"margin (not DP)", "not-selected", "none: the selections released exact top-k"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(stderr, "label of pool record") != 60 {
		t.Errorf("%d prompts, want 60:\n%s", strings.Count(stderr, "label of pool record"), stderr)
	}
}

func TestPoolRunErrors(t *testing.T) {
	file := twoBlobsCSV(t, 300)
	answers := filepath.Join(t.TempDir(), "answers.txt")
	if err := os.WriteFile(answers, []byte("# one answer only\n1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"pool", "run", "--data", "csv", "--file", file, "--epsilon", "4", "--initial", "50", "--queries", "10", "--batch", "25"}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no data", []string{"pool", "run", "--epsilon", "4"}, "--data"},
		{"default queries exceed a small pool", []string{"pool", "run", "--data", "csv", "--file", file, "--epsilon", "4", "--initial", "50"}, "must be at least the expected labels 3050"},
		{"bad acquisition", append(base, "--acquisition", "coreset"), "--acquisition"},
		{"private top-k without ε_Sel", append(base, "--acquisition", "lc", "--selection", "topk"), "needs ε_Sel > 0"},
		{"random with ε_Sel", append(base, "--acquisition", "random", "--epsilon-select", "1", "--selection", "topk"), "ε_Sel = 0"},
		{"poisson with ε_Sel", append(base, "--epsilon-select", "1"), "plan it with ε_Sel = 0"},
		{"poisson, untrusted labeler", append(base, "--labeler", "untrusted"), "needs a trusted labeler"},
		{"poisson, p-max 0", append(base, "--p-max", "0"), "0 < p_max <= 1"},
		{"poisson, p-min above p-max", append(base, "--p-min", "0.5"), "p_min <= p_max"},
		{"poisson, threshold above 1", append(base, "--threshold", "2"), "score in [0, 1]"},
		{"poisson, not DP", append(base, "--not-dp"), "private as it is"},
		{"bad selection", append(base, "--selection", "best"), "--selection"},
		{"pool too small", append(base, "--acquisition", "random", "--pool-size", "55"), "pool size 55 must be at least"},
		{"top-k pool too small", append(base, "--acquisition", "random", "--selection", "topk", "--pool-size", "55"), "the plan labels 60"},
		{"short answers", append(base, "--acquisition", "random", "--labels-from", "-"), "no more answers"},
		{"short answer file", append(base, "--acquisition", "random", "--labels-from", answers), "no more answers"},
		{"missing answer file", append(base, "--acquisition", "random", "--labels-from", answers+".none"), "--labels-from"},
		{"ledger is the input", append(base, "--acquisition", "random", "--ledger", file), "--ledger"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := runCLI(t, "1\n", tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestReproPoolQuick(t *testing.T) {
	file := twoBlobsCSV(t, 1000)
	out := t.TempDir()
	stdout, _, err := runCLI(t, "", "repro", "pool", "--quick", "--data", "csv", "--file", file, "--experiments", "table4", "--out", out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"majority class", "entropy (DP), continual", "entropy (DP), step-amplification"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	for _, f := range []string{"rows.csv", "points.csv", "summary.json"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	for _, args := range [][]string{{"--data", "cifar10"}, {"--experiments", "table9"}} {
		if _, _, err := runCLI(t, "", append([]string{"repro", "pool", "--quick", "--out", out}, args...)...); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}

// TestPoolRunPoissonJSON pins the CLI contract of `dpal pool run --json`
// under the default Poisson selection: one object with test_accuracy,
// balanced_accuracy, labels (asked), epsilon_max and epsilon_min over every
// pool record (read from the ledger), delta and selection.
func TestPoolRunPoissonJSON(t *testing.T) {
	file := twoBlobsCSV(t, 1000)
	out, _, err := runCLI(t, "", "pool", "run", "--data", "csv", "--file", file, "--epsilon", "4", "--delta", "1e-5",
		"--initial", "200", "--queries", "100,100", "--batch", "50", "--epochs", "3", "--p-max", "0.3", "--seed", "2", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, k := range []string{"test_accuracy", "balanced_accuracy", "labels", "epsilon_max", "epsilon_min", "delta", "selection"} {
		if _, ok := got[k]; !ok {
			t.Errorf("no %q in the output", k)
		}
	}
	if got["selection"] != "poisson" || got["delta"] != 1e-5 {
		t.Errorf("selection %v, δ %v", got["selection"], got["delta"])
	}
	emax, emin, labels := got["epsilon_max"].(float64), got["epsilon_min"].(float64), got["labels"].(float64)
	if emax > 4 || emax < 4*(1-1e-4) || emin != emax {
		t.Errorf("ε over the pool records %v…%v, want every record at the target 4", emin, emax)
	}
	if labels < 100 || labels != math.Trunc(labels) {
		t.Errorf("labels %v", labels)
	}
}
