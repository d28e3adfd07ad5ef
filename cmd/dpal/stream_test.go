package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpal-dev/dpal/active/stream"
	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/session"
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
		{"--update", "tree", "--policy", "flmb"},
	} {
		args = append(args, "--window", "5", "--epsilon-select", "1", "--epsilon-grad", "1",
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
	write := func(name, s string) string { return writeTemp(t, dir, name, s) }
	evAll := write("events.csv", "# two features\n"+events.String()+"1,NaN\n")
	labAll := write("labels.csv", labels.String()+"1\n")
	common := []string{"--seed", "5", "--labels"}
	config := []string{"--policy", "flsw", "--window", "3"}

	out, errOut, err := runStreamCLI(t, "", append(append(config, common...), labAll, "--input", evAll, "--json")...)
	if err != nil {
		t.Fatal(err)
	}
	recs := jsonLines(t, out)
	counts := map[string]int{}
	for _, rec := range recs {
		counts[rec["type"].(string)]++
		if rec["type"] == "rejected" && (rec["line"].(float64) != 62 || rec["error"] != "invalid-input") {
			t.Errorf("rejected record %v, want line 62 and the class invalid-input", rec)
		}
	}
	if recs[0]["type"] != "meta" || recs[0]["seed"] != 5.0 || recs[0]["policy"] != "flsw" {
		t.Errorf("first line %v, want the meta line with seed 5", recs[0])
	}
	if counts["meta"] != 1 || counts["request"] == 0 || counts["release"] == 0 || counts["rejected"] != 1 {
		t.Errorf("record counts %v", counts)
	}
	// The rejection's details are private: operator log only.
	if strings.Contains(out, "NaN") || !strings.Contains(errOut, "not finite") {
		t.Errorf("rejection details leak to --out or miss the log:\nout:\n%s\nstderr:\n%s", out, errOut)
	}
	if sum := eventSummary(t, out); sum["observed"].(float64) != 60 || sum["seed"] != 5.0 {
		t.Errorf("summary line: %v", sum)
	}

	// Two halves with --save-state / --resume give the same lines.
	lines1 := strings.SplitAfter(events.String(), "\n")
	labs := strings.SplitAfter(labels.String(), "\n")
	ev1, ev2 := write("ev1", strings.Join(lines1[:31], "")), write("ev2", strings.Join(lines1[31:], "")+"1,NaN\n")
	lb1, lb2 := write("lb1", strings.Join(labs[:31], "")), write("lb2", strings.Join(labs[31:], "")+"1\n")
	state := filepath.Join(dir, "state.json")
	out1, _, err := runStreamCLI(t, "", append(append(config, common...), lb1, "--input", ev1, "--save-state", state)...)
	if err != nil {
		t.Fatal(err)
	}
	out2, _, err := runStreamCLI(t, "", append(common, lb2, "--input", ev2, "--resume", state)...)
	if err != nil {
		t.Fatal(err)
	}
	if m := jsonLines(t, out2)[0]; m["seed"] != 5.0 || m["resumed_from"] != state || m["policy"] != "flsw" {
		t.Errorf("resumed meta line %v", m)
	}
	// Line numbers restart in the second file; compare everything else.
	strip := func(s string) []string {
		var out []string
		for _, rec := range jsonLines(t, s) {
			if rec["type"] == "meta" || rec["type"] == "summary" {
				continue
			}
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
	// and a resumed run takes them. The new learner replaces the old
	// state, which takes --force.
	out, _, err = runStreamCLI(t, events.String(), "--input", "-", "--seed", "1", "--window", "2", "--save-state", state, "--force")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, `"release"`) || !strings.Contains(out, `"request"`) {
		t.Errorf("requests-only output:\n%s", out)
	}
	var answers strings.Builder
	for _, rec := range jsonLines(t, out) {
		if rec["type"] == "request" {
			fmt.Fprintf(&answers, `{"id": %v, "y": 1}`+"\n", rec["id"])
		}
	}
	ans := write("answers.jsonl", answers.String())
	out, _, err = runStreamCLI(t, "", "--input", ev2, "--resume", state, "--answers", ans, "--seed", "1", "--json")
	if err != nil {
		t.Fatal(err)
	}
	if sum := eventSummary(t, out); sum["labels"].(float64) != float64(strings.Count(answers.String(), "\n")) {
		t.Errorf("after answers: %v", sum)
	}
	if !strings.Contains(out, `"release"`) {
		t.Errorf("no release after the answers:\n%s", out)
	}
}

// jsonLines decodes JSON lines.
func jsonLines(t *testing.T, s string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, ln := range strings.Split(strings.TrimSpace(s), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(ln), &rec); err != nil {
			t.Fatalf("bad JSON line %q: %v", ln, err)
		}
		out = append(out, rec)
	}
	return out
}

// eventSummary returns the last of an event run's JSON lines on stdout
// (--out - --json), which must be its summary.
func eventSummary(t *testing.T, out string) map[string]any {
	t.Helper()
	recs := jsonLines(t, out)
	if last := recs[len(recs)-1]; last["type"] == "summary" {
		return last
	}
	t.Fatalf("the last line on stdout is not the summary:\n%s", out)
	return nil
}

// summaryJSON decodes the --json summary that follows any log lines.
func summaryJSON(t *testing.T, s string) map[string]any {
	t.Helper()
	var sum map[string]any
	i := strings.Index(s, "\n{")
	if strings.HasPrefix(s, "{") {
		i = -1
	}
	if err := json.Unmarshal([]byte(s[i+1:]), &sum); err != nil {
		t.Fatalf("no JSON summary in %q: %v", s, err)
	}
	return sum
}

func TestStreamBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--selector", "magic"},
		{"--policy", "sometimes"},
		{"--dataset", "iris"},
		{"--epsilon-grad", "0"},
		{"--dataset", "csv"},
		{"--input", "/nonexistent/events.csv"},
		{"--selector", "exponential", "--calibration", "scale"},
		{"--answers", "/dev/null"},
		{"--dataset", "mnist09", "--kdd-paper-encoding"},
		{"--events", "-1"},
		{"--b", "NaN"},
		{"--b", "-1"},
		{"--window", "1000000000"},
		{"--input", "-", "--dim", "-2"},
		{"--update", "tree"}, // no label budget: no horizon
		{"--update", "forest", "--label-budget", "100"},
	} {
		if _, _, err := runStreamCLI(t, "", append(args, "--no-baseline", "--seed", "1")...); err == nil {
			t.Errorf("%v: accepted", args)
		}
	}
}

