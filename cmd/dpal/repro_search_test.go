package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestReproSearchSmoke(t *testing.T) {
	reproSearchCmd.Flags().VisitAll(func(f *pflag.Flag) {
		_ = f.Value.Set(f.DefValue)
		f.Changed = false
	})
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	rootCmd.SetArgs([]string{"repro", "search", "--runs", "1", "--max-queries", "50", "--data-dir", t.TempDir(),
		"--out", out, "--seed", "5", "--no-progress"})
	rootCmd.SetOut(&stdout)
	rootCmd.SetErr(&stderr)
	defer func() {
		rootCmd.SetArgs(nil)
		rootCmd.SetOut(nil)
		rootCmd.SetErr(nil)
	}()
	if err := rootCmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), "seed 5") {
		t.Fatalf("output lacks the seed:\n%s", stdout.String())
	}
	b, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Config struct{ Seed uint64 } `json:"config"`
		Files  []string              `json:"files"`
	}
	if err := json.Unmarshal(b, &sum); err != nil || sum.Config.Seed != 5 || len(sum.Files) < 20 {
		t.Fatalf("summary: %v %+v", err, sum)
	}
}

// TestReproSearchBadConfig: an out-of-range setting is one clear line,
// not a printed Go struct.
func TestReproSearchBadConfig(t *testing.T) {
	for flag, want := range map[string]string{"--runs": "runs must be >= 1, got 0", "--max-queries": "max queries must be >= 1, got 0"} {
		_, _, err := runCLI(t, "", "repro", "search", flag, "0", "--out", t.TempDir())
		if err == nil || !strings.Contains(err.Error(), want) || strings.ContainsAny(err.Error(), "{&\n") {
			t.Errorf("%s 0: %v, want %q", flag, err, want)
		}
	}
}
