package mech

import (
	"testing"

	"github.com/dpal-dev/dpal/dp/rng"
)

func BenchmarkBernoulliExp(b *testing.B) {
	r := rng.Seeded(1)
	for b.Loop() {
		BernoulliExp(r, 7, 3)
	}
}

func BenchmarkBernoulliExpFloat(b *testing.B) {
	r := rng.Seeded(1)
	for b.Loop() {
		BernoulliExpFloat(r, 2.3)
	}
}

func BenchmarkBernoulliFloat(b *testing.B) {
	r := rng.Seeded(1)
	for b.Loop() {
		BernoulliFloat(r, 0.3)
	}
}

func BenchmarkDiscreteLaplace(b *testing.B) {
	r := rng.Seeded(1)
	for b.Loop() {
		_, _ = DiscreteLaplace(r, 4097<<30, 1<<29)
	}
}

func BenchmarkDiscreteGaussian(b *testing.B) {
	r := rng.Seeded(1)
	for b.Loop() {
		_, _ = DiscreteGaussian(r, 100, 1)
	}
}

func BenchmarkDiscreteGaussianLarge(b *testing.B) {
	r := rng.Seeded(1)
	g := newDGaussInt(15280, 15280)
	for b.Loop() {
		g.sample(r)
	}
}

func BenchmarkLaplaceRelease(b *testing.B) {
	r := rng.Seeded(1)
	m, _ := NewLaplace(1, 1)
	for b.Loop() {
		_, _ = m.Release(r, 3.5)
	}
}

func BenchmarkGaussianRelease(b *testing.B) {
	r := rng.Seeded(1)
	m, _ := NewGaussian(1, 1e-5, 1)
	for b.Loop() {
		_, _ = m.Release(r, 3.5)
	}
}

func BenchmarkRandomizedResponse(b *testing.B) {
	r := rng.Seeded(1)
	m, _ := NewRandomizedResponse(1)
	for b.Loop() {
		m.Release(r, true)
	}
}

func BenchmarkGammaVectorAddTo120(b *testing.B) {
	r := rng.Seeded(1)
	m, _ := NewGammaVector(1, 2, 120)
	v := make([]float64, 120)
	b.ReportAllocs()
	for b.Loop() {
		_ = m.AddTo(r, v)
	}
}

func BenchmarkGaussianVectorAddTo120(b *testing.B) {
	r := rng.Seeded(1)
	m, _ := NewGaussianVector(1.1, 1, 120)
	v := make([]float64, 120)
	b.ReportAllocs()
	for b.Loop() {
		_ = m.AddTo(r, v)
	}
}

func BenchmarkExponentialSelect100(b *testing.B) {
	r := rng.Seeded(1)
	m, _ := NewExponential(1, 1, false)
	scores := make([]float64, 100)
	for i := range scores {
		scores[i] = float64(i % 10)
	}
	for b.Loop() {
		_, _ = m.Select(r, scores)
	}
}

func BenchmarkReportNoisyMax100(b *testing.B) {
	r := rng.Seeded(1)
	m, _ := NewReportNoisyMax(1, 1, false)
	scores := make([]float64, 100)
	for b.Loop() {
		_, _ = m.Select(r, scores)
	}
}

func BenchmarkNewGaussian(b *testing.B) {
	for b.Loop() {
		_, _ = NewGaussian(1, 1e-5, 1)
	}
}
