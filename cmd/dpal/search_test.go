package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// runSearchCLI runs `dpal search args...` and returns stdout.
func runSearchCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, _, err := runCLI(t, "", append([]string{"search"}, args...)...)
	return out, err
}

// writeScores writes n scores i/n·t_low with one anomaly at star.
func writeScores(t *testing.T, n, star int, indexed bool) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("# test scores\n")
	for i := range n {
		x := 0.9 * float64(i%97) / 97
		if i == star {
			x = 3
		}
		if indexed {
			fmt.Fprintf(&b, "%d,%v\n", 1000+i, x)
		} else {
			fmt.Fprintf(&b, "%v\n", x)
		}
	}
	path := filepath.Join(t.TempDir(), "scores.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestSearchCLIJSON(t *testing.T) {
	for _, c := range []struct {
		oracle  string
		indexed bool
	}{{"noisy-max", false}, {"binarized", true}, {"rr", false}, {"mean", false}} {
		path := writeScores(t, 500, 123, c.indexed)
		out, err := runSearchCLI(t, "--scores", path, "--t-low", "1", "--t-high", "2", "--oracle", c.oracle,
			"--epsilon-answer", "2", "--epsilon", "200", "--halt-posterior", "0.95", "--seed", "9", "--json")
		if err != nil {
			t.Fatalf("%s: %v", c.oracle, err)
		}
		var got map[string]any
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%s: not one JSON object: %v\n%s", c.oracle, err, out)
		}
		for _, k := range []string{"top", "posterior_top", "queries", "epsilon_spent", "halted_by", "seed", "ledger"} {
			if _, ok := got[k]; !ok {
				t.Errorf("%s: output lacks %q", c.oracle, k)
			}
		}
		want := 123.0
		if c.indexed {
			want = 1123
		}
		top := got["top"].([]any)
		if c.oracle != "mean" && top[0].(float64) != want {
			t.Errorf("%s: top %v, want %v first (halted by %v)", c.oracle, top, want, got["halted_by"])
		}
		if q, e := got["queries"].(float64), got["epsilon_spent"].(float64); math.Abs(2*q-e) > 1e-9 {
			t.Errorf("%s: %v queries but ε spent %v", c.oracle, q, e)
		}
	}
}

// TestSearchCLISecure checks that without --seed the search runs on the
// secure source and reports no seed.
func TestSearchCLISecure(t *testing.T) {
	path := writeScores(t, 200, 50, false)
	out, err := runSearchCLI(t, "--scores", path, "--t-low", "1", "--t-high", "2", "--epsilon-answer", "3",
		"--halt-posterior", "0.99", "--epsilon", "300", "--json")
	if err != nil || strings.Contains(out, `"seed"`) || !strings.Contains(out, `"top"`) {
		t.Fatalf("%v\n%s", err, out)
	}
}

func TestSearchCLIBudgetAndSplit(t *testing.T) {
	path := writeScores(t, 300, 7, false)
	out, err := runSearchCLI(t, "--scores", path, "--t-low", "1", "--t-high", "2", "--epsilon-answer", "0.3",
		"--epsilon", "1", "--seed", "1", "--json")
	if err != nil || !strings.Contains(out, `"halted_by": "budget"`) || !strings.Contains(out, `"queries": 3`) {
		t.Fatalf("budget: %v\n%s", err, out)
	}
	post := filepath.Join(t.TempDir(), "posterior.csv")
	if _, err := runSearchCLI(t, "--scores", path, "--t-low", "1", "--t-high", "2", "--epsilon-answer", "1",
		"--epsilon", "5", "--seed", "1", "--posterior-out", post); err != nil {
		t.Fatal(err)
	}
	f, err := parseScores(mustOpen(t, post))
	if err != nil || len(f.Scores) != 300 {
		t.Fatalf("posterior file: %v", err)
	}
	if body, _ := os.ReadFile(post); !strings.Contains(string(body), "\n# seed 1\n") {
		t.Fatalf("posterior file does not record the seed:\n%.300s", body)
	}
	total := 0.0
	for _, x := range f.Scores {
		total += x
	}
	if math.Abs(total-1) > 1e-9 {
		t.Fatalf("posterior sums to %v", total)
	}
	out, err = runSearchCLI(t, "--scores", path, "--t-low", "1", "--t-high", "2", "--epsilon-answer", "1",
		"--epsilon", "20", "--subsets", "3", "--seed", "1", "--json")
	if err != nil || !strings.Contains(out, `"subsets"`) {
		t.Fatalf("split: %v\n%s", err, out)
	}
}

