package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/spf13/cobra"

	"github.com/dpal-dev/dpal/kanon"
)

func TestMain(m *testing.M) {
	beam.Init()
	os.Exit(m.Run())
}

// newSketchCmd is the sketch command alone, with runSketch and the flags
// main gives it.
func newSketchCmd() *cobra.Command {
	c := &cobra.Command{Use: "sketch", RunE: runSketch, SilenceUsage: true, SilenceErrors: true}
	f := c.Flags()
	f.String("log", "", "")
	f.Float64("beta", 0.3, "")
	f.Int("k", 20, "")
	f.Float64("delta", 1e-6, "")
	f.Uint64("seed", 0, "")
	f.String("runner", "prism", "")
	f.Int("rows", 4, "")
	f.Int("width", 1<<16, "")
	f.String("ledger", "", "")
	f.Float64("budget-epsilon", 10, "")
	f.Float64("budget-delta", 1e-4, "")
	return c
}

func TestSketchCommand(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	var texts []string
	for i := range 40 {
		for range 400 / (i + 1) {
			fmt.Fprintf(&b, "query %d\n", i)
			texts = append(texts, fmt.Sprintf("query %d", i))
		}
	}
	path := filepath.Join(dir, "log.txt")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	c := newSketchCmd()
	var out bytes.Buffer
	c.SetOut(&out)
	c.SetArgs([]string{"--log", path, "--beta", "0.3", "--k", "20", "--seed", "4", "--width", "256"})
	if err := c.Execute(); err != nil {
		t.Fatal(err)
	}
	var got output
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want, err := kanon.Stage(texts, 0.3, 20, 4, 4, 256)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got.Released) != fmt.Sprint(want) || got.Epsilon <= 0 || got.Seed == nil {
		t.Fatalf("released %v (eps %v), want %v", got.Released, got.Epsilon, want)
	}
	for _, c2 := range []struct {
		args []string
		want string
	}{
		{[]string{"--log", path, "--k", "0"}, "k must be >= 1"},
		{[]string{"--log", path, "--beta", "1"}, "no sampling"},
		{[]string{"--log", path, "--runner", "spark"}, "--runner must be"},
		{[]string{"--log", filepath.Join(dir, "none.txt")}, "no such file"},
		{[]string{}, "--log is required"},
	} {
		c := newSketchCmd()
		c.SetOut(&bytes.Buffer{})
		c.SetArgs(c2.args)
		if err := c.Execute(); err == nil || !strings.Contains(err.Error(), c2.want) {
			t.Errorf("%v: error %v, want %q", c2.args, err, c2.want)
		}
	}
}
