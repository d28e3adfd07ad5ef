package mech

import (
	"fmt"
	"testing"

	"github.com/dpal-dev/dpal/dp/rng"
)

// benchRoutes runs f once per route of fill: the Go loop, and AVX-512
// where the CPU has it, so that one run compares them.
func benchRoutes(b *testing.B, f func(b *testing.B)) {
	routes := []string{"go"}
	if fillAVX {
		routes = append(routes, "avx512")
	}
	for _, route := range routes {
		b.Run(route, func(b *testing.B) { withFillAVX(route == "avx512", func() { f(b) }) })
	}
}

// reportPerDraw adds the ns per noise coordinate.
func reportPerDraw(b *testing.B, draws int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*draws), "ns/draw")
}

// BenchmarkTableGaussFill is the cost per coordinate of DP-SGD's noise
// (σ ≈ 2.3·10^6 grid steps, the MLP of BenchmarkNoise).
func BenchmarkTableGaussFill(b *testing.B) {
	g, _ := newTableGauss(2310000*2310000, 1)
	benchRoutes(b, func(b *testing.B) {
		v := make([]float64, 4096)
		bb, q := bitbuf{r: rng.Seeded(1).Bulk()}, newWordQueue()
		for b.Loop() {
			g.fill(&bb, q, v, 1, false)
		}
		reportPerDraw(b, len(v))
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
			benchRoutes(b, func(b *testing.B) {
				for b.Loop() {
					release(m, r, v)
				}
				reportPerDraw(b, d)
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
	benchRoutes(b, func(b *testing.B) {
		s := m.NewNoiseStream(rng.Seeded(1))
		v := make([]float64, 4096)
		for b.Loop() {
			s.Next(v)
		}
		reportPerDraw(b, len(v))
	})
}
