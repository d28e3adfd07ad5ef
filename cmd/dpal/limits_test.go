package main

// Tests of issue 24's "Resource limits and silent defaults": sizes and
// targets refused up front, flags that used to fall back to a default
// silently, the default δ, the rejected-events limit, and the tree
// update's new ledger.

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
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

// TestAbsurdEpsilonAnsweredAtOnce: a target ε above account.MaxTargetEpsilon
// is refused before any work, with the limit in the message. `dpal train
// --epsilon 1e308` used to spin 23 s before "nothing is spent?", `dpal
// account noise` for minutes, and ocp and stream failed with messages
// about μ or a noise multiplier of 0.
func TestAbsurdEpsilonAnsweredAtOnce(t *testing.T) {
	file := twoBlobsCSV(t, 1000)
	for _, args := range [][]string{
		{"train", "--data", "csv", "--file", file, "--epsilon", "1e308"},
		{"ocp", "--epsilon", "1e308", "--records", "1000"},
		{"stream", "--epsilon-grad", "1e308", "--no-baseline"},
		{"stream", "--epsilon-select", "1e308", "--no-baseline"},
		{"account", "noise", "--epsilon", "1e308", "--sample-rate", "0.01", "--steps", "100", "--delta", "1e-5"},
	} {
		t.Run(strings.Join(args[:2], " "), func(t *testing.T) {
			start := time.Now()
			_, _, err := runCLI(t, "", args...)
			if err == nil || !strings.Contains(err.Error(), "above 50, the largest target") {
				t.Errorf("%v: error %v, want the target refused", args, err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("%v: answered after %v", args, d)
			}
		})
	}
}

// TestTrainSizeLimits: --epochs 1e12 is refused with the steps it would
// take and the limit (it used to grow a map of one entry per epoch to
// 5.5 GB), and an epoch log beyond --max-memory is refused with both
// numbers.
func TestTrainSizeLimits(t *testing.T) {
	file := twoBlobsCSV(t, 1000) // 800 training records
	for _, private := range []string{"true", "false"} {
		start := time.Now()
		_, _, err := runCLI(t, "", "train", "--data", "csv", "--file", file, "--epochs", "1e12", "--batch", "400",
			"--non-private="+private)
		if err == nil || !strings.Contains(err.Error(), "2000000000000 steps") || !strings.Contains(err.Error(), "limit 2147483648") {
			t.Errorf("--epochs 1e12 --non-private=%s: %v, want the steps and the limit", private, err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("--epochs 1e12 --non-private=%s answered after %v", private, d)
		}
	}
	// 1e7 epochs of one step each fit the step limit; their charges and
	// reports do not fit in 1 GiB.
	_, _, err := runCLI(t, "", "train", "--data", "csv", "--file", file, "--epochs", "1e7", "--batch", "800", "--max-memory", "1GiB")
	if err == nil || !strings.Contains(err.Error(), "of 10000000 epochs") || !strings.Contains(err.Error(), "--max-memory 1GiB") {
		t.Errorf("--epochs 1e7 --max-memory 1GiB: %v, want the estimate and the limit", err)
	}
	for _, bad := range []string{"0", "-1GiB", "8 parsecs", "1e400"} {
		if _, _, err := runCLI(t, "", "train", "--data", "csv", "--file", file, "--max-memory", bad); err == nil || !strings.Contains(err.Error(), "--max-memory") {
			t.Errorf("--max-memory %q: %v", bad, err)
		}
	}
}

// TestOCPSizeLimits: `dpal ocp --dim 100000000` ran to 11 GB; the data
// and learner a run would allocate are estimated from the flags and
// refused above --max-memory, with the estimate, the limit and the
// largest dimension that fits, before anything is allocated.
func TestOCPSizeLimits(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--dim", "100000000"}, []string{"above --max-memory 8GiB", "the largest that fits is d = "}},
		{[]string{"--dim", "10000", "--records", "1000"}, []string{"ftl", "above --max-memory 8GiB"}},
		{[]string{"--algorithm", "igd", "--dim", "100000", "--records", "2000", "--max-memory", "1GiB"},
			[]string{"synthetic data", "above --max-memory 1GiB"}},
		{[]string{"--dim", "1200", "--records", "20", "--max-memory", "100MiB"}, []string{"above --max-memory 100MiB"}},
	} {
		start := time.Now()
		_, _, err := runCLI(t, "", append([]string{"ocp", "--no-progress"}, c.args...)...)
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error %v, want %q", c.args, err, w)
			}
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%v: answered after %v", c.args, d)
		}
	}
	if _, _, err := runCLI(t, "", "ocp", "--no-progress", "--dim", "20", "--records", "100", "--max-memory", "100MiB"); err != nil {
		t.Errorf("a small run under --max-memory 100MiB: %v", err)
	}
}

