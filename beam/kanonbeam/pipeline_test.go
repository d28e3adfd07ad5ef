package kanonbeam

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	//lint:ignore SA1019 the direct runner is offered beside prism, as the issue asks; prism is the default
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/direct"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"

	"github.com/dpal-dev/dpal/kanon"
)

func TestMain(m *testing.M) {
	beam.Init()
	m.Run()
}

// generatedLog is a Zipf query log of n occurrences.
func generatedLog(n int) []string {
	r := rand.New(rand.NewPCG(1, 2))
	z := rand.NewZipf(r, 1.2, 1, 5000)
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("query %d", z.Uint64())
	}
	return out
}

// TestSameAsSingleProcess runs the stage on the direct and prism runners
// and checks the surviving set equals kanon.Stage's on the same seed.
func TestSameAsSingleProcess(t *testing.T) {
	log := generatedLog(20_000)
	p := Params{Beta: 0.3, K: 10, Seed: 7, Rows: 4, Width: 1 << 10}
	want, err := kanon.Stage(log, p.Beta, p.K, p.Seed, p.Rows, p.Width)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) < 5 {
		t.Fatalf("test log too thin: %d survivors", len(want))
	}
	for name, run := range map[string]func(context.Context, *beam.Pipeline) (beam.PipelineResult, error){
		"direct": direct.Execute, "prism": prism.Execute,
	} {
		t.Run(name, func(t *testing.T) {
			pl, s := beam.NewPipelineWithRoot()
			lines := make([]Line, len(log))
			for i, q := range log {
				lines[i] = Line{Index: uint64(i), Text: q}
			}
			out := Survivors(s, beam.CreateList(s, lines), p)
			wantAny := make([]any, len(want))
			for i, q := range want {
				wantAny[i] = q
			}
			passert.Equals(s, out, wantAny...)
			if _, err := run(context.Background(), pl); err != nil {
				t.Fatal(err)
			}
		})
	}
	if !slices.IsSorted(want) {
		t.Fatal("Stage should return a sorted set")
	}
}

func TestParams(t *testing.T) {
	for _, p := range []Params{{Beta: 0, K: 1, Rows: 4, Width: 8}, {Beta: 0.5, K: 0, Rows: 4, Width: 8}, {Beta: 0.5, K: 2, Rows: 0, Width: 8}, {Beta: 0.5, K: 2, Rows: 4, Width: 7}} {
		if p.Validate() == nil {
			t.Errorf("%+v accepted", p)
		}
	}
}
