package kanonbeam

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
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
// byte for byte the released set of the single process for the same seed:
// on a generated Zipf log, CLINC150 with its Zipf frequency, SLURP, and a
// CLINC log ten times larger (the shared data's tests skip without it).
func TestSameAsSingleProcess(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	z := rand.NewZipf(r, 1.2, 1, 5000)
	var gen []kanon.Query
	for range 20_000 {
		v := z.Uint64()
		gen = append(gen, kanon.Query{Text: fmt.Sprintf("query %d", v), Label: fmt.Sprint(v % 3)})
	}
	logs := []struct {
		name string
		load func() ([]kanon.Query, error)
	}{
		{"generated", func() ([]kanon.Query, error) { return gen, nil }},
		{"clinc150", func() ([]kanon.Query, error) { return kanon.LoadCLINC(dataDir(), kanon.DefaultZipfCLINC, 7) }},
		{"slurp", func() ([]kanon.Query, error) { return kanon.LoadSLURP(dataDir()) }},
		{"clinc150x10", func() ([]kanon.Query, error) {
			return kanon.LoadCLINC(dataDir(), kanon.ZipfCLINC{C: 10 * kanon.DefaultZipfCLINC.C, S: kanon.DefaultZipfCLINC.S}, 7)
		}},
	}
	for _, l := range logs {
		t.Run(l.name, func(t *testing.T) {
			log, err := l.load()
			if err != nil {
				t.Skipf("shared data not available: %v", err)
			}
			p := params(7, 100)
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

func TestParams(t *testing.T) {
	for _, edit := range []func(*Params){
		func(p *Params) { p.Config.Beta = 0 },
		func(p *Params) { p.Config.K = 0 },
		func(p *Params) { p.Config.SketchRows = 0 },
		func(p *Params) { p.Config.SketchWidth = 7 },
		func(p *Params) { p.Config.SketchWidth = 0 },
		func(p *Params) { p.Config.Threshold = kanon.ThresholdDP },
	} {
		p := params(1, 10)
		edit(&p)
		if p.Validate() == nil {
			t.Errorf("%+v accepted", p.Config)
		}
	}
}
