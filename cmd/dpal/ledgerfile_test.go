package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// searchLedgerFile writes a durable ledger of three search answers and
// returns its path.
func searchLedgerFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "search.ledger")
	_, err := runSearchCLI(t, "--scores", writeScores(t, 200, 17, false), "--t-low", "1", "--t-high", "2", "--epsilon-answer", "1",
		"--halt-posterior", "0", "--ledger", path, "--seed", "1", "--max-queries", "3", "--epsilon", "5")
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// fileState is a file's bytes and modification time.
type fileState struct {
	b     []byte
	mtime time.Time
}

// freeze sets path's modification time to a fixed past instant (so that
// a write within the test's second still shows) and returns its state.
func freeze(t *testing.T, path string) fileState {
	t.Helper()
	past := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := os.Chtimes(path, past, past); err != nil {
		t.Fatal(err)
	}
	return stateOf(t, path)
}

func stateOf(t *testing.T, path string) fileState {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fileState{b, fi.ModTime()}
}

// untouched fails the test if path's bytes or mtime differ from was.
func untouched(t *testing.T, path string, was fileState, what string) {
	t.Helper()
	now := stateOf(t, path)
	if !bytes.Equal(now.b, was.b) || !now.mtime.Equal(was.mtime) {
		t.Errorf("%s changed %s: %d bytes (were %d, equal %v), mtime %v (was %v)",
			what, path, len(now.b), len(was.b), bytes.Equal(now.b, was.b), now.mtime, was.mtime)
	}
}

