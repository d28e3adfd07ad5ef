package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// pathFixture writes an event file, labels and a score file in a new
// directory, and a regular file "blocker": a path under it can never be
// created, even by root.
type pathFixture struct{ dir, events, labels, scores, blocker string }

func newPathFixture(t *testing.T) pathFixture {
	t.Helper()
	dir := t.TempDir()
	f := pathFixture{dir: dir, events: filepath.Join(dir, "events.csv"), labels: filepath.Join(dir, "labels.csv"),
		blocker: filepath.Join(dir, "blocker")}
	var ev, lb strings.Builder
	for i := range 40 {
		ev.WriteString([]string{"0.1,0.2\n", "-0.2,0.1\n", "0.3,-0.1\n", "-0.1,-0.3\n"}[i%4])
		lb.WriteString([]string{"1\n", "-1\n"}[i%2])
	}
	for path, s := range map[string]string{f.events: ev.String(), f.labels: lb.String(), f.blocker: "x"} {
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	f.scores = writeScores(t, 200, 17, false)
	return f
}

func (f pathFixture) unchanged(t *testing.T) {
	t.Helper()
	if b, err := os.ReadFile(f.events); err != nil || !strings.HasPrefix(string(b), "0.1,0.2\n") || len(b) < 300 {
		t.Errorf("the events file was changed: %q, %v", b, err)
	}
	if b, err := os.ReadFile(f.scores); err != nil || !strings.HasPrefix(string(b), "# test scores") {
		t.Errorf("the scores file was changed: %.40q, %v", b, err)
	}
}

// TestOutputsNeverClobberInputs: an output that resolves to an input (by
// name, another spelling or a symlink) is refused and the input kept.
func TestOutputsNeverClobberInputs(t *testing.T) {
	f := newPathFixture(t)
	link := filepath.Join(f.dir, "link.csv")
	if err := os.Symlink(f.events, link); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(f.dir, "state")
	if _, _, err := runStreamCLI(t, "", "--input", f.events, "--out", filepath.Join(f.dir, "o"), "--save-state", state); err != nil {
		t.Fatal(err)
	}
	search := []string{"search", "--scores", f.scores, "--t-low", "1", "--t-high", "2", "--epsilon-answer", "1", "--epsilon", "20"}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"--out is --input", []string{"stream", "--input", f.events, "--out", f.events}, "--out"},
		{"--out is a symlink to --input", []string{"stream", "--input", f.events, "--out", link}, "--input"},
		{"--out spelled otherwise", []string{"stream", "--input", f.events, "--out", f.dir + "/./events.csv"}, "--input"},
		{"--save-state is --labels", []string{"stream", "--input", f.events, "--labels", f.labels, "--save-state", f.labels}, "--labels"},
		{"--ledger is --input", []string{"stream", "--input", f.events, "--ledger", link}, "--ledger"},
		{"--out is --resume", []string{"stream", "--input", f.events, "--resume", state, "--out", state}, "--resume"},
		{"--out is --save-state", []string{"stream", "--input", f.events, "--out", state, "--save-state", state}, "same file"},
		{"dataset --save-state is --train", []string{"stream", "--dataset", "csv", "--train", f.events, "--test", f.events, "--save-state", f.events}, "--train"},
		{"--posterior-out is --scores", append(search, "--posterior-out", f.scores), "--scores"},
		{"search --ledger is --scores", append(search, "--ledger", f.scores), "--scores"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := runCLI(t, "", tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "overwritten") && !strings.Contains(err.Error(), "same file") {
				t.Errorf("got %v, want a refusal naming %s", err, tc.want)
			}
			if out != "" {
				t.Errorf("wrote %q before refusing", out)
			}
			f.unchanged(t)
		})
	}
}

// TestOutputsProbedFirst: an output that cannot be written fails the run
// before any event is read or any line written; so does an invalid
// setting (the meta line is not written first).
func TestOutputsProbedFirst(t *testing.T) {
	f := newPathFixture(t)
	nowhere := filepath.Join(f.blocker, "x")
	out := filepath.Join(f.dir, "out.jsonl")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"--save-state", []string{"stream", "--input", f.events, "--out", out, "--save-state", nowhere}, "--save-state"},
		{"--ledger", []string{"stream", "--input", f.events, "--out", out, "--ledger", nowhere}, "--ledger"},
		{"--out", []string{"stream", "--input", f.events, "--out", nowhere}, "--out"},
		{"--out a directory", []string{"stream", "--input", f.events, "--out", f.dir}, "directory"},
		{"--epsilon-grad", []string{"stream", "--input", f.events, "--out", out, "--epsilon-grad", "-1"}, "eps"},
		{"--epsilon-grad NaN", []string{"stream", "--input", f.events, "--out", out, "--epsilon-grad", "NaN"}, "eps"},
		{"--ledger --budget", []string{"stream", "--input", f.events, "--out", out, "--ledger", filepath.Join(f.dir, "l.db"), "--budget-epsilon", "-1"}, "budget"},
		{"--checkpoint-every", []string{"stream", "--input", f.events, "--out", out, "--checkpoint-every", "0"}, "--checkpoint-every"},
		{"--replay without --resume", []string{"stream", "--input", f.events, "--out", out, "--replay"}, "--resume"},
		{"dataset --save-state", []string{"stream", "--save-state", nowhere, "--events", "10"}, "--save-state"},
		{"--posterior-out", []string{"search", "--scores", f.scores, "--t-low", "1", "--t-high", "2", "--epsilon-answer", "1", "--epsilon", "20", "--posterior-out", nowhere}, "--posterior-out"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(out)
			stdout, _, err := runCLI(t, "", tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error naming %s", err, tc.want)
			}
			if b, _ := os.ReadFile(out); stdout != "" || len(b) > 0 {
				t.Errorf("wrote before failing: stdout %q, --out %q", stdout, b)
			}
		})
	}
	for repro, quick := range map[string]string{"stream": "--quick", "search": "--runs=1"} {
		t.Run("repro "+repro, func(t *testing.T) {
			start := time.Now()
			_, _, err := runCLI(t, "", "repro", repro, quick, "--seed", "1", "--no-progress", "--out", nowhere)
			if err == nil || !strings.Contains(err.Error(), "--out") || time.Since(start) > time.Second {
				t.Errorf("got %v after %v, want an --out error at once", err, time.Since(start))
			}
		})
	}
}

