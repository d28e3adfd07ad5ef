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
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "dpal-cmd-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if os.Getenv(session.StateKeyFileEnv) == "" {
		os.Setenv(session.StateKeyFileEnv, filepath.Join(dir, "state.key"))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
