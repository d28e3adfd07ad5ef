// Package crashtest owns the harness of dpal's kill tests: a test binary
// re-runs itself as a child process (one test function, selected by an
// environment variable), the parent SIGKILLs it at random moments and then
// checks what it left on disk. The kill times come from a logged seed, so
// a failure can be replayed.
package crashtest

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Rand returns the random source of the kill times: seeded from seedEnv
// if it is set, else from the clock, and the seed is logged.
func Rand(t *testing.T, seedEnv string) *rand.Rand {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(seedEnv); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("%s: %v", seedEnv, err)
		}
	}
	t.Logf("seed %d (%s=%d replays the kill times)", seed, seedEnv, seed)
	return rand.New(rand.NewPCG(seed, 0))
}

// Child returns the command that runs the test function test of this
// binary with the environment additions env ("KEY=value").
func Child(test string, env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	return cmd
}

// Kill starts cmd and SIGKILLs it after wait. It reports whether the kill
// found the child running; a child that failed by itself fails the test.
func Kill(t *testing.T, cmd *exec.Cmd, wait time.Duration) bool {
	t.Helper()
	return KillAt(t, cmd, "", wait).Killed
}

// Run is what KillAt found.
type Run struct {
	// Killed reports whether the kill found the child running.
	Killed bool
	// Output is what the child wrote to stdout and stderr before it
	// ended: what had left it when it died.
	Output []byte
	// Ran is the time from the mark (or the start) to the child's end.
	Ran time.Duration
}

// KillAt is Kill with the wait counted from the moment the child's output
// first contains mark (a line it prints as the work under test begins;
// empty: from the start), so that the kills land in that work however
// long the child takes to start.
func KillAt(t *testing.T, cmd *exec.Cmd, mark string, wait time.Duration) Run {
	t.Helper()
	out := &markWriter{mark: []byte(mark), seen: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	from := time.Now()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	if mark == "" {
		close(out.seen)
	}
	select {
	case err = <-done:
		return finish(t, out, from, err)
	case <-out.seen:
		from = time.Now()
	}
	select {
	case err = <-done:
	case <-time.After(wait):
		// The child may exit on its own just as the timer fires: then
		// the kill finds it finished, and its own exit status decides.
		if kerr := cmd.Process.Signal(syscall.SIGKILL); kerr != nil && !errors.Is(kerr, os.ErrProcessDone) {
			t.Fatal(kerr)
		}
		err = <-done
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return Run{Killed: true, Output: out.bytes(), Ran: time.Since(from)}
		}
	}
	return finish(t, out, from, err)
}

// finish is the Run of a child that ended by itself, failing the test if
// it failed.
func finish(t *testing.T, out *markWriter, from time.Time, err error) Run {
	t.Helper()
	if err != nil {
		t.Fatalf("child failed: %v\n%s", err, out.bytes())
	}
	return Run{Output: out.bytes(), Ran: time.Since(from)}
}

// markWriter collects a child's output and closes seen once it contains
// mark.
type markWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	mark []byte
	seen chan struct{}
	once bool
}

func (w *markWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if !w.once && len(w.mark) > 0 && bytes.Contains(w.buf.Bytes(), w.mark) {
		w.once = true
		close(w.seen)
	}
	return len(p), nil
}

func (w *markWriter) bytes() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return bytes.Clone(w.buf.Bytes())
}