// TestSilentDefaultsRefused: flags whose explicit value used to fall back
// to a default, or to mean something else, without a word are errors
// naming the flag: train's and pool run's --batch 0, --clip 0 and --lr 0
// (the datasets' defaults), ocp's --records -5 (all records), --dim 0
// (d = 10) and --dim with a dataset of its own (ignored), stream's --clip
// 0 (a window of -2^63), and BALD on a model without dropout (every score
// 0, selection at random).
func TestSilentDefaultsRefused(t *testing.T) {
	file := twoBlobsCSV(t, 300)
	train := []string{"train", "--data", "csv", "--file", file, "--epochs", "1", "--batch", "40"}
	bald := []string{"pool", "run", "--data", "csv", "--file", file, "--epsilon", "4", "--initial", "50", "--queries", "10",
		"--epochs", "1", "--acquisition", "bald"}
	pool := slices.Clip(append(slices.Clip(bald[:len(bald)-1]), "random"))
	for _, c := range []struct {
		args []string
		want string
	}{
		{append(train, "--batch", "0"), "--batch must be > 0, got 0"},
		{append(train, "--clip", "0"), "--clip must be > 0, got 0"},
		{append(train, "--lr", "0"), "--lr must be > 0, got 0"},
		{append(train, "--clip", "NaN"), "--clip must be > 0, got NaN"},
		{append(pool, "--clip", "0"), "--clip must be > 0, got 0"},
		{append(pool, "--batch", "0"), "--batch must be > 0, got 0"},
		{[]string{"ocp", "--records", "-5"}, "--records must be >= 0"},
		{[]string{"ocp", "--dim", "0"}, "--dim must be >= 1"},
		{[]string{"ocp", "--dim", "5", "--data", file}, "--dim sets the synthetic data's dimension"},
		{[]string{"stream", "--clip", "0", "--no-baseline"}, "clip must be finite and > 0"},
		{bald, "--acquisition bald needs a model with dropout"},
		{append(bald, "--selection", "topk", "--epsilon-select", "1"), "--acquisition bald needs a model with dropout"},
		{append(bald, "--selection", "topk", "--not-dp", "--model", "mlp:8"), "--acquisition bald needs a model with dropout"},
	} {
		_, _, err := runCLI(t, "", append(c.args, "--no-progress")...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.args, err, c.want)
		}
	}
	// BALD with dropout runs.
	if _, _, err := runCLI(t, "", append(bald, "--model", "mlp:8", "--dropout", "0.5", "--passes", "2",
		"--seed", "1", "--no-progress")...); err != nil {
		t.Errorf("bald with dropout: %v", err)
	}
}

// TestDefaultDelta: every command that picks δ for the user picks
// account.DefaultDelta of the records its guarantee covers, min(1e-5,
// 1/(10n)) (pool run used 1/B, 0.0025 here; ocp 0.01; train and stream
// 1e-5 whatever n), prints it with the result, and warns on stderr when
// a δ the user gave is above 1/n.
func TestDefaultDelta(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	// train and pool run train on 80 % of a file: 800 and 20,000 records.
	small, large := twoBlobsCSV(t, 1000), twoBlobsCSV(t, 25000)
	jsonDelta := func(out string, path ...string) any {
		var v any = summaryJSON(t, out)
		for _, k := range path {
			v = v.(map[string]any)[k]
		}
		return v
	}
	pool := []string{"pool", "run", "--data", "csv", "--file", small, "--epsilon", "4", "--initial", "200", "--queries", "100",
		"--acquisition", "random", "--epochs", "1", "--seed", "1", "--json"}
	for _, c := range []struct {
		name  string
		args  []string
		path  []string
		want  float64
		warns bool
	}{
		{"pool run, 800 records", pool, []string{"delta"}, 1e-5, false},
		{"pool run, --delta 0.01", append(pool, "--delta", "0.01"), []string{"delta"}, 0.01, true},
		{"ocp, 1000 records", []string{"ocp", "--records", "1000", "--seed", "1", "--json"}, []string{"privacy", "delta"}, 1e-5, false},
		{"ocp, --delta 0.01", []string{"ocp", "--records", "1000", "--seed", "1", "--json", "--delta", "0.01"}, []string{"privacy", "delta"}, 0.01, true},
		{"train, 800 records", []string{"train", "--data", "csv", "--file", small, "--epochs", "1", "--batch", "100", "--seed", "1", "--json"},
			[]string{"delta"}, 1e-5, false},
		{"train, 20,000 records", []string{"train", "--data", "csv", "--file", large, "--epochs", "1", "--batch", "2000", "--seed", "1", "--json"},
			[]string{"delta"}, 5e-6, false},
		{"train, --delta 0.01", []string{"train", "--data", "csv", "--file", small, "--epochs", "1", "--batch", "100", "--seed", "1", "--json",
			"--delta", "0.01"}, []string{"delta"}, 0.01, true},
		{"stream, 25,000 events", []string{"stream", "--dataset", "csv", "--train", large, "--test", small, "--zero-is-negative",
			"--label-budget", "50", "--no-baseline", "--seed", "1", "--json"}, []string{"config", "delta"}, 4e-6, false},
		{"stream, --events 15000", []string{"stream", "--dataset", "csv", "--train", large, "--test", small, "--zero-is-negative",
			"--events", "15000", "--label-budget", "50", "--no-baseline", "--seed", "1", "--json"}, []string{"config", "delta"}, 1 / 150000.0, false},
		{"stream, demo", []string{"stream", "--label-budget", "50", "--no-baseline", "--seed", "1", "--json"}, []string{"config", "delta"}, 1e-5, false},
		{"stream, --delta 0.001", []string{"stream", "--label-budget", "50", "--no-baseline", "--seed", "1", "--json", "--delta", "0.001"},
			[]string{"config", "delta"}, 0.001, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, stderr, err := runCLI(t, "", append(c.args, "--no-progress")...)
			if err != nil {
				t.Fatal(err)
			}
			if got := jsonDelta(out, c.path...); got != c.want {
				t.Errorf("δ %v, want %v", got, c.want)
			}
			if warned := strings.Contains(stderr, "is above 1/n"); warned != c.warns {
				t.Errorf("warned %v, want %v:\n%s", warned, c.warns, stderr)
			}
		})
	}
	// The text results print δ, the tree update's too.
	for _, args := range [][]string{
		{"pool", "run", "--data", "csv", "--file", small, "--epsilon", "4", "--initial", "200", "--queries", "100",
			"--acquisition", "random", "--epochs", "1", "--seed", "1"},
		{"stream", "--update", "tree", "--label-budget", "200", "--no-baseline", "--seed", "1"},
		{"ocp", "--records", "1000", "--seed", "1"},
		{"train", "--data", "csv", "--file", small, "--epochs", "1", "--batch", "100", "--seed", "1"},
	} {
		out, _, err := runCLI(t, "", append(args, "--no-progress")...)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, "1e-05") {
			t.Errorf("%v: the text result does not print δ = 1e-05:\n%s", args[:2], out)
		}
	}
}

