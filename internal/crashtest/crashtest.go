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
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
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
			return true
		}
	}
	if err != nil {
		t.Fatalf("child failed: %v\n%s", err, out.Bytes())
	}
	return false
}