// TestSearchCLIDefaultBudget checks that without --epsilon the search runs
// on the finite default b = 100·epsilon-answer, warns on stderr and states the worst case.
func TestSearchCLIDefaultBudget(t *testing.T) {
	path := writeScores(t, 300, 7, false)
	post := filepath.Join(t.TempDir(), "posterior.csv")
	stdout, stderr, err := runCLI(t, "", "search", "--scores", path, "--t-low", "1", "--t-high", "2",
		"--epsilon-answer", "0.05", "--halt-posterior", "0.999999", "--posterior-out", post, "--json")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr, "level=WARN") || !strings.Contains(stderr, "no --epsilon") {
		t.Errorf("no warning on stderr: %q", stderr)
	}
	var got struct {
		Budget        float64 `json:"budget"`
		BudgetDefault bool    `json:"budget_default"`
		WorstCase     float64 `json:"worst_case_epsilon"`
		Spent         float64 `json:"epsilon_spent"`
		Queries       int     `json:"queries"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatal(err)
	}
	if math.Abs(got.Budget-5) > 1e-12 || !got.BudgetDefault || got.WorstCase != got.Budget ||
		got.Queries > defaultBudgetAnswers || got.Spent > got.WorstCase*(1+1e-9) {
		t.Errorf("default budget: %+v", got)
	}
	if body, _ := os.ReadFile(post); !strings.Contains(string(body), "# seed none") {
		t.Errorf("unseeded posterior file does not say so:\n%.300s", body)
	}
	_, stderr, err = runCLI(t, "", "search", "--scores", path, "--t-low", "1", "--t-high", "2",
		"--epsilon-answer", "1", "--epsilon", "3", "--seed", "1")
	if err != nil || strings.Contains(stderr, "WARN") {
		t.Errorf("explicit budget: %v, stderr %q", err, stderr)
	}
}

func mustOpen(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestSearchCLIErrors(t *testing.T) {
	dir := t.TempDir()
	file := func(name, body string) string { return writeTemp(t, dir, name, body) }
	good := file("good.csv", "0.1\n3\n0.2\n")
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"thresholds equal", []string{"--scores", good, "--t-low", "2", "--t-high", "2", "--epsilon-answer", "1"}, "t_low < t_high"},
		{"thresholds reversed", []string{"--scores", good, "--t-low", "3", "--t-high", "2", "--epsilon-answer", "1"}, "t_low < t_high"},
		{"epsilon zero", []string{"--scores", good, "--t-low", "1", "--t-high", "2", "--epsilon-answer", "0"}, "epsilon"},
		{"epsilon NaN", []string{"--scores", good, "--t-low", "1", "--t-high", "2", "--epsilon-answer", "NaN"}, "epsilon"},
		{"t-low NaN", []string{"--scores", good, "--t-low", "NaN", "--t-high", "2", "--epsilon-answer", "1"}, "finite"},
		{"missing epsilon", []string{"--scores", good, "--t-low", "1", "--t-high", "2"}, "--epsilon-answer is required"},
		{"negative score", []string{"--scores", file("neg.csv", "0.1\n3\n-1\n"), "--t-low", "1", "--t-high", "2", "--epsilon-answer", "1"}, "line 3: score -1 is negative"},
		{"NaN score", []string{"--scores", file("nan.csv", "0.1\nNaN\n3\n"), "--t-low", "1", "--t-high", "2", "--epsilon-answer", "1"}, "line 2: score NaN"},
		{"gap score", []string{"--scores", file("gap.csv", "0.1\n1.5\n3\n"), "--t-low", "1", "--t-high", "2", "--epsilon-answer", "1"}, "line 2: score 1 (1.5): between"},
		{"no anomaly", []string{"--scores", file("none.csv", "0.1\n0.5\n"), "--t-low", "1", "--t-high", "2", "--epsilon-answer", "1"}, "no score reaches t_high"},
		{"two anomalies", []string{"--scores", file("two.csv", "3\n0.5\n4\n"), "--t-low", "1", "--t-high", "2", "--epsilon-answer", "1"}, "lines 1, 3"},
		{"bad oracle", []string{"--scores", good, "--t-low", "1", "--t-high", "2", "--epsilon-answer", "1", "--oracle", "x"}, "unknown oracle"},
		{"bad alpha", []string{"--scores", good, "--t-low", "1", "--t-high", "2", "--epsilon-answer", "1", "--halt-posterior", "1.5"}, "α"},
		{"zero budget", []string{"--scores", good, "--t-low", "1", "--t-high", "2", "--epsilon-answer", "1", "--epsilon", "0"}, "--epsilon must be > 0"},
		{"budget below one answer", []string{"--scores", good, "--t-low", "1", "--t-high", "2", "--epsilon-answer", "1", "--epsilon", "0.5"}, "below one answer's ε"},
		{"budget below one answer, subsets", []string{"--scores", file("four.csv", "0.1\n3\n0.2\n4\n"), "--t-low", "1", "--t-high", "2",
			"--epsilon-answer", "1", "--epsilon", "0.5", "--subsets", "2"}, "below one answer's ε"},
		{"missing scores file", []string{"--scores", filepath.Join(dir, "absent.csv"), "--t-low", "1", "--t-high", "2", "--epsilon-answer", "1"}, "--scores: open"},
		{"posterior dir missing", []string{"--scores", good, "--t-low", "1", "--t-high", "2", "--epsilon-answer", "1",
			"--posterior-out", filepath.Join(dir, "no", "such", "dir", "f.csv")}, "no such file or directory"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := runSearchCLI(t, c.args...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestParseScores(t *testing.T) {
	sf, err := parseScores(strings.NewReader("# h\n7, 0.5\n\n3,2.5\n"))
	if err != nil || len(sf.Scores) != 2 || sf.Labels[0] != 7 || sf.Labels[1] != 3 || sf.Lines[1] != 4 {
		t.Fatalf("%+v %v", sf, err)
	}
	for body, want := range map[string]string{
		"1\n2,3\n":     "line 2: mixes",
		"1,1\n1,2\n":   "line 2: index 1 repeats line 1",
		"a\n1\n":       "line 1: score \"a\"",
		"1,2,3\n":      "line 1: want a score",
		"-1,2\n3,4\n":  "line 1: index",
		"1\n":          "at least 2",
		"1\n+Inf\n":    "line 2: score +Inf is not finite",
		"0.5\n1e999\n": "line 2: score",
		"0.5\n3\n" + strings.Repeat("1", maxScoreLine+1) + "\n": "line 3: longer than 1048576 bytes",
	} {
		if _, err := parseScores(strings.NewReader(body)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", body, err, want)
		}
	}
}

func FuzzParseScores(f *testing.F) {
	for _, s := range []string{"1\n2\n", "0,1\n1,2.5\n", "# x\n\n3\n4\n", "1,2,3", "NaN\n1", "-0\n0\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		sf, err := parseScores(strings.NewReader(body))
		if err != nil {
			return
		}
		if len(sf.Scores) < 2 || len(sf.Labels) != len(sf.Scores) || len(sf.Lines) != len(sf.Scores) {
			t.Fatalf("inconsistent parse %+v", sf)
		}
		for i, x := range sf.Scores {
			if !(x >= 0) || math.IsInf(x, 0) {
				t.Fatalf("accepted score %v on line %d", x, sf.Lines[i])
			}
		}
	})
}

// TestSearchHugeAnomalyScore: an anomaly score of 1e300 at t_low = 1 (beyond
// the Laplace release's range) is capped by the oracle, so the search runs
// and its spend is the ledger's.
func TestSearchHugeAnomalyScore(t *testing.T) {
	scores := writeTemp(t, t.TempDir(), "big.csv", strings.Repeat("0.1\n", 30)+"1e300\n")
	out, err := runSearchCLI(t, "--scores", scores, "--t-low", "1", "--t-high", "2", "--epsilon-answer", "0.5", "--epsilon", "5", "--seed", "1", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Top          []int64 `json:"top"`
		EpsilonSpent float64 `json:"epsilon_spent"`
		Ledger       struct {
			Groups []struct {
				Epsilon float64 `json:"epsilon"`
			} `json:"groups"`
		} `json:"ledger"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if res.Top[0] != 30 || res.EpsilonSpent == 0 || len(res.Ledger.Groups) != 1 || res.Ledger.Groups[0].Epsilon != res.EpsilonSpent {
		t.Errorf("top %v, spent %v, ledger %+v", res.Top, res.EpsilonSpent, res.Ledger)
	}
}

