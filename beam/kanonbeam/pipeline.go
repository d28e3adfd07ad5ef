// Package kanonbeam is the release stage of the k-anonymity pipeline
// (package kanon; Feyisetan et al. 2019) as an Apache Beam pipeline, for
// logs larger than one machine. It lives in its own module so that the
// core dpal binary's import graph stays free of Beam.
//
// It calls the per-record parts of kanon.Stage, the one definition that
// `dpal kanon run` calls whole (Stage.Release), so for one seed both
// release the same set:
//
//   - parse each line read by textio (kanon.ParseLine) and drop the test
//     queries (Stage.InTest on the query's keyed split key);
//   - golden set: a combine keeping the Golden smallest split keys
//     (kanon.Smallest, merged across workers);
//   - exact threshold only, pre-filter: a Count-Mean-Min sketch of the
//     non-test occurrences, built per worker and merged (combiner
//     lifting); a query whose Count-Min value is below k cannot reach k in
//     the sample (the sketch only rejects). The dp threshold has no
//     pre-filter, as kanon.Stage has none (Stage.Exact): a query seen once
//     may pass c + Z ≥ k, so every pool query is a candidate;
//   - exact recount: the candidates counted by a combine per key
//     (stats.Count), so the count the threshold sees is exact;
//   - per query: not golden, and Stage.Keep on its count n, the one
//     per-query decision `dpal kanon run` also calls (the sampled count c
//     drawn from the query's own coins; exact: c ≥ k; dp: c ≥ 1 and c plus
//     discrete Laplace noise from the query's own noise stream ≥ k).
//
// No state grows with the input on the driver: lines go from the
// filesystem to the workers. Sketches, counts and the golden set move only
// between the pipeline's workers, all on the trusted side; nothing of them
// is written out. The released set is written to a staging file, trusted
// side too, until the caller charges it (dp/ledger) and publishes it.
package kanonbeam

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"

	"github.com/dpal-dev/dpal/kanon"
	"github.com/dpal-dev/dpal/sketch"
)

func init() {
	beam.RegisterCoder(reflect.TypeOf((*sketch.CMM)(nil)), encodeCMM, decodeCMM)
	beam.RegisterCoder(reflect.TypeOf((*kanon.Smallest)(nil)), encodeJSON[kanon.Smallest], decodeJSON[kanon.Smallest])
	beam.RegisterType(reflect.TypeOf((*kanon.Keyed)(nil)).Elem())
	register.DoFn2x1[string, func(kanon.Keyed), error](&parseFn{})
	register.Combiner3[*kanon.Smallest, kanon.Keyed, *kanon.Smallest](&goldenFn{})
	register.Combiner3[*sketch.CMM, kanon.Keyed, *sketch.CMM](&sketchFn{})
	register.DoFn3x0[kanon.Keyed, *sketch.CMM, func(string)](&candidateFn{})
	register.Function1x1(textOf)
	register.DoFn4x0[string, int, *kanon.Smallest, func(string, int)](&notGoldenFn{})
	register.DoFn3x1[string, int, func(string), error](&keepFn{})
	register.Emitter2[string, int]()
	register.DoFn3x1[context.Context, []byte, func(*string) bool, error](&writeFn{})
	register.Emitter1[string]()
	register.Emitter1[kanon.Keyed]()
	register.Iter1[string]()
}

func encodeCMM(s *sketch.CMM) ([]byte, error) { return s.MarshalBinary() }

func decodeCMM(b []byte) (*sketch.CMM, error) {
	var s sketch.CMM
	if err := s.UnmarshalBinary(b); err != nil {
		return nil, err
	}
	return &s, nil
}

func encodeJSON[T any](v *T) ([]byte, error) { return json.Marshal(v) }

func decodeJSON[T any](b []byte) (*T, error) {
	v := new(T)
	return v, json.Unmarshal(b, v)
}