// TestStreamResumeChecks: a dataset-mode resume must continue the saved
// stream order under the saved seed and takes no configuration flags; the
// resumed run then reproduces the uninterrupted one.
func TestStreamResumeChecks(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state.json")
	base := []string{"--no-baseline", "--json"}
	if _, _, err := runStreamCLI(t, "", append(base, "--seed", "1", "--events", "500", "--label-budget", "40", "--save-state", state)...); err != nil {
		t.Fatal(err)
	}
	evState := filepath.Join(dir, "events-state.json")
	if _, _, err := runStreamCLI(t, "0.1,0.2\n", "--input", "-", "--seed", "1", "--save-state", evState); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--seed", "2"}, "seeded with 1, resumed with 2"},
		{[]string{"--seed", "1", "--shuffle", "9"}, "the permutation of seed 9"},
		{nil, "this run would use file order"},
		{[]string{"--seed", "1", "--window", "3", "--epsilon-select", "2"}, "remove --window, --epsilon-select"},
		{[]string{"--seed", "1", "--kdd-paper-encoding"}, "state has dimension 116, the events 120"},
		{[]string{"--seed", "1", "--resume", evState}, "state has dimension 2"},
		{[]string{"--input", "-", "--seed", "1"}, "written in dataset mode"},
	} {
		args := append(append([]string{"--resume", state}, base...), tc.args...)
		_, _, err := runStreamCLI(t, "0.1,0.2\n", args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
	// The same order without the seed: fresh secure randomness, no seed reported.
	out, _, err := runStreamCLI(t, "", append(base, "--resume", state, "--shuffle", "1", "--events", "600")...)
	if err != nil {
		t.Fatal(err)
	}
	if sum := summaryJSON(t, out); sum["seed"] != nil || sum["shuffle_seed"] != 1.0 || sum["observed"] != 600.0 {
		t.Errorf("secure resume summary: seed %v, shuffle %v, observed %v", sum["seed"], sum["shuffle_seed"], sum["observed"])
	}
	// With the seed, resuming reproduces the uninterrupted run.
	out, _, err = runStreamCLI(t, "", append(base, "--resume", state, "--seed", "1", "--events", "1500")...)
	if err != nil {
		t.Fatal(err)
	}
	whole, _, err := runStreamCLI(t, "", append(base, "--seed", "1", "--events", "1500", "--label-budget", "40")...)
	if err != nil {
		t.Fatal(err)
	}
	got, want := summaryJSON(t, out), summaryJSON(t, whole)
	for _, k := range []string{"test_error", "labels", "observed", "releases", "seed", "epsilon_per_record"} {
		if fmt.Sprint(got[k]) != fmt.Sprint(want[k]) {
			t.Errorf("resumed %s = %v, uninterrupted %v", k, got[k], want[k])
		}
	}
}

// TestStreamEventsBudgetStops: a budget error is not a rejected event: it
// stops the run with an error, after writing the state.
func TestStreamEventsBudgetStops(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state.json")
	var events, labels strings.Builder
	for i := range 30 {
		fmt.Fprintf(&events, "%g,%g\n", float64(i%5)/10-0.2, 0.3)
		labels.WriteString("1\n")
	}
	// Requests only: the selection is charged, no update yet.
	if _, _, err := runStreamCLI(t, events.String(), "--input", "-", "--policy", "flsw", "--window", "1",
		"--seed", "3", "--save-state", state); err != nil {
		t.Fatal(err)
	}
	// Cap the saved ledger at eps_s: the first update cannot be paid for.
	editState(t, state, func(m map[string]any) {
		m["ledger"].(map[string]any)["meta"].(map[string]any)["budget"].(map[string]any)["epsilon"] = 1.0
	})
	// New events: the first 30 are the state's and would be skipped.
	events.Reset()
	for i := range 30 {
		fmt.Fprintf(&events, "%g,%g\n", float64(i%5)/10-0.2, -0.3)
	}
	labPath := filepath.Join(dir, "labels")
	if err := os.WriteFile(labPath, []byte(labels.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, err := runStreamCLI(t, events.String(), "--input", "-", "--labels", labPath, "--seed", "3",
		"--resume", state, "--save-state", state)
	if !errors.Is(err, account.ErrBudgetExceeded) {
		t.Fatalf("error %v, want ErrBudgetExceeded", err)
	}
	if strings.Contains(out, `"rejected"`) {
		t.Errorf("budget error reported as a rejected event:\n%s", out)
	}
	var after struct{ Observed, Labelled int }
	if err := json.Unmarshal(readState(t, state), &after); err != nil || after.Observed <= 30 || after.Labelled == 0 {
		t.Errorf("state after the error: %+v, %v (want the accepted events saved)", after, err)
	}
}

// TestStreamRejectPrivate: with --norm-mode reject an over-norm event gets
// a public line without its norm; the operator log has the details.
func TestStreamRejectPrivate(t *testing.T) {
	out, errOut, err := runStreamCLI(t, "0.1,0.2\n3,4\n", "--input", "-", "--norm-mode", "reject")
	if err != nil {
		t.Fatal(err)
	}
	recs := jsonLines(t, out)
	if recs[0]["type"] != "meta" || recs[0]["seed"] != nil {
		t.Errorf("unseeded meta line %v", recs[0])
	}
	if last := recs[len(recs)-1]; last["type"] != "rejected" || last["line"] != 2.0 || len(last) != 3 {
		t.Errorf("rejected record %v", last)
	}
	if strings.Contains(out, "norm 5") || !strings.Contains(errOut, "norm 5 exceeds") {
		t.Errorf("details in --out or missing from the log:\n%s\n%s", out, errOut)
	}
}

// TestStreamResumeOtherData: resuming on another training file of the same
// shape is refused (its first Observed rows were never seen).
func TestStreamResumeOtherData(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, shift float64) string {
		var b strings.Builder
		for i := range 200 {
			fmt.Fprintf(&b, "%g,%g,%d\n", float64(i%9)/20-shift, float64(i%4)/10, 2*(i%2)-1)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b, test := write("a.csv", 0.1), write("b.csv", 0.2), write("test.csv", 0)
	state := filepath.Join(dir, "state.json")
	common := []string{"--dataset", "csv", "--test", test, "--no-baseline", "--seed", "2"}
	if _, _, err := runStreamCLI(t, "", append(common, "--train", a, "--events", "50", "--save-state", state)...); err != nil {
		t.Fatal(err)
	}
	_, _, err := runStreamCLI(t, "", append(common, "--train", b, "--resume", state)...)
	if err == nil || !strings.Contains(err.Error(), "pass the same --dataset") {
		t.Errorf("resume on other data: %v", err)
	}
	if _, _, err := runStreamCLI(t, "", append(common, "--train", a, "--resume", state)...); err != nil {
		t.Errorf("resume on the same data: %v", err)
	}
}

func TestStreamCSVZeroLabels(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := range 40 {
		x := float64(i%10)/20 - 0.2
		y := 0
		if x > 0 {
			y = 1
		}
		fmt.Fprintf(&b, "%g,%g,%d\n", x, 0.1, y)
	}
	path := filepath.Join(dir, "zero-one.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"--dataset", "csv", "--train", path, "--test", path, "--no-baseline", "--seed", "1", "--json"}
	if _, _, err := runStreamCLI(t, "", args...); err == nil || !strings.Contains(err.Error(), "label") {
		t.Fatalf("0/1 labels without --zero-is-negative: err = %v, want a label error", err)
	}
	if _, _, err := runStreamCLI(t, "", append(args, "--zero-is-negative")...); err != nil {
		t.Fatalf("with --zero-is-negative: %v", err)
	}
}

// TestStreamEventsDetectorGeometry: in event mode the detector's radius,
// λ and window follow the events' dimension (--dim or the first valid
// event), as in dataset mode, not the provisional one the settings are
// validated with.
func TestStreamEventsDetectorGeometry(t *testing.T) {
	dir := t.TempDir()
	in := writeTemp(t, dir, "ev.csv", strings.Repeat("0.1,0.2,0.1,0.1\n", 5))
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"first event", nil},
		{"--dim", []string{"--dim", "4"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := runStreamCLI(t, "", append([]string{"--input", in, "--out", filepath.Join(dir, tc.name+".jsonl"), "--seed", "1", "--json"}, tc.args...)...)
			if err != nil {
				t.Fatal(err)
			}
			var sum struct {
				Config stream.Config `json:"config"`
			}
			if err := json.Unmarshal([]byte(out), &sum); err != nil {
				t.Fatal(err)
			}
			want := stream.DetectorConfig(4)
			if c := sum.Config; c.Radius != want.Radius || c.Lambda != want.Lambda || c.Window != want.Window {
				t.Errorf("radius %v λ %v window %v, want %v %v %v", c.Radius, c.Lambda, c.Window, want.Radius, want.Lambda, want.Window)
			}
		})
	}
}

// TestStreamEventsFailures: an event run that accepts nothing fails, the
// dimension comes from --dim or the first valid event, and a run that
// fails midway (labels run out) still prints what it spent.
func TestStreamEventsFailures(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string { return writeTemp(t, dir, name, s) }
	valid := strings.Repeat("0.1,0.2\n", 20)
	badFirst := write("bad-first.csv", "3,3,3\n"+valid)
	out, _, err := runStreamCLI(t, "", "--input", badFirst, "--norm-mode", "reject", "--seed", "1", "--json")
	if err != nil {
		t.Fatal(err)
	}
	if sum := eventSummary(t, out); sum["observed"] != 20.0 || sum["rejected"] != 1.0 || sum["dim"] != 2.0 {
		t.Errorf("an invalid first line fixed the run: %v", sum)
	}
	evPath := write("ev.csv", valid)
	if _, _, err := runStreamCLI(t, "", "--input", evPath, "--dim", "3", "--seed", "1"); err == nil ||
		!strings.Contains(err.Error(), "no event accepted") {
		t.Errorf("--dim 3 on 2-dimensional events: %v, want 'no event accepted'", err)
	}
	short := write("short.csv", "1\n1\n1\n")
	out, _, err = runStreamCLI(t, "", "--input", evPath, "--labels", short, "--out", filepath.Join(dir, "o.jsonl"), "--seed", "1")
	if err == nil || !strings.Contains(err.Error(), "fewer labels") {
		t.Fatalf("short --labels: %v", err)
	}
	if !strings.Contains(out, "of 3 events observed") || !strings.Contains(out, "stream/observed") {
		t.Errorf("the failed run does not say what it spent:\n%s", out)
	}
}

// readState returns the learner's state inside the state file at path,
// checking its MAC.
func readState(t *testing.T, path string) []byte {
	t.Helper()
	key, err := session.StateKey()
	if err != nil {
		t.Fatal(err)
	}
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	b, err := session.ReadState(fh, key)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// editState changes the state file at path with edit and seals it again
// with the tests' key: what an operator holding the key could do.
func editState(t *testing.T, path string, edit func(map[string]any)) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(readState(t, path), &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	b, _ := json.Marshal(m)
	key, _ := session.StateKey()
	var buf bytes.Buffer
	if err := session.Seal(&buf, b, key); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestStreamDetectorDefaults: without --paper the learner is the Gaussian
// detector with the noise-rule window; --paper restores §5's settings.
func TestStreamDetectorDefaults(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		update string
		window int
	}{
		{"detector", nil, "gaussian", 200},
		{"paper", []string{"--paper"}, "gamma", 5},
		{"paper with window", []string{"--paper", "--window", "7"}, "gamma", 7},
		{"detector eps 4", []string{"--epsilon-grad", "4"}, "gaussian", 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, _, err := runStreamCLI(t, "", append([]string{"--events", "300", "--seed", "2", "--no-baseline", "--json"}, tc.args...)...)
			if err != nil {
				t.Fatal(err)
			}
			var sum struct {
				Config struct {
					Update string `json:"update"`
					Window int    `json:"window"`
				} `json:"config"`
				ConstantError *float64 `json:"constant_error"`
			}
			if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
				t.Fatal(err)
			}
			if sum.Config.Update != tc.update || sum.Config.Window != tc.window || sum.ConstantError == nil {
				t.Errorf("update %q window %d constant %v, want %q, %d and a constant error", sum.Config.Update, sum.Config.Window, sum.ConstantError, tc.update, tc.window)
			}
		})
	}
}

// TestStreamFinalShare: --final-share releases a final model whose ledger
// keeps the per-record ε at ε_s + ε_g, reports the last update's error
// beside it, and is refused without a label budget or in event mode.
func TestStreamFinalShare(t *testing.T) {
	stdout, _, err := runStreamCLI(t, "", "--events", "800", "--seed", "3", "--no-baseline", "--json", "--label-budget", "400", "--final-share", "0.5")
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		TestError        *float64 `json:"test_error"`
		LastUpdateError  *float64 `json:"last_update_error"`
		EpsilonPerRecord *float64 `json:"epsilon_per_record"`
	}
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.TestError == nil || sum.LastUpdateError == nil || sum.EpsilonPerRecord == nil || math.Abs(*sum.EpsilonPerRecord-2) > 1e-9 {
		t.Errorf("summary %s: want test and last-update errors and ε = 2", stdout)
	}
	for name, args := range map[string][]string{
		"no label budget": {"--events", "100", "--final-share", "0.5"},
		"event mode":      {"--input", "-", "--final-share", "0.5", "--label-budget", "10"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, _, err := runStreamCLI(t, "0.1,0.2\n", args...); err == nil {
				t.Error("accepted")
			}
		})
	}
}
