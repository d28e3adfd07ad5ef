package kanonbeam

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/local"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/textio"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"

	"github.com/dpal-dev/dpal/kanon"
)

func TestMain(m *testing.M) {
	beam.Init()
	os.Exit(m.Run())
}

// dataDir is the shared data root ($DPAL_DATA_DIR, else ../shared/data
// beside the repository), as kanon's tests find it.
func dataDir() string {
	if d := os.Getenv("DPAL_DATA_DIR"); d != "" {
		return d
	}
	return filepath.Join("..", "..", "..", "shared", "data")
}

// writeLog writes log as a text log (query, tab, label) and returns its path.
func writeLog(t *testing.T, log []kanon.Query) string {
	t.Helper()
	var b strings.Builder
	for _, q := range log {
		fmt.Fprintf(&b, "%s\t%s\n", q.Text, q.Label)
	}
	path := filepath.Join(t.TempDir(), "log.txt")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// singleProcess is what `dpal kanon run --released-out` writes for log:
// kanon.Run releases Stage.Release's set, in kanon.WriteReleased's format.
func singleProcess(t *testing.T, p Params, log []kanon.Query) []byte {
	t.Helper()
	st, err := kanon.NewStage(p.Config, p.Coins)
	if err != nil {
		t.Fatal(err)
	}
	texts := make([]string, len(log))
	for i, q := range log {
		texts[i] = q.Text
	}
	sp, err := st.Release(texts)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := kanon.WriteReleased(&b, sp.Released); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// onPrism runs the pipeline on prism, reading path with textio and
// writing the released set, and returns the file.
func onPrism(t *testing.T, p Params, path string) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), "released.txt")
	pl, s := beam.NewPipelineWithRoot()
	WriteReleased(s, out, Released(s, textio.Read(s, path), p))
	if _, err := prism.Execute(context.Background(), pl); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func params(seed uint64, golden int) Params {
	c := kanon.DefaultConfig()
	c.Golden, c.SketchWidth = golden, 1<<12
	return Params{Config: c, Coins: kanon.SeededCoins(seed), Seeded: true}
}

// TestSameAsSingleProcess checks, on prism, that the Beam stage writes
// byte for byte the released set of the single process for the same seed,
// in both threshold modes: on a generated Zipf log, CLINC150 with its Zipf
// frequency, SLURP, and a CLINC log ten times larger (the shared data's
// tests skip without it).
func TestSameAsSingleProcess(t *testing.T) {
	gen := generatedLog()
	logs := []struct {
		name  string
		modes []string
		load  func() ([]kanon.Query, error)
	}{
		{"generated", bothModes, func() ([]kanon.Query, error) { return gen, nil }},
		{"clinc150", bothModes, func() ([]kanon.Query, error) { return kanon.LoadCLINC(dataDir(), kanon.DefaultZipfCLINC, 7) }},
		{"slurp", bothModes, func() ([]kanon.Query, error) { return kanon.LoadSLURP(dataDir()) }},
		{"clinc150x10", bothModes, func() ([]kanon.Query, error) {
			return kanon.LoadCLINC(dataDir(), kanon.ZipfCLINC{C: 10 * kanon.DefaultZipfCLINC.C, S: kanon.DefaultZipfCLINC.S}, 7)
		}},
	}
	for _, l := range logs {
		for _, mode := range l.modes {
			t.Run(l.name+"/"+mode, func(t *testing.T) {
				log, err := l.load()
				if err != nil {
					t.Skipf("shared data not available: %v", err)
				}
				p := params(7, 100)
				p.Config.Threshold = mode
				if l.name == "slurp" {
					p.Config.K = 5 // SLURP's sentences repeat a few times, not hundreds
				}
				want := singleProcess(t, p, log)
				if bytes.Count(want, []byte("\n")) < 3 {
					t.Fatalf("test log too thin: released %q", want)
				}
				if got := onPrism(t, p, writeLog(t, log)); !bytes.Equal(got, want) {
					t.Fatalf("prism released %d bytes, single process %d:\n%s\nwant\n%s", len(got), len(want), got, want)
				}
			})
		}
	}
}

var bothModes = []string{kanon.ThresholdExact, kanon.ThresholdDP}

// generatedLog is a Zipf log of 20,000 occurrences over 5,000 queries.
func generatedLog() []kanon.Query {
	r := rand.New(rand.NewPCG(1, 2))
	z := rand.NewZipf(r, 1.2, 1, 5000)
	var gen []kanon.Query
	for range 20_000 {
		v := z.Uint64()
		gen = append(gen, kanon.Query{Text: fmt.Sprintf("query %d", v), Label: fmt.Sprint(v % 3)})
	}
	return gen
}

// TestShardedInput checks that sharding does not move the released set:
// the generated log, shuffled and cut into three files read by one glob
// (textio splits them into separate bundles), releases on prism what the
// single process releases on the log in order, in both modes.
func TestShardedInput(t *testing.T) {
	log := generatedLog()
	shuffled := slices.Clone(log)
	rand.New(rand.NewPCG(3, 4)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	dir := t.TempDir()
	for s := range 3 {
		var b strings.Builder
		for _, q := range shuffled[s*len(shuffled)/3 : (s+1)*len(shuffled)/3] {
			fmt.Fprintf(&b, "%s\t%s\n", q.Text, q.Label)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("part-%d.txt", s)), []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, mode := range bothModes {
		t.Run(mode, func(t *testing.T) {
			p := params(3, 50)
			p.Config.Threshold = mode
			want := singleProcess(t, p, log)
			if got := onPrism(t, p, filepath.Join(dir, "part-*.txt")); !bytes.Equal(got, want) || len(want) == 0 {
				t.Fatalf("sharded input released\n%s\nsingle process\n%s", got, want)
			}
		})
	}
}

func TestParams(t *testing.T) {
	for _, edit := range []func(*Params){
		func(p *Params) { p.Config.Beta = 0 },
		func(p *Params) { p.Config.K = 0 },
		func(p *Params) { p.Config.SketchRows = 0 },
		func(p *Params) { p.Config.SketchWidth = 7 },
		func(p *Params) { p.Config.SketchWidth = 0 },
		func(p *Params) { p.Config.Threshold = "noisy" },
		func(p *Params) { p.Config.Threshold, p.Config.NoiseEpsilon = kanon.ThresholdDP, 0 },
		func(p *Params) { p.Config.Threshold, p.Config.NoiseEpsilon = kanon.ThresholdDP, -2 },
		func(p *Params) { p.Config.Threshold, p.Config.K = kanon.ThresholdDP, 1 },
		func(p *Params) { p.Config.Baseline = true },
	} {
		p := params(1, 10)
		edit(&p)
		if p.Validate() == nil {
			t.Errorf("%+v accepted", p.Config)
		}
	}
	// The dp threshold uses no sketch: width 0 is fine there.
	p := params(1, 10)
	p.Config.Threshold, p.Config.SketchWidth = kanon.ThresholdDP, 0
	if err := p.Validate(); err != nil {
		t.Errorf("dp without a sketch width: %v", err)
	}
}