// Params are the stage's parameters: Config's β, K, holdout (TestFraction,
// Golden) and sketch shape, and the run's coins.
type Params struct {
	Config kanon.Config
	// Coins key the split (every worker must agree on it) and, when Seeded,
	// the sampling coins.
	Coins kanon.Coins
	// Seeded: the sampling coins and the dp threshold's noise come from
	// Coins, reproducibly (experiments and the equality test). Otherwise
	// each bundle keys them afresh from rng.Secure (kanon.SecureCoins):
	// every query is decided in exactly one bundle, so fresh keys per
	// bundle still give each query independent coins and noise.
	Seeded bool
}

// Validate checks p: a private run (not the baseline), the stage's own
// checks (kanon.NewStage: β, k, threshold, noise ε', holdout) and, for the
// exact threshold, a sketch width given, since a Beam combine cannot size
// itself from a HyperLogLog estimate first (the dp threshold uses no
// sketch).
func (p Params) Validate() error {
	c := p.Config
	if c.Baseline {
		return errors.New("the Beam stage runs a private run only, not the baseline")
	}
	st, err := kanon.NewStage(c, p.Coins)
	if err != nil {
		return err
	}
	if !st.Exact() {
		return nil
	}
	if c.SketchWidth == 0 {
		return errors.New("the Beam stage's exact threshold needs a sketch width (a power of two)")
	}
	_, err = st.NewSketch(0)
	return err
}

// stageOf builds the kanon.Stage of p on a worker (Validate ran on the
// driver before the pipeline was built).
func stageOf(p Params) *kanon.Stage {
	st, err := kanon.NewStage(p.Config, p.Coins)
	if err != nil {
		panic(fmt.Sprintf("kanonbeam: params not validated: %v", err))
	}
	return st
}

type parseFn struct {
	P  Params
	st *kanon.Stage
}

func (f *parseFn) Setup() { f.st = stageOf(f.P) }

// ProcessElement emits the line's query with its split key unless it is
// blank or a test query; a bad line fails the pipeline, as it fails
// kanon.ReadLog.
func (f *parseFn) ProcessElement(line string, emit func(kanon.Keyed)) error {
	q, ok, err := kanon.ParseLine(line)
	if err != nil {
		return fmt.Errorf("log line %.60q: %w", line, err)
	}
	if !ok {
		return nil
	}
	if k := f.st.Key(q.Text); !f.st.InTest(k) {
		emit(k)
	}
	return nil
}

type goldenFn struct {
	P Params
}

func (f *goldenFn) CreateAccumulator() *kanon.Smallest { return &kanon.Smallest{N: f.P.Config.Golden} }

func (f *goldenFn) AddInput(a *kanon.Smallest, k kanon.Keyed) *kanon.Smallest {
	a.Add(k)
	return a
}

func (f *goldenFn) MergeAccumulators(a, b *kanon.Smallest) *kanon.Smallest {
	a.Merge(b)
	return a
}

func (f *goldenFn) ExtractOutput(a *kanon.Smallest) *kanon.Smallest { return a }

type sketchFn struct {
	P Params
}

func (f *sketchFn) CreateAccumulator() *sketch.CMM {
	s, err := stageOf(f.P).NewSketch(0)
	if err != nil {
		panic(fmt.Sprintf("kanonbeam: params not validated: %v", err))
	}
	return s
}

func (f *sketchFn) AddInput(a *sketch.CMM, k kanon.Keyed) *sketch.CMM {
	a.Add(k.Text)
	return a
}

func (f *sketchFn) MergeAccumulators(a, b *sketch.CMM) (*sketch.CMM, error) {
	return a, a.Merge(b)
}

func (f *sketchFn) ExtractOutput(a *sketch.CMM) *sketch.CMM { return a }

type candidateFn struct {
	K uint64
}

func (f *candidateFn) ProcessElement(k kanon.Keyed, s *sketch.CMM, emit func(string)) {
	if s.Min(k.Text) >= f.K {
		emit(k.Text)
	}
}

type keepFn struct {
	P           Params
	st, sampler *kanon.Stage
}

