package mech

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/dpal-dev/dpal/dp/internal/cputime"
	"github.com/dpal-dev/dpal/dp/rng"
)

// benchRoutes runs f once per route of fill: the Go loop, and AVX-512
// where the CPU has it, so that one run compares them. f gets the
// thread's CPU time at its start (cputime.Thread), for reportPerDraw.
func benchRoutes(b *testing.B, f func(b *testing.B, cpu0 int64)) {
	routes := []string{"go"}
	if fillAVX {
		routes = append(routes, "avx512")
	}
	for _, route := range routes {
		b.Run(route, func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			withFillAVX(route == "avx512", func() { f(b, cputime.Thread()) })
		})
	}
}

// reportPerDraw adds the wall and the CPU (thread) ns per noise
// coordinate; the CPU time counts from cpu0, so includes f's setup.
func reportPerDraw(b *testing.B, draws int, cpu0 int64) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*draws), "ns/draw")
	if cpu1 := cputime.Thread(); cpu0 >= 0 && cpu1 >= 0 {
		b.ReportMetric(float64(cpu1-cpu0)/float64(b.N*draws), "cpu-ns/draw")
	}
}

// BenchmarkTableGaussFill is the cost per coordinate of DP-SGD's noise
// (σ ≈ 2.3·10^6 grid steps, the MLP of BenchmarkNoise).
func BenchmarkTableGaussFill(b *testing.B) {
	g, _ := newTableGauss(2310000*2310000, 1)
	benchRoutes(b, func(b *testing.B, cpu0 int64) {
		v := make([]float64, 4096)
		bb, q := bitbuf{r: rng.Seeded(1).Bulk()}, newWordQueue()
		for b.Loop() {
			g.fill(&bb, q, v, 1, false)
		}
		reportPerDraw(b, len(v), cpu0)
	})
}

// benchDims are the DP-SGD MLP's parameter count and an OCP tree node's
// dimension.
var benchDims = []int{203530, 4095}

// benchVector runs release on a GaussianVector of each of benchDims, on
// each route, per coordinate.
func benchVector(b *testing.B, release func(m *GaussianVector, r *rng.Rand, v []float64)) {
	for _, d := range benchDims {
		m, _ := NewGaussianVector(1.1, 1, d)
		v := make([]float64, d)
		r := rng.Seeded(1)
		b.Run(fmt.Sprintf("dim=%d", d), func(b *testing.B) {
			benchRoutes(b, func(b *testing.B, cpu0 int64) {
				for b.Loop() {
					release(m, r, v)
				}
				reportPerDraw(b, d, cpu0)
			})
		})
	}
}

// BenchmarkGaussianVectorNoise is Noise (the noise alone) per coordinate.
func BenchmarkGaussianVectorNoise(b *testing.B) {
	benchVector(b, func(m *GaussianVector, r *rng.Rand, v []float64) { _ = m.Noise(r, v) })
}

// BenchmarkGaussianVectorAddTo is AddTo (validation, rounding to the grid
// and the noise) per coordinate, on a vector kept bounded by clearing it.
func BenchmarkGaussianVectorAddTo(b *testing.B) {
	benchVector(b, func(m *GaussianVector, r *rng.Rand, v []float64) {
		clear(v)
		_ = m.AddTo(r, v)
	})
}

// BenchmarkNoiseStreamNext is one stream drawn in 4096-coordinate chunks.
func BenchmarkNoiseStreamNext(b *testing.B) {
	m, _ := NewGaussianVector(1.1, 1, 203530)
	benchRoutes(b, func(b *testing.B, cpu0 int64) {
		s := m.NewNoiseStream(rng.Seeded(1))
		v := make([]float64, 4096)
		for b.Loop() {
			s.Next(v)
		}
		reportPerDraw(b, len(v), cpu0)
	})
}

// BenchmarkTreeFlush is Tree.Flush per node coordinate at private FTL's
// matrix tree (d = 90, packed dimension 4095), one packed outer product
// per leaf: the node sums, the noise and the prefix update, on each route.
func BenchmarkTreeFlush(b *testing.B) {
	const d = 90
	v := make([]float64, d)
	for k := range v {
		v[k] = 1 / float64(k+10)
	}
	benchRoutes(b, func(b *testing.B, cpu0 int64) {
		tr, _ := NewTree(1<<30, SymDim(d), 1, 5)
		r := rng.Seeded(1)
		for b.Loop() {
			_ = tr.AccumulateOuter(v, 0.5)
			_, _ = tr.Flush(r)
		}
		reportPerDraw(b, SymDim(d), cpu0)
	})
}
