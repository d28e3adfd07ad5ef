package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runStreamCLI runs `dpal stream args...` with stdin.
func runStreamCLI(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	return runCLI(t, stdin, append([]string{"stream"}, args...)...)
}

func TestStreamDemoJSON(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	for _, args := range [][]string{
		{"--selector", "bernoulli", "--policy", "flmb"},
		{"--selector", "exponential", "--policy", "flsw", "--calibration", "slab"},
	} {
		args = append(args, "--window", "5", "--eps-select", "1", "--eps-grad", "1",
			"--label-budget", "100", "--seed", "7", "--json")
		out, _, err := runStreamCLI(t, "", args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		var got map[string]any
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("output is not one JSON object: %v\n%s", err, out)
		}
		for _, k := range []string{"test_error", "labels", "observed", "releases", "epsilon_per_record", "baseline_batch_error", "seed"} {
			if _, ok := got[k]; !ok {
				t.Errorf("%v: summary lacks %q", args, k)
			}
		}
		if got["labels"].(float64) != 100 || got["seed"].(float64) != 7 {
			t.Errorf("labels %v, seed %v", got["labels"], got["seed"])
		}
		if e := got["epsilon_per_record"].(float64); e < 2-1e-9 || e > 2+1e-9 {
			t.Errorf("epsilon_per_record = %v, want 2", e)
		}
		if e := got["test_error"].(float64); e < 0 || e > 1 {
			t.Errorf("test_error = %v", e)
		}
		if b := got["baseline_batch_error"].(float64); b > 0.2 {
			t.Errorf("baseline batch error %v, want a working SVM", b)
		}
	}
	// The baseline is cached: the cache directory now holds it.
	dir, _ := os.UserCacheDir()
	if m, _ := filepath.Glob(filepath.Join(dir, "dpal", "stream-baseline-*.json")); len(m) != 1 {
		t.Errorf("baseline cache files: %v", m)
	}
	// The human summary names test error, labels and the ledger.
	out, _, err := runStreamCLI(t, "", "--seed", "1", "--label-budget", "50", "--no-baseline")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"test error", "labels", "stream/batched", "seed"} {
		if !strings.Contains(out, want) {
			t.Errorf("human output lacks %q:\n%s", want, out)
		}
	}
}

// TestStreamEvents runs event mode on a small CSV/JSONL stream with a
// labels file, checks the JSON lines, and that saving and resuming in two
// halves gives the uninterrupted run's output.
func TestStreamEvents(t *testing.T) {
	dir := t.TempDir()
	var events, labels strings.Builder
	for i := range 60 {
		a, b := float64(i%7)/10-0.3, float64(i%5)/10-0.2
		if i%2 == 0 {
			fmt.Fprintf(&events, "%g,%g\n", a, b)
		} else {
			fmt.Fprintf(&events, `{"x": [%g, %g]}`+"\n", a, b)
		}
		y := 1
		if a+b < 0 {
			y = -1
		}
		fmt.Fprintf(&labels, "%d\n", y)
	}
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	evAll := write("events.csv", "# two features\n"+events.String()+"1,NaN\n")
	labAll := write("labels.csv", labels.String()+"1\n")
	common := []string{"--policy", "flsw", "--window", "3", "--seed", "5", "--labels"}

	out, errOut, err := runStreamCLI(t, "", append(common, labAll, "--input", evAll, "--json")...)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	counts := map[string]int{}
	for _, ln := range lines {
		var rec map[string]any
		if err := json.Unmarshal([]byte(ln), &rec); err != nil {
			t.Fatalf("bad JSON line %q: %v", ln, err)
		}
		counts[rec["type"].(string)]++
		if rec["type"] == "rejected" && rec["line"].(float64) != 62 {
			t.Errorf("rejected line %v, want 62", rec["line"])
		}
	}
	if counts["request"] == 0 || counts["release"] == 0 || counts["rejected"] != 1 {
		t.Errorf("record counts %v", counts)
	}
	var sum map[string]any
	if err := json.Unmarshal([]byte(errOut), &sum); err != nil || sum["observed"].(float64) != 60 {
		t.Errorf("summary on stderr: %v %q", err, errOut)
	}

	// Two halves with --save-state / --resume give the same lines.
	lines1 := strings.SplitAfter(events.String(), "\n")
	labs := strings.SplitAfter(labels.String(), "\n")
	ev1, ev2 := write("ev1", strings.Join(lines1[:31], "")), write("ev2", strings.Join(lines1[31:], "")+"1,NaN\n")
	lb1, lb2 := write("lb1", strings.Join(labs[:31], "")), write("lb2", strings.Join(labs[31:], "")+"1\n")
	state := filepath.Join(dir, "state.json")
	out1, _, err := runStreamCLI(t, "", append(common, lb1, "--input", ev1, "--save-state", state)...)
	if err != nil {
		t.Fatal(err)
	}
	out2, _, err := runStreamCLI(t, "", append(common, lb2, "--input", ev2, "--resume", state)...)
	if err != nil {
		t.Fatal(err)
	}
	// Line numbers restart in the second file; compare everything else.
	strip := func(s string) []string {
		var out []string
		for _, ln := range strings.Split(strings.TrimSpace(s), "\n") {
			var rec map[string]any
			_ = json.Unmarshal([]byte(ln), &rec)
			delete(rec, "line")
			b, _ := json.Marshal(rec)
			out = append(out, string(b))
		}
		return out
	}
	if a, b := strip(out), strip(out1+out2); strings.Join(a, "\n") != strings.Join(b, "\n") {
		t.Errorf("resumed output differs:\nwhole:\n%s\nhalves:\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}

	// Requests only, from stdin, without labels; then the answers arrive
	// and a resumed run takes them.
	out, _, err = runStreamCLI(t, events.String(), "--input", "-", "--seed", "1", "--window", "2", "--save-state", state)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, `"release"`) || !strings.Contains(out, `"request"`) {
		t.Errorf("requests-only output:\n%s", out)
	}
	var answers strings.Builder
	for _, ln := range strings.Split(strings.TrimSpace(out), "\n") {
		var rec struct{ ID uint64 }
		_ = json.Unmarshal([]byte(ln), &rec)
		fmt.Fprintf(&answers, `{"id": %d, "y": 1}`+"\n", rec.ID)
	}
	ans := write("answers.jsonl", answers.String())
	out, errOut, err = runStreamCLI(t, "", "--input", ev2, "--resume", state, "--answers", ans, "--seed", "1", "--json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(errOut), &sum); err != nil || sum["labels"].(float64) != float64(strings.Count(answers.String(), "\n")) {
		t.Errorf("after answers: %v %s", err, errOut)
	}
	if !strings.Contains(out, `"release"`) {
		t.Errorf("no release after the answers:\n%s", out)
	}
}

func TestStreamBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--selector", "magic"},
		{"--policy", "sometimes"},
		{"--dataset", "iris"},
		{"--eps-grad", "0"},
		{"--dataset", "csv"},
		{"--input", "/nonexistent/events.csv"},
		{"--selector", "exponential", "--calibration", "scale"},
		{"--answers", "/dev/null"},
	} {
		if _, _, err := runStreamCLI(t, "", append(args, "--no-baseline", "--seed", "1")...); err == nil {
			t.Errorf("%v: accepted", args)
		}
	}
}
