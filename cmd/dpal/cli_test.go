package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// runCLI runs dpal with args and stdin, returning stdout and stderr. Cobra's
// commands are package globals, so every command's flags and streams are
// reset first: one test's settings must not leak into the next.
func runCLI(t *testing.T, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	resetCommand(rootCmd)
	var out, errOut bytes.Buffer
	rootCmd.SetArgs(args)
	rootCmd.SetOut(&out)
	rootCmd.SetErr(&errOut)
	rootCmd.SetIn(strings.NewReader(stdin))
	defer func() {
		rootCmd.SetArgs(nil)
		rootCmd.SetOut(nil)
		rootCmd.SetErr(nil)
		rootCmd.SetIn(nil)
	}()
	err = rootCmd.Execute()
	return out.String(), errOut.String(), err
}

func resetCommand(c *cobra.Command) {
	c.SetOut(nil)
	c.SetErr(nil)
	c.SetIn(nil)
	reset := func(f *pflag.Flag) {
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			_ = sv.Replace(nil)
		} else {
			_ = f.Value.Set(f.DefValue)
		}
		f.Changed = false
	}
	c.Flags().VisitAll(reset)
	c.PersistentFlags().VisitAll(reset)
	for _, sub := range c.Commands() {
		resetCommand(sub)
	}
}

// writeTemp writes body to dir/name and returns the path.
func writeTemp(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestUnknownSubcommand: a group command given an unknown subcommand fails
// (cobra alone prints the help and exits 0).
func TestUnknownSubcommand(t *testing.T) {
	for _, group := range []string{"repro", "data", "ledger"} {
		if _, _, err := runCLI(t, "", group, "bogus"); err == nil || !strings.Contains(err.Error(), `unknown command "bogus"`) {
			t.Errorf("dpal %s bogus: %v", group, err)
		}
		if _, _, err := runCLI(t, "", group); err != nil {
			t.Errorf("dpal %s (help): %v", group, err)
		}
	}
}
