package account

import "testing"

// BenchmarkEpsilon is one RDP ε over the default orders (the Opacus
// reference case).
func BenchmarkEpsilon(b *testing.B) {
	phases := []Phase{{SampleRate: 256.0 / 60000, NoiseMultiplier: 1.1, Steps: 14062}}
	for b.Loop() {
		if _, err := Epsilon(phases, 1e-5, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEpsilonFullCurve computes the whole curve over the default
// orders and converts it, without the pruned search.
func BenchmarkEpsilonFullCurve(b *testing.B) {
	phases := []Phase{{SampleRate: 256.0 / 60000, NoiseMultiplier: 1.1, Steps: 14062}}
	orders := DefaultOrders()
	for b.Loop() {
		c, err := ScheduleRDP(phases, orders)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := RDPToEpsilon(orders, c, 1e-5, Balle2020); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCalibrateNoise is σ calibration for ε=8, δ=1e-5, q=0.01, 1000
// steps to relative tolerance 1e-9.
func BenchmarkCalibrateNoise(b *testing.B) {
	for b.Loop() {
		if _, _, err := CalibrateNoise(Budget{Epsilon: 8, Delta: 1e-5}, 0.01, 1000, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCalibrateSampleRate is q calibration for ε=8, δ=1e-5, σ=1,
// 1000 steps.
func BenchmarkCalibrateSampleRate(b *testing.B) {
	for b.Loop() {
		if _, _, err := CalibrateSampleRate(Budget{Epsilon: 8, Delta: 1e-5}, 1, 1000, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPLDEpsilonMNIST is the PLD accountant on the README's run
// (both bounds, both directions, default grid).
func BenchmarkPLDEpsilonMNIST(b *testing.B) {
	terms := []PLDTerm{sgTerm(256.0/60000, 1.1, 14062)}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := PLDEpsilon(terms, 1e-5, PLDOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCalibrateNoisePLD calibrates σ for ε = 8, δ = 1e-5, q = 0.01,
// 1000 steps with the PLD accountant.
func BenchmarkCalibrateNoisePLD(b *testing.B) {
	for b.Loop() {
		if _, _, err := CalibrateNoisePLD(Budget{Epsilon: 8, Delta: 1e-5}, []Phase{{SampleRate: 0.01, Steps: 1000}}, PLDOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// plannerPhases is a ten-phase schedule like a pool plan's: sampling rates
// falling from 0.4 as the labelled set grows, steps rising, one σ.
func plannerPhases(sigma float64) []Phase {
	out := make([]Phase, 10)
	for i := range out {
		out[i] = Phase{SampleRate: 0.4 / (1 + 0.4*float64(i)), NoiseMultiplier: sigma, Steps: 25 + 20*i}
	}
	return out
}

// resetReplaceCache empties the replace-one cache, so that a benchmark
// measures cold computations.
func resetReplaceCache() {
	replaceCache.mu.Lock()
	replaceCache.entries = nil
	replaceCache.mu.Unlock()
}

// BenchmarkSubsampledGaussianReplacePlanner is a planner's σ bisection
// done by hand: 50 full replace-one curves (SubsampledGaussianReplace,
// 151 orders) of the ten-phase schedule, each at a new σ, read at δ.
func BenchmarkSubsampledGaussianReplacePlanner(b *testing.B) {
	for b.Loop() {
		resetReplaceCache()
		lo, hi := 0.5, 8.0
		for range 50 {
			mid := (lo + hi) / 2
			l, err := SubsampledGaussianReplace(plannerPhases(mid))
			if err != nil {
				b.Fatal(err)
			}
			e, err := l.EpsilonAt(1e-5, Balle2020)
			if err != nil {
				b.Fatal(err)
			}
			if e > 8 {
				lo = mid
			} else {
				hi = mid
			}
		}
	}
}

// BenchmarkSubsampledGaussianReplaceCurve is one full replace-one curve of
// one (q, σ), cold.
func BenchmarkSubsampledGaussianReplaceCurve(b *testing.B) {
	for b.Loop() {
		resetReplaceCache()
		if _, err := SubsampledGaussianReplace([]Phase{{SampleRate: 0.1, NoiseMultiplier: 2, Steps: 100}}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCalibrateNoiseReplace is CalibrateNoiseScheduleReplace of the
// ten-phase schedule for ε = 8, δ = 1e-5, cold.
func BenchmarkCalibrateNoiseReplace(b *testing.B) {
	for b.Loop() {
		resetReplaceCache()
		if _, _, err := CalibrateNoiseScheduleReplace(Budget{Epsilon: 8, Delta: 1e-5}, plannerPhases(1), Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