// TestSearchOldSpellings: the spellings before the flag vocabulary still
// work for one release, with the old meanings and a warning: --epsilon
// without --epsilon-answer is one answer's ε, and --budget the whole
// search's; the same run in the new spelling prints the same JSON.
func TestSearchOldSpellings(t *testing.T) {
	path := writeScores(t, 300, 7, false)
	base := []string{"search", "--scores", path, "--t-low", "1", "--t-high", "2", "--seed", "1", "--json"}
	oldOut, oldErr, err := runCLI(t, "", append(base, "--epsilon", "0.3", "--budget", "1")...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(oldErr, "--budget is deprecated") || !strings.Contains(oldErr, "read as the cost of one answer") {
		t.Errorf("old spellings: no warnings on stderr: %q", oldErr)
	}
	newOut, newErr, err := runCLI(t, "", append(base, "--epsilon-answer", "0.3", "--epsilon", "1")...)
	if err != nil || newErr != "" {
		t.Fatalf("new spellings: %v, stderr %q", err, newErr)
	}
	if strip := func(s string) string { return regexp.MustCompile(`"(created|time)": "[^"]*"`).ReplaceAllString(s, "") }; strip(oldOut) != strip(newOut) {
		t.Errorf("old and new spellings differ:\n%s\n%s", oldOut, newOut)
	}
	if _, _, err := runCLI(t, "", append(base, "--epsilon-answer", "0.3", "--epsilon", "1", "--budget", "2")...); err == nil ||
		!strings.Contains(err.Error(), "both given") {
		t.Errorf("--budget beside --epsilon: %v", err)
	}
}
