package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/internal/crashtest"
)

// The event-mode crash test's child is this test binary run with
// -test.run of TestStreamCrashChild and crashArgsEnv holding the
// arguments of `dpal stream` as a JSON array.
const (
	crashArgsEnv = "DPAL_STREAM_CRASH_ARGS"
	crashSeedEnv = "DPAL_STREAM_CRASH_SEED" // replays a run's kill times
	crashKills   = 50
	crashEvents  = 800
)

// TestStreamCrashChild runs `dpal stream` with the arguments of
// crashArgsEnv until it ends or is killed.
func TestStreamCrashChild(t *testing.T) {
	args := crashChildArgs(t, crashArgsEnv, "TestStreamCrash")
	if _, _, err := runStreamCLI(t, "", args...); err != nil {
		t.Fatal(err)
	}
}

// crashChildArgs returns the arguments a kill test's child finds in env
// (a JSON array), and skips the test when it is not that child of parent.
func crashChildArgs(t *testing.T, env, parent string) []string {
	t.Helper()
	raw := os.Getenv(env)
	if raw == "" {
		t.Skip("the child of " + parent)
	}
	var args []string
	if err := json.Unmarshal([]byte(raw), &args); err != nil {
		t.Fatal(err)
	}
	return args
}

// TestStreamCrash SIGKILLs event-mode runs with --save-state, --ledger
// and --out at random moments and resumes each one with the same command
// until it finishes. The finished --out must hold exactly the lines of an
// uninterrupted run (meta lines aside): every request and release once,
// none lost and none issued again with another model; and the ledger
// must hold the learner's two charges, never a replay's.
func TestStreamCrash(t *testing.T) {
	if os.Getenv(crashArgsEnv) != "" {
		t.Skip("in the child")
	}
	rng := crashtest.Rand(t, crashSeedEnv)
	dir := t.TempDir()
	input, labels := crashInput(t, dir)
	config := []string{"--policy", "flsw", "--window", "4", "--checkpoint-every", "32"}
	common := []string{"--input", input, "--labels", labels, "--seed", "9"}

	refOut := filepath.Join(dir, "ref.jsonl")
	t0 := time.Now()
	if _, _, err := runStreamCLI(t, "", slices.Concat(config, common, []string{"--out", refOut})...); err != nil {
		t.Fatal(err)
	}
	want := crashLines(t, refOut)
	t.Logf("uninterrupted run: %v", time.Since(t0))

	start := time.Now()
	kills, trials, resumes, skipped := 0, 0, 0, 0
	for kills < crashKills {
		trials++
		tdir := t.TempDir()
		files := []string{"--out", filepath.Join(tdir, "out.jsonl"), "--save-state", filepath.Join(tdir, "state"),
			"--ledger", filepath.Join(tdir, "ledger.db")}
		args := func() []string {
			if _, err := os.Stat(files[3]); err == nil {
				resumes++
				return slices.Concat(common, files, []string{"--resume", files[3]})
			}
			// Starting over after a kill before the first checkpoint
			// replaces the --out it began, which takes --force.
			return slices.Concat(config, common, files, []string{"--force"})
		}
		for range 1 + rng.IntN(3) {
			raw, _ := json.Marshal(args())
			child := crashtest.Child("TestStreamCrashChild", crashArgsEnv+"="+string(raw))
			if crashtest.Kill(t, child, time.Duration(5+rng.IntN(60))*time.Millisecond) {
				kills++
			}
		}
		out, _, err := runStreamCLI(t, "", append(args(), "--json")...)
		if err != nil {
			t.Fatalf("trial %d: the last resume: %v", trials, err)
		}
		var sum struct {
			Skipped int `json:"skipped_lines"`
		}
		_ = json.Unmarshal([]byte(out), &sum)
		skipped += sum.Skipped
		if got := crashLines(t, files[1]); !slices.Equal(got, want) {
			t.Fatalf("trial %d: --out after kills and resumes differs from the uninterrupted run:\n%s", trials, firstDiff(got, want))
		}
		checkCrashLedger(t, files[5])
	}
	t.Logf("%d kills in %d trials (%d resumes, %d event lines skipped as consumed) in %v: every finished --out equals the uninterrupted run's %d lines",
		kills, trials, resumes, skipped, time.Since(start).Round(time.Millisecond), len(want))
}

// crashInput writes an event file with a comment, a bad line and labels.
func crashInput(t *testing.T, dir string) (input, labels string) {
	var ev, lb strings.Builder
	ev.WriteString("# crash test events\n")
	for i := range crashEvents {
		a, b := float64(i%7)/10-0.3, float64(i%5)/10-0.2
		fmt.Fprintf(&ev, "%g,%g\n", a, b)
		if i == 100 {
			ev.WriteString("1,NaN\n")
			lb.WriteString("1\n")
		}
		y := 1
		if a+b < 0 {
			y = -1
		}
		fmt.Fprintf(&lb, "%d\n", y)
	}
	input, labels = filepath.Join(dir, "events.csv"), filepath.Join(dir, "labels.csv")
	if err := os.WriteFile(input, []byte(ev.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(labels, []byte(lb.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return input, labels
}

// crashLines returns the lines of an --out file other than meta lines.
func crashLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		var rec struct{ Type string }
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("%s: line %q: %v", path, l, err)
		}
		if rec.Type != "meta" {
			out = append(out, l)
		}
	}
	return out
}

func firstDiff(got, want []string) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("line %d: got %s\nwant %s", i+1, got[i], want[i])
		}
	}
	return fmt.Sprintf("%d lines, want %d", len(got), len(want))
}

// checkCrashLedger checks that the ledger holds one selection and one
// update charge: resumes never charged again.
func checkCrashLedger(t *testing.T, path string) {
	t.Helper()
	led, err := ledger.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	defer led.Close()
	entries, err := led.Entries()
	if err != nil {
		t.Fatal(err)
	}
	var onces []string
	for _, e := range entries {
		onces = append(onces, e.Once)
	}
	if len(entries) != 2 || !strings.HasSuffix(onces[0], "/selection") || !strings.HasSuffix(onces[1], "/update") {
		t.Fatalf("ledger entries %v, want one selection and one update charge", onces)
	}
}