// TestStreamMaxRejected: an event run whose first event has another
// dimension than the 20 after it used to exit 0 with 20 of 21 events
// rejected. Above --max-rejected (default 0.5) of its events rejected, a
// run prints its summary and fails with the count, from a file or stdin.
func TestStreamMaxRejected(t *testing.T) {
	events := "0.1,0.2,0.3\n" + strings.Repeat("0.1,0.2\n0.2,-0.1\n", 10)
	file := writeTemp(t, t.TempDir(), "events.csv", events)
	for _, c := range []struct {
		name, stdin string
		args        []string
		want        string // "" for success
	}{
		{"file", "", []string{"--input", file}, "20 of 21 events rejected (95.2 %), above --max-rejected 0.5"},
		{"stdin", events, []string{"--input", "-"}, "20 of 21 events rejected (95.2 %), above --max-rejected 0.5"},
		{"file, --max-rejected 1", "", []string{"--input", file, "--max-rejected", "1"}, ""},
		{"file, --dim 2", "", []string{"--input", file, "--dim", "2"}, ""},
		{"file, --dim 2 --max-rejected 0", "", []string{"--input", file, "--dim", "2", "--max-rejected", "0"},
			"1 of 21 events rejected (4.8 %), above --max-rejected 0"},
		{"bad fraction", "", []string{"--input", file, "--max-rejected", "1.5"}, "--max-rejected must be in [0, 1]"},
		{"dataset mode", "", []string{"--max-rejected", "0.1", "--no-baseline"}, "--max-rejected applies to event mode"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, _, err := runStreamCLI(t, c.stdin, append(c.args, "--seed", "1", "--json")...)
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
			if !strings.Contains(c.name, "mode") && !strings.Contains(c.name, "bad") {
				if sum := eventSummary(t, out); sum["rejected"] == nil {
					t.Errorf("summary %v lacks the rejected count", sum)
				}
			}
		})
	}
}

// TestStreamDimLimit: `dpal stream --input - --dim 1000000000` ran out of
// memory building the learner; the learner's size is estimated and
// refused above --max-memory, with the estimate and the limit.
func TestStreamDimLimit(t *testing.T) {
	start := time.Now()
	_, _, err := runStreamCLI(t, "0.1,0.2\n", "--input", "-", "--dim", "1000000000")
	if err == nil || !strings.Contains(err.Error(), "the stream learner at d = 1000000000") || !strings.Contains(err.Error(), "above --max-memory 8GiB") {
		t.Errorf("error %v, want the estimate and the limit", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("answered after %v", d)
	}
	if _, _, err := runStreamCLI(t, "", "--max-memory", "1KiB", "--no-baseline"); err == nil || !strings.Contains(err.Error(), "above --max-memory 1KiB") {
		t.Errorf("dataset mode under --max-memory 1KiB: %v", err)
	}
}