func (f *keepFn) Setup() { f.st = stageOf(f.P) }

// sampling returns the stage that draws the sampling coins and the noise:
// the seeded one, or, in an unseeded run, one keyed afresh from
// rng.Secure for each bundle (FinishBundle drops it).
func (f *keepFn) sampling() (*kanon.Stage, error) {
	if f.P.Seeded {
		return f.st, nil
	}
	if f.sampler == nil {
		c, err := kanon.SecureCoins()
		if err != nil {
			return nil, err
		}
		if f.sampler, err = kanon.NewStage(f.P.Config, c); err != nil {
			return nil, err
		}
	}
	return f.sampler, nil
}

func (f *keepFn) ProcessElement(q string, n int, emit func(string)) error {
	st, err := f.sampling()
	if err != nil {
		return err
	}
	ok, err := st.Keep(q, uint64(n))
	if ok {
		emit(q)
	}
	return err
}

// FinishBundle forgets the bundle's sampling key.
func (f *keepFn) FinishBundle(_ func(string)) { f.sampler = nil }

type notGoldenFn struct {
	P  Params
	st *kanon.Stage
}

func (f *notGoldenFn) Setup() { f.st = stageOf(f.P) }

func (f *notGoldenFn) ProcessElement(q string, n int, golden *kanon.Smallest, emit func(string, int)) {
	if !golden.Contains(f.st.Key(q)) {
		emit(q, n)
	}
}

// textOf drops a pool query's split key: in dp mode every pool occurrence
// is a candidate.
func textOf(k kanon.Keyed) string { return k.Text }

// Released adds the stage to s: lines is a PCollection<string> of log
// lines (textio.Read), the result the PCollection<string> of the released
// queries (distinct, unordered). p must have passed Validate.
func Released(s beam.Scope, lines beam.PCollection, p Params) beam.PCollection {
	s = s.Scope("kanon.Released")
	pool := beam.ParDo(s, &parseFn{P: p}, lines)
	golden := beam.Combine(s, &goldenFn{P: p}, pool)
	var cands beam.PCollection
	if stageOf(p).Exact() {
		sk := beam.Combine(s, &sketchFn{P: p}, pool)
		cands = beam.ParDo(s, &candidateFn{K: uint64(p.Config.K)}, pool, beam.SideInput{Input: sk})
	} else {
		// dp: as kanon.Stage (Exact is false), no pre-filter: a query seen
		// once may pass c + Z ≥ k, so every pool query is counted.
		cands = beam.ParDo(s, textOf, pool)
	}
	pooled := beam.ParDo(s, &notGoldenFn{P: p}, stats.Count(s, cands), beam.SideInput{Input: golden})
	return beam.ParDo(s, &keepFn{P: p}, pooled)
}

type writeFn struct {
	Filename string
}

func (f *writeFn) ProcessElement(ctx context.Context, _ []byte, lines func(*string) bool) error {
	var qs []string
	var q string
	for lines(&q) {
		qs = append(qs, q)
	}
	var buf bytes.Buffer
	if err := kanon.WriteReleased(&buf, qs); err != nil {
		return err
	}
	fs, err := filesystem.New(ctx, f.Filename)
	if err != nil {
		return err
	}
	defer fs.Close()
	return filesystem.Write(ctx, fs, f.Filename, buf.Bytes())
}

// WriteReleased writes col, a PCollection<string> of released queries, to
// filename on any Beam filesystem in kanon.WriteReleased's format (sorted,
// one per line): the format of `dpal kanon run --released-out`. Like
// textio.Write it gathers the set on one worker (as a side input of one
// impulse, so that an empty set still writes an empty file); the released
// set has at most N/k queries.
func WriteReleased(s beam.Scope, filename string, col beam.PCollection) {
	s = s.Scope("kanon.WriteReleased")
	filesystem.ValidateScheme(filename)
	beam.ParDo0(s, &writeFn{Filename: filename}, beam.Impulse(s), beam.SideInput{Input: col})
}
