package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestKAnonAccountCLI(t *testing.T) {
	t.Run("delta-json", func(t *testing.T) {
		out, _, err := runCLI(t, "", "kanon", "account", "--beta", "0.6", "--k", "100", "--epsilon", "1.416290731874155", "--json")
		if err != nil {
			t.Fatal(err)
		}
		var r struct {
			Epsilon, Delta float64
			NMax           int `json:"n_max"`
			NMin           int `json:"n_min"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		if r.NMax != 114 || r.NMin != 110 || !(r.Delta > 4.5e-13 && r.Delta < 4.52e-13) {
			t.Fatalf("got %+v", r)
		}
	})
	t.Run("inverses", func(t *testing.T) {
		for _, args := range [][]string{
			{"--beta", "0.1", "--k", "20"},
			{"--beta", "0.1", "--epsilon", "1", "--delta", "1e-8"},
			{"--k", "20", "--epsilon", "1"},
		} {
			out, _, err := runCLI(t, "", append([]string{"kanon", "account"}, args...)...)
			if err != nil || !strings.Contains(out, "-DP") {
				t.Errorf("%v: %q, %v", args, out, err)
			}
		}
	})
	t.Run("table", func(t *testing.T) {
		out, _, err := runCLI(t, "", "kanon", "account", "--table")
		if err != nil || strings.Count(out, "delta =") != 4 {
			t.Fatalf("%q, %v", out, err)
		}
	})
	t.Run("errors", func(t *testing.T) {
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"--beta", "0.1", "--k", "0", "--epsilon", "1"}, "k must be >= 1"},
			{[]string{"--beta", "1.5", "--k", "5", "--epsilon", "1"}, "0 < beta <= 1"},
			{[]string{"--beta", "0", "--k", "5"}, "0 < beta <= 1"},
			{[]string{"--beta", "1", "--k", "5", "--epsilon", "1"}, "no sampling"},
			{[]string{"--beta", "0.5", "--k", "5", "--epsilon", "0.5"}, "below -ln(1 - beta)"},
			{[]string{"--beta", "0.5"}, "give two of"},
			{[]string{"--beta", "0.5", "--k", "5", "--delta", "2"}, "0 < delta < 1"},
		} {
			_, _, err := runCLI(t, "", append([]string{"kanon", "account"}, c.args...)...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%v: error %v, want %q", c.args, err, c.want)
			}
		}
	})
}

func TestKAnonRunCLI(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := range 12 {
		for range 40 / (i + 1) {
			label := "alarm"
			if i%2 == 1 {
				label = "weather"
			}
			fmt.Fprintf(&b, "query number %d\t%s\n", i, label)
		}
	}
	logPath := filepath.Join(dir, "log.txt")
	if err := os.WriteFile(logPath, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	ledPath := filepath.Join(dir, "ledger.db")
	args := []string{"kanon", "run", "--log", logPath, "--beta", "0.3", "--k", "4", "--delta", "1e-2",
		"--labels-budget", "3", "--golden", "2", "--rounds", "1", "--seed", "3", "--ledger", ledPath, "--budget-epsilon", "100", "--budget-delta", "0.05", "--json"}
	out, _, err := runCLI(t, "", args...)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Private  bool
		Epsilon  float64
		Seed     uint64
		Released int
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if !res.Private || res.Seed != 3 || res.Released == 0 {
		t.Fatalf("got %+v", res)
	}
	// The ledger file remembers the charge: a second run on it is charged again.
	if _, _, err := runCLI(t, "", args...); err != nil {
		t.Fatal(err)
	}
	out, _, err = runCLI(t, "", "ledger", "show", "--store", ledPath, "--json")
	if err != nil || strings.Count(out, "sample-then-k-anonymise") < 2 {
		t.Fatalf("ledger after two runs: %v\n%s", err, out)
	}
	// By default a new ledger file holds exactly what one run charges: a
	// second run on it finds the budget spent.
	fresh := filepath.Join(dir, "fresh.db")
	base := []string{"kanon", "run", "--log", logPath, "--beta", "0.3", "--k", "4", "--delta", "1e-2",
		"--labels-budget", "3", "--golden", "2", "--rounds", "1", "--seed", "3"}
	if _, _, err := runCLI(t, "", append(base, "--ledger", fresh)...); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runCLI(t, "", append(base, "--ledger", fresh)...); err == nil || !strings.Contains(err.Error(), "budget") {
		t.Fatalf("second run on a ledger sized by the first: %v", err)
	}
	// --released-out writes the set; --stage-from continues from it and
	// learns what the run learned.
	relPath := filepath.Join(dir, "released.txt")
	full, _, err := runCLI(t, "", append(base, "--released-out", relPath, "--json")...)
	if err != nil {
		t.Fatal(err)
	}
	rel, err := os.ReadFile(relPath)
	if err != nil || len(rel) == 0 || !strings.HasSuffix(string(rel), "\n") {
		t.Fatalf("released file %q (%v)", rel, err)
	}
	cont, _, err := runCLI(t, "", append(base, "--stage-from", relPath, "--json")...)
	if err != nil || cont != full {
		t.Fatalf("--stage-from: %v\n%s\nwant\n%s", err, cont, full)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--log", logPath, "--stage-from", relPath, "--ledger", fresh}, "--stage-from continues"},
		{[]string{"--log", logPath, "--budget-epsilon", "1"}, "cap a --ledger FILE"},
		{[]string{"--log", logPath, "--baseline", "--beta", "1", "--k", "1", "--ledger", fresh}, "spends no budget"},
		{[]string{"--log", filepath.Join(dir, "missing.txt")}, "no such file"},
		{[]string{"--log", writeFile(t, dir, "bad.txt", "fine\n\xff\n")}, "line 2: not valid UTF-8"},
		{[]string{"--log", writeFile(t, dir, "empty.txt", "")}, "log is empty"},
		{[]string{"--log", logPath, "--k", "0"}, "k must be >= 1"},
		{[]string{"--log", logPath, "--beta", "1.5"}, "0 < beta <= 1"},
		{[]string{"--log", logPath, "--beta", "0"}, "0 < beta <= 1"},
		{[]string{"--log", writeFile(t, dir, "blank.txt", "\n \n")}, "log is empty"},
		{[]string{"--log", logPath, "--passes", "0"}, "passes >= 1"},
		{[]string{"--log", logPath, "--ranker", "dropout"}, "ranker must be"},
		{[]string{"--log", logPath, "--copies", "0"}, "copies"},
		{[]string{"--log", logPath, "--sketch-width", "100"}, "power of two"},
		{[]string{"--log", logPath, "--threshold", "noisy"}, `threshold must be "exact" or "dp"`},
		{[]string{"--log", logPath, "--threshold", "dp", "--epsilon-noise", "0"}, "epsilon must be finite and > 0"},
		{[]string{"--log", logPath, "--threshold", "dp", "--epsilon-noise", "-1"}, "epsilon must be finite and > 0"},
		{[]string{}, "--log is required"},
	} {
		_, _, err := runCLI(t, "", append([]string{"kanon", "run"}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.args, err, c.want)
		}
	}
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
