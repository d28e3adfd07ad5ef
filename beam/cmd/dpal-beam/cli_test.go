package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/kanon"
)

// dataDir is the shared data root ($DPAL_DATA_DIR, else ../shared/data
// beside the repository), as kanon's tests find it.
func dataDir() string {
	if d := os.Getenv("DPAL_DATA_DIR"); d != "" {
		return d
	}
	return filepath.Join("..", "..", "..", "..", "shared", "data")
}

// buildDPAL builds the dpal command from the repository root (this
// module's replace target) into dir.
func buildDPAL(t *testing.T, dir string) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go tool to build dpal: %v", err)
	}
	bin := filepath.Join(dir, "dpal")
	cmd := exec.Command(goTool, "build", "-o", bin, "./cmd/dpal")
	cmd.Dir = filepath.Join("..", "..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/dpal: %v\n%s", err, out)
	}
	return bin
}

// writeQueries writes log as a text log (query, tab, label).
func writeQueries(t *testing.T, path string, log []kanon.Query) {
	t.Helper()
	var b strings.Builder
	for _, q := range log {
		fmt.Fprintf(&b, "%s\t%s\n", q.Text, q.Label)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}

// onlyEntry is the one entry of the ledger file at path.
func onlyEntry(t *testing.T, path string) ledger.Entry {
	t.Helper()
	l, err := ledger.OpenRun(path, ledger.RunBudget{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	es, err := l.Entries()
	if err != nil || len(es) != 1 {
		t.Fatalf("ledger %s: %d entries (%v), want 1", path, len(es), err)
	}
	return es[0]
}

// TestSameAsCLI runs each threshold both ways on each log, the real
// `dpal kanon run --threshold T --released-out` (built from this
// repository) and dpal-beam on prism with the same flags and --seed, and
// checks that the two released files are byte-identical and that the two
// ledgers hold the same charge: on a generated log, CLINC150 with its Zipf
// frequency, SLURP, and a synthetic CLINC150 log ten times larger (the
// shared data's cases skip without it).
func TestSameAsCLI(t *testing.T) {
	dir := t.TempDir()
	dpal := buildDPAL(t, dir)
	var gen []kanon.Query
	for i := range 80 {
		for range 600 / (i + 1) {
			gen = append(gen, kanon.Query{Text: fmt.Sprintf("query %d", i), Label: fmt.Sprintf("l%d", i%2)})
		}
	}
	clinc := func(scale float64) func() ([]kanon.Query, error) {
		return func() ([]kanon.Query, error) {
			z := kanon.DefaultZipfCLINC
			z.C *= scale
			return kanon.LoadCLINC(dataDir(), z, 7)
		}
	}
	for _, c := range []struct {
		name  string
		load  func() ([]kanon.Query, error)
		flags []string
	}{
		{"generated", func() ([]kanon.Query, error) { return gen, nil }, []string{"--golden", "5", "--epsilon-noise", "0.5"}},
		{"clinc150", clinc(1), nil},
		{"slurp", func() ([]kanon.Query, error) { return kanon.LoadSLURP(dataDir()) }, []string{"--k", "5", "--epsilon-noise", "2", "--delta", "0.01"}}, // exact: δ must exceed β^k
		{"clinc150x10", clinc(10), []string{"--beta", "0.2", "--k", "10"}},
	} {
		log, err := c.load()
		logPath := filepath.Join(dir, c.name+".txt")
		if err == nil {
			writeQueries(t, logPath, log)
		}
		for _, mode := range []string{kanon.ThresholdExact, kanon.ThresholdDP} {
			t.Run(c.name+"/"+mode, func(t *testing.T) {
				if err != nil {
					t.Skipf("shared data not available: %v", err)
				}
				sameAsCLI(t, dpal, filepath.Join(dir, c.name+"-"+mode),
					append([]string{"--log", logPath, "--threshold", mode, "--seed", "7"}, c.flags...))
			})
		}
	}
}

// sameAsCLI runs `dpal kanon run` (the binary dpal) and dpal-beam on prism
// with the stage flags in a new directory sub and compares their released
// files and ledger charges.
func sameAsCLI(t *testing.T, dpal, sub string, stage []string) {
	t.Helper()
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	cliOut, cliLed := filepath.Join(sub, "cli.txt"), filepath.Join(sub, "cli.db")
	cli := exec.Command(dpal, append([]string{"kanon", "run", "--released-out", cliOut, "--ledger", cliLed,
		"--labels-budget", "4", "--rounds", "1", "--epochs", "1", "--hidden", "4", "--passes", "1"}, stage...)...)
	if out, err := cli.CombinedOutput(); err != nil {
		t.Fatalf("dpal kanon run: %v\n%s", err, out)
	}
	beamOut, beamLed := filepath.Join(sub, "beam.txt"), filepath.Join(sub, "beam.db")
	o, given := parse(t, append([]string{"--output", beamOut, "--ledger", beamLed}, stage...)...)
	if _, err := run(context.Background(), o, given, onPrism); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(cliOut)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(beamOut)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) || bytes.Count(want, []byte("\n")) < 3 {
		t.Fatalf("dpal-beam released\n%s\ndpal kanon run released\n%s", got, want)
	}
	ce, be := onlyEntry(t, cliLed), onlyEntry(t, beamLed)
	if !reflect.DeepEqual(ce.Loss, be.Loss) || ce.Loss.Epsilon <= 0 || be.Note != "dpal-beam "+ce.Note {
		t.Fatalf("charges differ: dpal kanon run %+v (%q), dpal-beam %+v (%q)", ce.Loss, ce.Note, be.Loss, be.Note)
	}
}

// TestDPUnseeded runs the dp threshold without --seed (noise and sampling
// keyed from rng.Secure per bundle): the set is random, but it is
// published only after the dp charge is in the ledger, holds only queries
// of the log and records no seed.
func TestDPUnseeded(t *testing.T) {
	dir := t.TempDir()
	var log []kanon.Query
	inLog := map[string]bool{}
	for i := range 40 {
		q := fmt.Sprintf("query %d", i)
		inLog[q] = true
		for range 400 / (i + 1) {
			log = append(log, kanon.Query{Text: q, Label: fmt.Sprintf("l%d", i%2)})
		}
	}
	logPath, out, led := filepath.Join(dir, "log.txt"), filepath.Join(dir, "out.txt"), filepath.Join(dir, "l.db")
	writeQueries(t, logPath, log)
	o, given := parse(t, "--log", logPath, "--output", out, "--ledger", led, "--threshold", "dp", "--golden", "3")
	msg, err := run(context.Background(), o, given, onPrism)
	if err != nil || strings.Contains(msg, "; seed") || !strings.Contains(msg, "(dp threshold)") {
		t.Fatalf("unseeded dp run: %v (%s)", err, msg)
	}
	rel, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range strings.Split(strings.TrimSuffix(string(rel), "\n"), "\n") {
		if q != "" && !inLog[q] {
			t.Fatalf("released %q, not in the log", q)
		}
	}
	if e := onlyEntry(t, led); e.Loss.Mechanism != "sample-then-noisy-threshold" {
		t.Fatalf("charged %+v", e.Loss)
	}
}
