package ledger_test

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
)

// The crash test's child is this test binary run with -test.run of
// TestCrashChild and crashPathEnv naming the ledger file.
const (
	crashPathEnv = "DPAL_LEDGER_CRASH_PATH"
	crashSeedEnv = "DPAL_LEDGER_CRASH_SEED" // set it to replay a run's kill times
	crashKills   = 100
)

var (
	crashBudget = account.Budget{Epsilon: 1e9}
	crashLoss   = account.Pure("crash-test", 1e-6)
)

// TestCrashChild is the child of TestCrash: it releases from the ledger
// at crashPathEnv until it is killed, printing "release SEQ VALUE" on
// stdout after each release.
func TestCrashChild(t *testing.T) {
	path := os.Getenv(crashPathEnv)
	if path == "" {
		t.Skip("the child of TestCrash")
	}
	l := openLedger(t, path, crashBudget)
	rng := rand.New(rand.NewPCG(uint64(os.Getpid()), 0))
	// A child whose parent is gone stops by itself.
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		v, err := ledger.Release(l, mech{crashLoss}, one("g"), func() (float64, error) { return rng.Float64(), nil })
		if err != nil {
			t.Fatal(err)
		}
		// One write(2) per line, straight to the pipe.
		fmt.Fprintf(os.Stdout, "release %d %v\n", l.Len(), v)
	}
}

// TestCrash kills a process that releases from a durable ledger at random
// times, and checks after each kill that the file opens, holds every
// release the process reported and its log is whole.
func TestCrash(t *testing.T) {
	if os.Getenv(crashPathEnv) != "" {
		t.Skip("in the child")
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(crashSeedEnv); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("seed %d (%s=%d replays the kill times)", seed, crashSeedEnv, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	path := filepath.Join(t.TempDir(), "crash.db")
	start := time.Now()
	var printed, idle, unreleased int
	stored, spent := 0, 0.0
	for kill := range crashKills {
		seqs, values := runCrashChild(t, path, time.Duration(1+rng.IntN(40))*time.Millisecond)
		printed += len(seqs)
		if len(seqs) == 0 {
			idle++
		}
		l := openLedger(t, path, crashBudget)
		entries, err := l.Entries()
		if err != nil {
			t.Fatalf("kill %d: the log does not decode: %v", kill, err)
		}
		sum := 0.0
		for i, e := range entries {
			if e.Seq != uint64(i+1) || !slices.Equal(e.Groups, one("g")) || !sameLoss(e.Loss, crashLoss) || e.Once != "" {
				t.Fatalf("kill %d: entry %d is %+v", kill, i+1, e)
			}
			sum += e.Loss.Epsilon
		}
		// The child took up the log where the last one left it: its
		// releases are the next entries, in order, and at most one entry
		// (charged when it was killed, never released) follows them.
		for i, seq := range seqs {
			if seq != stored+i+1 || seq > len(entries) {
				t.Fatalf("kill %d: release %d (value %v) was printed as entry %d of %d (%d before)", kill, i, values[i], seq, len(entries), stored)
			}
		}
		if extra := len(entries) - stored - len(seqs); extra < 0 || extra > 1 {
			t.Fatalf("kill %d: %d entries after %d printed releases on %d", kill, len(entries), len(seqs), stored)
		} else {
			unreleased += extra
		}
		eps, _ := l.Spent("g")
		if eps < spent || eps != sum || l.Len() != len(entries) {
			t.Fatalf("kill %d: spent %v (was %v), entries add up to %v over %d", kill, eps, spent, sum, l.Len())
		}
		stored, spent = len(entries), eps
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d kills in %v: %d releases printed, %d entries in the store (%d charged but killed before release), %d kills before any release, ε spent %v",
		crashKills, time.Since(start).Round(time.Millisecond), printed, stored, unreleased, idle, spent)
	if printed == 0 {
		t.Error("no child released anything before it was killed")
	}
}

// runCrashChild starts TestCrashChild on path, SIGKILLs it after wait, and
// returns the seqs and values it printed.
func runCrashChild(t *testing.T, path string, wait time.Duration) (seqs []int, values []float64) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashPathEnv+"="+path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := make(chan []byte)
	go func() { b, _ := io.ReadAll(stdout); out <- b }()
	time.Sleep(wait)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	b := <-out
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child ended by itself (%v):\n%s%s", err, b, stderr.Bytes())
	}
	lines := strings.Split(string(b), "\n")
	for _, line := range lines[:len(lines)-1] { // the last is "" or cut short
		var seq int
		var v float64
		if _, err := fmt.Sscanf(line, "release %d %v", &seq, &v); err != nil {
			t.Fatalf("child printed %q: %v", line, err)
		}
		seqs, values = append(seqs, seq), append(values, v)
	}
	return seqs, values
}
