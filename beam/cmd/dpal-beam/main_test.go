package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"

	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/kanon"
)

func TestMain(m *testing.M) {
	beam.Init()
	os.Exit(m.Run())
}

func onPrism(ctx context.Context, p *beam.Pipeline) error {
	_, err := prism.Execute(ctx, p)
	return err
}

// parse parses args as main does, on a fresh flag set.
func parse(t *testing.T, args ...string) (*options, map[string]bool) {
	t.Helper()
	o := defaultOptions()
	fs := flag.NewFlagSet("dpal-beam", flag.ContinueOnError)
	o.register(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	return o, given
}

// TestBeamFlagsReachBeam checks that Beam's own flags (the runner's and
// the SDK harness's worker flags) live on the flag set main parses, so
// that beam.Init sees them.
func TestBeamFlagsReachBeam(t *testing.T) {
	for _, name := range []string{"runner", "endpoint", "environment_type", "worker", "id", "control_endpoint"} {
		if flag.CommandLine.Lookup(name) == nil {
			t.Errorf("Beam flag --%s is not registered on flag.CommandLine", name)
		}
	}
	// Ours must not clash with Beam's (flag panics on a redefinition).
	for _, name := range []string{"log", "output", "ledger", "seed", "beta", "k", "threshold", "epsilon-noise"} {
		if flag.CommandLine.Lookup(name) != nil {
			t.Errorf("--%s is also one of Beam's flags", name)
		}
	}
}

// TestRun runs the command on prism: the published file is what
// `dpal kanon run --released-out` writes for the same seed, the ledger
// holds the charge, and a second run on that ledger is refused before
// anything is published.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	var texts []string
	for i := range 60 {
		for range 600 / (i + 1) {
			fmt.Fprintf(&b, "query %d\tl%d\n", i, i%2)
			texts = append(texts, fmt.Sprintf("query %d", i))
		}
	}
	logPath := filepath.Join(dir, "log.txt")
	if err := os.WriteFile(logPath, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	out, led := filepath.Join(dir, "released.txt"), filepath.Join(dir, "ledger.db")
	o, given := parse(t, "--log", logPath, "--output", out, "--ledger", led, "--seed", "4", "--golden", "5", "--sketch-width", "256")
	msg, err := run(context.Background(), o, given, onPrism)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := kanon.NewStage(o.Config, kanon.SeededCoins(4))
	sp, _ := st.Release(texts)
	var want bytes.Buffer
	kanon.WriteReleased(&want, sp.Released)
	if !bytes.Equal(got, want.Bytes()) || len(sp.Released) == 0 || !strings.Contains(msg, "seed 4") {
		t.Fatalf("published %q (%s), want %q", got, msg, want.Bytes())
	}
	l, err := ledger.OpenRun(led, ledger.RunBudget{})
	if err != nil || l.Len() != 1 {
		t.Fatalf("ledger: %v", err)
	}
	l.Close()
	os.Remove(out)
	if _, err := run(context.Background(), o, given, onPrism); err == nil || !strings.Contains(err.Error(), "budget") {
		t.Fatalf("second run on a spent ledger: %v", err)
	}
	if _, err := os.Stat(out); err == nil {
		t.Fatal("a refused run published its set")
	}
	// Without --seed: secure coins, per-bundle sampling keys; the set is
	// random but only ever holds queries seen at least k times.
	unseeded := filepath.Join(dir, "unseeded.txt")
	o, given = parse(t, "--log", logPath, "--output", unseeded, "--ledger", filepath.Join(dir, "l2.db"), "--golden", "5", "--sketch-width", "256")
	if msg, err := run(context.Background(), o, given, onPrism); err != nil || strings.Contains(msg, "; seed") {
		t.Fatalf("unseeded run: %v (%s)", err, msg)
	}
	rel, err := os.ReadFile(unseeded)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range strings.Fields(strings.ReplaceAll(string(rel), "query ", "query_")) {
		var i int
		if _, err := fmt.Sscanf(q, "query_%d", &i); err != nil || 600/(i+1) < o.Config.K {
			t.Fatalf("unseeded run released %q", q)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--log", logPath, "--output", out}, "are required"},
		{[]string{"--log", logPath, "--output", out, "--ledger", led, "--k", "0"}, "k must be >= 1"},
		{[]string{"--log", logPath, "--output", out, "--ledger", led, "--beta", "1"}, "no sampling"},
		{[]string{"--log", logPath, "--output", out, "--ledger", led, "--sketch-width", "100"}, "power of two"},
		{[]string{"--log", logPath, "--output", "hdfs://x/out.txt", "--ledger", led}, `--output: file system scheme "hdfs" not registered`},
		{[]string{"--log", "nosuch://x/log.txt", "--output", out, "--ledger", led}, `--log: file system scheme "nosuch" not registered`},
		{[]string{"--log", logPath, "--output", out, "--ledger", led, "--threshold", "noisy"}, `threshold must be "exact" or "dp", got "noisy"`},
		{[]string{"--log", logPath, "--output", out, "--ledger", led, "--threshold", "dp", "--epsilon-noise", "0"}, "epsilon must be finite and > 0, got 0"},
		{[]string{"--log", logPath, "--output", out, "--ledger", led, "--threshold", "dp", "--epsilon-noise", "-0.5"}, "epsilon must be finite and > 0, got -0.5"},
		{[]string{"--log", logPath, "--output", out, "--ledger", led, "--threshold", "dp", "--k", "1"}, "k must be >= 2"},
	} {
		o, given := parse(t, c.args...)
		if _, err := run(context.Background(), o, given, onPrism); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.args, err, c.want)
		}
	}
}