// TestLedgerShowReadOnly: `dpal ledger show` opens the file for reading
// only. As root a chmod 0444 does not stop a write, so the test proves it
// otherwise: the file's bytes and mtime stay as they were, and show runs
// while another process holds a shared lock on the file (a reader's
// flock; a writer needs the exclusive lock and would wait for it and
// fail). A missing file is an error and is not created; an empty file is
// an error naming it and stays empty.
func TestLedgerShowReadOnly(t *testing.T) {
	path := searchLedgerFile(t)
	was := freeze(t, path)
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if err := syscall.Flock(int(fh.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{nil, {"--json"}, {"--csv"}} {
		out, _, err := runCLI(t, "", append([]string{"ledger", "show", "--store", path}, args...)...)
		if err != nil || !strings.Contains(out, "search") {
			t.Fatalf("show %v while another reader holds the file: %v\n%s", args, err, out)
		}
	}
	untouched(t, path, was, "ledger show")
	syscall.Flock(int(fh.Fd()), syscall.LOCK_UN)

	missing := filepath.Join(t.TempDir(), "missing.ledger")
	if _, _, err := runCLI(t, "", "ledger", "show", "--store", missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing file: %v, want an error naming it", err)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("ledger show created the missing file")
	}
	empty := writeTemp(t, t.TempDir(), "empty.ledger", "")
	if _, _, err := runCLI(t, "", "ledger", "show", "--store", empty); err == nil || !strings.Contains(err.Error(), empty) || !strings.Contains(err.Error(), "empty") {
		t.Errorf("empty file: %v, want an error naming it as empty", err)
	}
	if fi, err := os.Stat(empty); err != nil || fi.Size() != 0 {
		t.Errorf("ledger show initialised the empty file: %v, %v", fi.Size(), err)
	}
}

// TestRefusedRunLeavesLedger: a run refused on a ledger another command
// wrote (another δ, a budget it would exceed) leaves its bytes and mtime
// as they were.
func TestRefusedRunLeavesLedger(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ocp.ledger")
	if _, _, err := runCLI(t, "", "ocp", "--records", "300", "--seed", "1", "--ledger", path, "--no-progress"); err != nil {
		t.Fatal(err)
	}
	file := twoBlobsCSV(t, 200)
	for _, args := range [][]string{
		{"train", "--data", "csv", "--file", file, "--epsilon", "3", "--epochs", "1", "--batch", "20", "--seed", "1", "--ledger", path},
		{"stream", "--events", "50", "--no-baseline", "--seed", "1", "--ledger", path},
		{"ocp", "--records", "300", "--seed", "1", "--ledger", path, "--no-progress"},
	} {
		was := freeze(t, path)
		if _, _, err := runCLI(t, "", args...); err == nil {
			t.Errorf("%s on a spent ocp ledger ran", args[0])
		} else {
			t.Logf("%s: %v", args[0], err)
		}
		untouched(t, path, was, "a refused "+args[0])
	}
}

// TestLedgerDamagedCLI: `dpal ledger show` and the runs' --ledger give
// one line naming the file for a ledger cut short (at lengths 509 apart
// below the end of its last page in use, and the 10000 bytes) or
// that is not a ledger at all, where bbolt used to fault with SIGBUS.
func TestLedgerDamagedCLI(t *testing.T) {
	b := stateOf(t, searchLedgerFile(t)).b
	inUse := 4096 * int(binary.NativeEndian.Uint64(b[4096+16+40:])) // the header's high-water mark
	dir := t.TempDir()
	file := twoBlobsCSV(t, 200)
	runs := map[string][]string{
		"show":   {"ledger", "show", "--store"},
		"train":  {"train", "--data", "csv", "--file", file, "--epochs", "1", "--batch", "20", "--seed", "1", "--ledger"},
		"stream": {"stream", "--events", "50", "--no-baseline", "--seed", "1", "--ledger"},
		"search": {"search", "--scores", writeScores(t, 50, 7, false), "--t-low", "1", "--t-high", "2", "--epsilon-answer", "1", "--ledger"},
	}
	lengths := []int{10000, 1, 100}
	for n := 509; n < inUse; n += 509 {
		lengths = append(lengths, n)
	}
	shown := map[string]bool{}
	for _, n := range lengths {
		path := writeTemp(t, dir, "cut.ledger", string(b[:n]))
		for name, args := range runs {
			if name != "show" && n%4 != 0 && n != 10000 {
				continue
			}
			_, _, err := runCLI(t, "", append(args, path)...)
			if err == nil || !strings.Contains(err.Error(), path) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("%s on %d of %d bytes: %v, want one line naming the file", name, n, len(b), err)
			}
			if !shown[name] {
				shown[name] = true
				t.Logf("%s, %d bytes: %v", name, n, err)
			}
		}
	}
	model := writeTemp(t, dir, "model.json", `{"format":"dpal-nn","version":1}`)
	for name, args := range runs {
		if _, _, err := runCLI(t, "", append(args, model)...); err == nil || !strings.Contains(err.Error(), "not a ledger file") {
			t.Errorf("%s on a model file: %v, want it called not a ledger file", name, err)
		}
	}
}

// ledgerGroups reads `dpal ledger show --json`'s groups of the ledger at
// path, by name.
func ledgerGroups(t *testing.T, path string) (budget float64, groups map[string]float64) {
	t.Helper()
	out, _, err := runCLI(t, "", "ledger", "show", "--store", path, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Meta struct {
			Budget struct{ Epsilon float64 }
		}
		Groups []struct {
			Group   string
			Epsilon float64
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	groups = map[string]float64{}
	for _, g := range rep.Groups {
		groups[g.Group] = g.Epsilon
	}
	return rep.Meta.Budget.Epsilon, groups
}

// TestLedgerBudgetAcrossRuns: a run's --epsilon is what it spends; the
// ledger's budget is set when it is created (--budget-epsilon, by
// default the first run's ε) and later runs neither lower nor raise it
// unless asked (and never raise it). So the same training runs twice on a
// ledger whose budget holds both, another command's run charges its own
// group on it, and a run past the budget fails naming its own group, the
// amount and what to do.
func TestLedgerBudgetAcrossRuns(t *testing.T) {
	dir := t.TempDir()
	file := twoBlobsCSV(t, 200)
	train := func(path string, extra ...string) error {
		args := append([]string{"train", "--data", "csv", "--file", file, "--epochs", "1", "--batch", "20", "--seed", "1",
			"--ledger", path, "--json"}, extra...)
		_, _, err := runCLI(t, "", args...)
		return err
	}
	wide := filepath.Join(dir, "wide.ledger")
	for run := range 2 {
		if err := train(wide, "--epsilon", "3", "--budget-epsilon", "10"); err != nil {
			t.Fatalf("run %d of the same training on a ledger of budget 10: %v", run+1, err)
		}
	}
	if budget, groups := ledgerGroups(t, wide); budget != 10 || groups["train:csv"] <= 3 || groups["train:csv"] > 6 {
		t.Errorf("after two runs: budget %v, groups %v", budget, groups)
	}
	if err := train(wide, "--epsilon", "3", "--budget-epsilon", "20"); err == nil || !strings.Contains(err.Error(), "cannot be raised") {
		t.Errorf("--budget-epsilon above the ledger's: %v", err)
	}
	if _, _, err := runCLI(t, "", "train", "--data", "csv", "--file", file, "--epochs", "1", "--batch", "20", "--budget-epsilon", "5"); err == nil || !strings.Contains(err.Error(), "--ledger") {
		t.Errorf("--budget-epsilon without --ledger: %v", err)
	}

	// A ledger created without --budget-epsilon holds the first run's ε:
	// a second run is refused, naming its group and the overspend.
	own := filepath.Join(dir, "own.ledger")
	if err := train(own, "--epsilon", "2"); err != nil {
		t.Fatal(err)
	}
	err := train(own, "--epsilon", "1")
	for _, want := range []string{`group "train:csv"`, "over its budget ε = 2 by", "new ledger"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("second run on a ledger of the first's ε: %v, want %q", err, want)
		}
	}

	// On an ocp ledger a training run charges its own group.
	ocp := filepath.Join(dir, "ocp.ledger")
	if _, _, err := runCLI(t, "", "ocp", "--records", "300", "--seed", "1", "--ledger", ocp, "--budget-epsilon", "10", "--no-progress"); err != nil {
		t.Fatal(err)
	}
	if err := train(ocp, "--epsilon", "1"); err != nil {
		t.Fatalf("train on an ocp ledger with room: %v", err)
	}
	if budget, groups := ledgerGroups(t, ocp); budget != 10 || groups["train:csv"] == 0 || groups["ocp/synthetic"] == 0 {
		t.Errorf("the ocp ledger after a training run: budget %v, groups %v", budget, groups)
	}
	full := filepath.Join(dir, "ocp-full.ledger")
	if _, _, err := runCLI(t, "", "ocp", "--records", "300", "--seed", "1", "--ledger", full, "--no-progress"); err != nil {
		t.Fatal(err)
	}
	if err := train(full, "--epsilon", "3"); err == nil || !strings.Contains(err.Error(), `"train:csv"`) || strings.Contains(err.Error(), "entry 1") {
		t.Errorf("train past an ocp ledger's budget: %v, want an error about its own group", err)
	}
}

// TestOutputsNeverReplace: an output never replaces an existing file
// unless --force says so, and never a ledger, a state or a model of
// another kind, --force or not; the file is left as it was.
func TestOutputsNeverReplace(t *testing.T) {
	dir := t.TempDir()
	file := twoBlobsCSV(t, 200)
	led := searchLedgerFile(t)
	scores := writeScores(t, 50, 7, false)
	state := filepath.Join(dir, "state")
	if _, _, err := runStreamCLI(t, "0.1,0.2\n-0.1,0.3\n", "--input", "-", "--out", filepath.Join(dir, "o.jsonl"), "--save-state", state); err != nil {
		t.Fatal(err)
	}
	model := filepath.Join(dir, "model.json")
	trainArgs := []string{"train", "--data", "csv", "--file", file, "--epochs", "1", "--batch", "20", "--seed", "1"}
	if _, _, err := runCLI(t, "", append(trainArgs, "--out", model)...); err != nil {
		t.Fatal(err)
	}
	plain := writeTemp(t, dir, "plain.txt", "keep me\n")
	search := []string{"search", "--scores", scores, "--t-low", "1", "--t-high", "2", "--epsilon-answer", "1", "--epsilon", "3"}
	for _, tc := range []struct {
		name string
		args []string
		path string
		want string
	}{
		{"train --out a ledger", append(trainArgs, "--out", led, "--force"), led, "bbolt"},
		{"train --out a state", append(trainArgs, "--out", state, "--force"), state, "dpal-stream-state"},
		{"train --out a model", append(trainArgs, "--out", model), model, "--force"},
		{"predict --probs its model", []string{"predict", "--model", model, "--data", "csv", "--file", file, "--probs", model, "--force"}, model, "overwritten"},
		{"predict --probs a file", []string{"predict", "--model", model, "--data", "csv", "--file", file, "--probs", plain}, plain, "--force"},
		{"ocp --out a ledger", []string{"ocp", "--records", "100", "--out", led, "--force", "--no-progress"}, led, "bbolt"},
		{"ocp --out a file", []string{"ocp", "--records", "100", "--out", plain, "--no-progress"}, plain, "--force"},
		{"search --posterior-out a file", append(search, "--posterior-out", plain), plain, "--force"},
		{"search --posterior-out a state", append(search, "--posterior-out", state, "--force"), state, "dpal-stream-state"},
		{"stream --out a file", []string{"stream", "--input", file, "--out", plain}, plain, "--force"},
		{"stream --out a model", []string{"stream", "--input", file, "--out", model, "--force"}, model, "dpal-nn"},
		{"resumed stream --out another file", []string{"stream", "--input", "-", "--resume", state, "--out", plain}, plain, "--force"},
		{"stream --save-state a state", []string{"stream", "--input", file, "--out", "-", "--save-state", state}, state, "--force"},
		{"stream --save-state a ledger", []string{"stream", "--input", file, "--out", "-", "--save-state", led, "--force"}, led, "bbolt"},
		{"dataset stream --save-state a model", []string{"stream", "--events", "20", "--no-baseline", "--save-state", model, "--force"}, model, "dpal-nn"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			was := freeze(t, tc.path)
			_, _, err := runCLI(t, "", tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v, want a refusal saying %q", err, tc.want)
			}
			untouched(t, tc.path, was, tc.name)
		})
	}
	// With --force an output replaces a file of its own kind or a plain one.
	for _, args := range [][]string{
		append(trainArgs, "--out", model, "--force"),
		{"ocp", "--records", "100", "--out", plain, "--force", "--no-progress"},
		{"stream", "--input", file, "--out", "-", "--save-state", state, "--force"},
	} {
		if _, _, err := runCLI(t, "", args...); err != nil {
			t.Errorf("%s with --force: %v", args[0], err)
		}
	}
}
