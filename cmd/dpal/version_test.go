package main

import (
	"strings"
	"testing"
)

// TestVersion checks that --version prints the module version (or
// "(devel)" in a checkout's build) and the Go version.
func TestVersion(t *testing.T) {
	out, _, err := runCLI(t, "", "--version")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "dpal version ") || !strings.Contains(out, "go1.") {
		t.Errorf("--version printed %q", out)
	}
}
