package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/dpal-dev/dpal/session"
)

// TestMain keeps the tests' state key out of the user's config directory:
// state files are authenticated with a key file in a temporary directory.
// A crash test's child inherits the variable, so it makes no directory of
// its own (a killed child could not remove it).
func TestMain(m *testing.M) {
	if os.Getenv(session.StateKeyFileEnv) != "" {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "dpal-cmd-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv(session.StateKeyFileEnv, filepath.Join(dir, "state.key"))
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
