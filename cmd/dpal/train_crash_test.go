package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dpsgd"
	"github.com/dpal-dev/dpal/internal/crashtest"
	"github.com/dpal-dev/dpal/session"
)

// The training kill test's child is this test binary run with -test.run
// of TestTrainCrashChild and trainCrashArgsEnv holding the arguments of
// `dpal train` as a JSON array.
const (
	trainCrashArgsEnv = "DPAL_TRAIN_CRASH_ARGS"
	trainCrashSeedEnv = "DPAL_TRAIN_CRASH_SEED" // replays a run's kill times
	trainCrashKills   = 30
	trainCrashEpochs  = 8
)

// TestTrainCrashChild runs `dpal train` with the arguments of
// trainCrashArgsEnv, writing straight to stdout: what it printed before a
// kill is what had left it.
func TestTrainCrashChild(t *testing.T) {
	args := crashChildArgs(t, trainCrashArgsEnv, "TestTrainCrash")
	resetCommand(rootCmd)
	rootCmd.SetArgs(args)
	rootCmd.SetOut(os.Stdout)
	rootCmd.SetErr(os.Stderr)
	if err := rootCmd.Execute(); err != nil {
		t.Fatal(err)
	}
}

// TestTrainCrash SIGKILLs `dpal train --ledger L --checkpoint C --out M`
// at random moments of its run and reruns it with --resume, one to three
// kills per trial, until 30 kills found it running. After every kill the
// ledger holds the charges of the intervals (epochs) the checkpoint has
// done, and at most one more; the epochs the child printed are among those
// checkpointed. The finished run's ledger holds one charge per epoch of one
// run, its ε is the uninterrupted run's to the last bit, and a seeded
// run's model file is the uninterrupted run's byte for byte (every fourth
// trial runs on secure randomness, which only the ε must match).
func TestTrainCrash(t *testing.T) {
	if os.Getenv(trainCrashArgsEnv) != "" {
		t.Skip("in the child")
	}
	rnd := crashtest.Rand(t, trainCrashSeedEnv)
	dir := t.TempDir()
	key, err := session.StateKey()
	if err != nil {
		t.Fatal(err)
	}
	common := []string{"train", "--data", "csv", "--file", trainCrashCSV(t, dir), "--epochs", fmt.Sprint(trainCrashEpochs),
		"--batch", "50", "--epsilon", "3", "--no-progress"}
	files := func(d string) []string {
		return []string{"--ledger", filepath.Join(d, "ledger.db"), "--checkpoint", filepath.Join(d, "ck"), "--out", filepath.Join(d, "model.json")}
	}
	seeded := slices.Concat(common, []string{"--seed", "5"})

	t0 := time.Now()
	ref := t.TempDir()
	out, _, err := runCLI(t, "", slices.Concat(seeded, files(ref), []string{"--json"})...)
	if err != nil {
		t.Fatal(err)
	}
	var want struct {
		Steps   int     `json:"steps"`
		Epsilon float64 `json:"ledger_epsilon"`
	}
	if err := json.Unmarshal([]byte(out), &want); err != nil {
		t.Fatal(err)
	}
	wantModel, err := os.ReadFile(files(ref)[5])
	if err != nil {
		t.Fatal(err)
	}
	ends := epochEnds(want.Steps, trainCrashEpochs)
	t.Logf("uninterrupted run in process: %v", time.Since(t0).Round(time.Millisecond))
	// A child's run from its header line (printed once the data are
	// loaded and σ calibrated) to its end: the kill times are drawn from
	// it, counted from the header. A fresh child that finishes before its
	// kill measures it again, under the machine's load of the moment.
	const mark = "DP-SGD "
	raw, _ := json.Marshal(slices.Concat(common, files(t.TempDir())))
	timing := crashtest.KillAt(t, crashtest.Child("TestTrainCrashChild", trainCrashArgsEnv+"="+string(raw)), mark, time.Minute)
	if timing.Killed {
		t.Fatal("the timing child was killed")
	}
	span := timing.Ran
	t.Logf("uninterrupted child from its header: %v", span.Round(time.Millisecond))

	start := time.Now()
	kills, trials, resumes, finished := 0, 0, 0, 0
	landed := make([]int, len(ends)+2) // kills by intervals checkpointed (+1: none yet)
	over := [2]int{}                   // kills by intervals charged beyond the checkpoint
	for kills < trainCrashKills {
		trials++
		args0 := common
		if trials%4 != 0 {
			args0 = seeded
		}
		f := files(t.TempDir())
		args := func() []string {
			if _, err := os.Stat(f[3]); err == nil {
				resumes++
				return slices.Concat(args0, f, []string{"--resume"})
			}
			return slices.Concat(args0, f)
		}
		for range 1 + rnd.IntN(3) {
			a := args()
			raw, _ := json.Marshal(a)
			child := crashtest.Child("TestTrainCrashChild", trainCrashArgsEnv+"="+string(raw))
			run := crashtest.KillAt(t, child, mark, time.Duration(rnd.Int64N(int64(span))))
			if !run.Killed {
				finished++
				if !slices.Contains(a, "--resume") {
					span = run.Ran
				}
				continue
			}
			kills++
			done, extra := checkTrainKill(t, f, key, ends, run.Output)
			landed[done+1]++
			over[extra]++
		}
		out, _, err := runCLI(t, "", append(args(), "--json")...)
		if err != nil {
			t.Fatalf("trial %d: the last resume: %v", trials, err)
		}
		var got struct {
			Epsilon float64 `json:"ledger_epsilon"`
			Run     string  `json:"run"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatal(err)
		}
		if got.Epsilon != want.Epsilon {
			t.Errorf("trial %d: ledger ε %v after kills and resumes, %v uninterrupted", trials, got.Epsilon, want.Epsilon)
		}
		checkTrainLedger(t, f[1], got.Run, len(ends))
		if model, err := os.ReadFile(f[5]); err != nil {
			t.Fatal(err)
		} else if !bytes.Equal(model, wantModel) && slices.Equal(args0, seeded) {
			t.Errorf("trial %d: the seeded model after kills and resumes differs from the uninterrupted run's", trials)
		}
	}
	t.Logf("%d kills in %d trials (%d resumes, %d children finished before their kill) in %v; by intervals checkpointed (none, 0, 1, …): %v; "+
		"%d kills with the next interval charged, %d without; every finished run has the uninterrupted ε, every seeded one its model",
		kills, trials, resumes, finished, time.Since(start).Round(time.Millisecond), landed, over[1], over[0])
}

// trainCrashCSV writes 2,000 rows of 10 features, the first three shifted
// by the ±1 label.
func trainCrashCSV(t *testing.T, dir string) string {
	r := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	for i := range 2000 {
		y := 2*(i%2) - 1
		for j := range 10 {
			x := r.NormFloat64()
			if j < 3 {
				x += 0.3 * float64(y)
			}
			fmt.Fprintf(&b, "%.3f,", x)
		}
		fmt.Fprintf(&b, "%d\n", y)
	}
	path := filepath.Join(dir, "train.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkTrainKill checks what a killed child left: the ledger holds the
// charges of the intervals its checkpoint has done and at most one more,
// and it printed no epoch its checkpoint has not done. It returns the
// number of intervals checkpointed (−1 before the first checkpoint) and
// of those charged beyond them (0 or 1).
func checkTrainKill(t *testing.T, f []string, key []byte, ends []int, printed []byte) (int, int) {
	t.Helper()
	done, started := -1, 0 // intervals checkpointed (-1: no checkpoint), charged
	if fh, err := os.Open(f[3]); err == nil {
		raw, err := session.Unseal(bufio.NewReader(fh), dpsgd.CheckpointFormat, key)
		fh.Close()
		var ck dpsgd.Checkpoint
		if err == nil {
			err = json.Unmarshal(raw, &ck)
		}
		if err != nil {
			t.Fatalf("checkpoint after a kill: %v", err)
		}
		done = sortedCount(ends, ck.Steps)
	}
	if _, err := os.Stat(f[1]); err == nil {
		st, err := ledger.OpenFile(f[1])
		if err != nil {
			t.Fatalf("ledger after a kill: %v", err)
		}
		if _, ok, _ := st.Meta(); ok {
			led, err := ledger.Open(st, account.Budget{})
			if err != nil {
				t.Fatalf("ledger after a kill: %v", err)
			}
			started = led.Len()
		}
		st.Close()
	}
	if done < 0 && started > 0 || started < done || started > done+1 {
		t.Fatalf("after a kill: %d intervals charged, %d checkpointed", started, done)
	}
	for _, l := range strings.Split(string(printed), "\n") {
		var epoch int
		if _, err := fmt.Sscanf(l, "epoch %d", &epoch); err == nil && epoch > done {
			t.Fatalf("after a kill: epoch %d was printed, %d checkpointed:\n%s", epoch, done, printed)
		}
	}
	return done, started - max(done, 0)
}

// sortedCount is the number of elements of the increasing xs that are ≤ v.
func sortedCount(xs []int, v int) int {
	n := 0
	for n < len(xs) && xs[n] <= v {
		n++
	}
	return n
}

// checkTrainLedger checks that a finished run's ledger holds one charge
// per interval of run, in order.
func checkTrainLedger(t *testing.T, path, run string, intervals int) {
	t.Helper()
	st, err := ledger.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	led, err := ledger.Open(st, account.Budget{})
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	defer led.Close()
	entries, err := led.Entries()
	if err != nil {
		t.Fatal(err)
	}
	var onces []string
	for k, e := range entries {
		onces = append(onces, e.Once)
		if want := fmt.Sprintf("dpsgd/%s/%d/train:csv", run, k); e.Once != want {
			err = errors.New("not one charge per interval")
		}
	}
	if err != nil || len(entries) != intervals {
		t.Fatalf("ledger %v, want the %d intervals of run %s", onces, intervals, run)
	}
}
