// Package kanonbeam is the sampling + sketching + exact-k stage of the
// k-anonymity pipeline (package kanon; Feyisetan et al. 2019) as an Apache
// Beam pipeline, for logs larger than one machine. It lives in its own
// module so that the core dpal binary's import graph stays free of Beam.
//
// The stage: keep occurrence i with kanon.SampleKeep(seed, i, β) (keyed by
// the occurrence index, so workers agree with a single process); build one
// Count-Mean-Min sketch per worker and merge them (combiner lifting); pass
// the sampled queries whose merged Count-Min value is ≥ k (the sketch only
// rejects); count those candidates exactly and keep the ones seen ≥ k
// times. The result equals kanon.Stage on the same seed. Sketches move
// only between the pipeline's workers, all on the trusted side; nothing of
// them is written out. The surviving set is trusted-side too until the
// caller charges it (dp/ledger) and releases it.
package kanonbeam

import (
	"fmt"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"

	"github.com/dpal-dev/dpal/kanon"
	"github.com/dpal-dev/dpal/sketch"
)

// Line is one occurrence of a query with its index in the log.
type Line struct {
	Index uint64
	Text  string
}

func init() {
	beam.RegisterCoder(reflect.TypeOf((*sketch.CMM)(nil)), encodeCMM, decodeCMM)
	register.DoFn2x0[Line, func(string)](&sampleFn{})
	register.Combiner3[*sketch.CMM, string, *sketch.CMM](&sketchFn{})
	register.DoFn3x0[string, *sketch.CMM, func(string)](&candidateFn{})
	register.DoFn3x0[string, int, func(string)](&keepFn{})
	register.Emitter1[string]()
}

func encodeCMM(s *sketch.CMM) ([]byte, error) { return s.MarshalBinary() }

func decodeCMM(b []byte) (*sketch.CMM, error) {
	var s sketch.CMM
	if err := s.UnmarshalBinary(b); err != nil {
		return nil, err
	}
	return &s, nil
}

// Params are the stage's parameters.
type Params struct {
	Beta  float64
	K     int
	Seed  uint64
	Rows  int
	Width int
}

// Validate checks p (the sketch shape by building one).
func (p Params) Validate() error {
	if !(p.Beta > 0 && p.Beta <= 1) {
		return fmt.Errorf("sampling rate beta must satisfy 0 < beta <= 1, got %v", p.Beta)
	}
	if p.K < 1 {
		return fmt.Errorf("threshold k must be >= 1, got %d", p.K)
	}
	_, err := sketch.NewCMM(p.Rows, p.Width, kanon.SketchSeed, true)
	return err
}

type sampleFn struct {
	Seed uint64
	Beta float64
}

func (f *sampleFn) ProcessElement(l Line, emit func(string)) {
	if kanon.SampleKeep(f.Seed, l.Index, f.Beta) {
		emit(l.Text)
	}
}

type sketchFn struct {
	Rows, Width int
}

func (f *sketchFn) CreateAccumulator() *sketch.CMM {
	s, err := sketch.NewCMM(f.Rows, f.Width, kanon.SketchSeed, true)
	if err != nil { // Params.Validate ran before the pipeline was built
		panic(err)
	}
	return s
}

func (f *sketchFn) AddInput(a *sketch.CMM, q string) *sketch.CMM {
	a.Add(q)
	return a
}

func (f *sketchFn) MergeAccumulators(a, b *sketch.CMM) (*sketch.CMM, error) {
	return a, a.Merge(b)
}

func (f *sketchFn) ExtractOutput(a *sketch.CMM) *sketch.CMM { return a }

type candidateFn struct {
	K uint64
}

func (f *candidateFn) ProcessElement(q string, s *sketch.CMM, emit func(string)) {
	if s.Min(q) >= f.K {
		emit(q)
	}
}

type keepFn struct {
	K int
}

func (f *keepFn) ProcessElement(q string, n int, emit func(string)) {
	if n >= f.K {
		emit(q)
	}
}

// Survivors adds the stage to s: lines is a PCollection of Line, the
// result a PCollection of the distinct surviving queries.
func Survivors(s beam.Scope, lines beam.PCollection, p Params) beam.PCollection {
	s = s.Scope("kanon.Survivors")
	sampled := beam.ParDo(s, &sampleFn{Seed: p.Seed, Beta: p.Beta}, lines)
	sk := beam.Combine(s, &sketchFn{Rows: p.Rows, Width: p.Width}, sampled)
	cands := beam.ParDo(s, &candidateFn{K: uint64(p.K)}, sampled, beam.SideInput{Input: sk})
	return beam.ParDo(s, &keepFn{K: p.K}, stats.Count(s, cands))
}