// TestStreamStateIntegrity: a state edited without the key is refused; an
// edit resealed with the key that empties the ledger and raises the
// budget is refused by the budget check.
func TestStreamStateIntegrity(t *testing.T) {
	f := newPathFixture(t)
	state := filepath.Join(f.dir, "state")
	if _, _, err := runStreamCLI(t, "", "--input", f.events, "--labels", f.labels, "--window", "2", "--seed", "1", "--save-state", state); err != nil {
		t.Fatal(err)
	}
	more := filepath.Join(f.dir, "more.csv")
	os.WriteFile(more, []byte("0.05,0.05\n"), 0o600)
	resume := []string{"--input", more, "--resume", state, "--seed", "1"}
	sealed, _ := os.ReadFile(state)
	edited := strings.Replace(string(sealed), `"observed":40`, `"observed":39`, 1)
	if edited == string(sealed) {
		t.Fatal("no edit made")
	}
	os.WriteFile(state, []byte(edited), 0o600)
	if _, _, err := runStreamCLI(t, "", resume...); err == nil || !strings.Contains(err.Error(), "integrity") {
		t.Errorf("edited state: %v, want an integrity error", err)
	}
	os.WriteFile(state, sealed, 0o600)
	editState(t, state, func(m map[string]any) {
		led := m["ledger"].(map[string]any)
		led["entries"] = []any{}
		led["meta"].(map[string]any)["budget"].(map[string]any)["epsilon"] = 1e9
	})
	if _, _, err := runStreamCLI(t, "", resume...); err == nil || !strings.Contains(err.Error(), "exceeds") {
		t.Errorf("resealed state with budget 1e9: %v, want a refusal", err)
	}
}

// TestStreamEventReplay: resuming on the input the state consumed skips
// it (nothing charged, nothing written twice); --replay feeds it again
// and charges it again, and the summary says so.
func TestStreamEventReplay(t *testing.T) {
	f := newPathFixture(t)
	state, led := filepath.Join(f.dir, "state"), filepath.Join(f.dir, "ledger.db")
	base := []string{"--input", f.events, "--labels", f.labels, "--seed", "1", "--ledger", led, "--save-state", state, "--json"}
	// The gamma update's pure ε doubles exactly when its records are fed
	// twice (the Gaussian update's zCDP composes below twice its ε).
	first, _, err := runStreamCLI(t, "", append(base, "--update", "gamma", "--window", "2", "--budget-epsilon", "10", "--out", filepath.Join(f.dir, "o1"))...)
	if err != nil {
		t.Fatal(err)
	}
	once := summaryJSON(t, first)
	out2 := filepath.Join(f.dir, "o2")
	again, _, err := runStreamCLI(t, "", append(base, "--resume", state, "--out", out2)...)
	if err != nil {
		t.Fatal(err)
	}
	skip := summaryJSON(t, again)
	if skip["skipped_lines"] != 40.0 || skip["observed"] != 40.0 || skip["epsilon_per_record"] != once["epsilon_per_record"] {
		t.Errorf("resume on the same input: %v", skip)
	}
	if lines := crashLines(t, out2); len(lines) != 0 {
		t.Errorf("resume on the consumed input wrote %v", lines)
	}
	replay, _, err := runStreamCLI(t, "", append(base, "--resume", state, "--out", out2, "--replay")...)
	if err != nil {
		t.Fatal(err)
	}
	rep := summaryJSON(t, replay)
	if rep["replays"] != 1.0 || rep["observed"] != 80.0 || rep["epsilon_per_record"] != 2*once["epsilon_per_record"].(float64) {
		t.Errorf("replay: %v, want 80 observed and twice the ε of %v", rep, once["epsilon_per_record"])
	}
	text, _, err := runCLI(t, "", "ledger", "show", "--store", led, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var show struct{ Entries []json.RawMessage }
	if err := json.Unmarshal([]byte(text), &show); err != nil || len(show.Entries) != 4 {
		t.Errorf("ledger after a replay: %d entries (%v), want 4: selection and update, twice", len(show.Entries), err)
	}
}
