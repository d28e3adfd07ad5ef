package groupsearch

import (
	"testing"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/rng"
)

// benchScores returns n+1 scores uniform on [0, t_ℓ] with one anomaly at t_h
// (threshold ratio (t_h − t_ℓ)/t_ℓ), and the anomaly's index.
func benchScores(size int, tl, th float64, r *rng.Rand) ([]float64, int) {
	xs := make([]float64, size)
	for i := range xs {
		xs[i] = tl * r.Float64()
	}
	star := r.IntN(size)
	xs[star] = th
	return xs, star
}

// BenchmarkSearch is one whole search over n+1 = 10^6 with the noisy-max
// oracle at ε = 1, threshold ratio 1, halting at max f > 0.5 (the paper's τ).
func BenchmarkSearch(b *testing.B) {
	const size = 1_000_000
	r := rng.Seeded(1)
	p := Params{TLow: 1, THigh: 2, Epsilon: 1}
	xs, star := benchScores(size, p.TLow, p.THigh, r)
	led, err := ledger.New(account.Budget{Epsilon: 1e12})
	if err != nil {
		b.Fatal(err)
	}
	o, err := NewOracle(NoisyMax, xs, p, led, "bench", r)
	if err != nil {
		b.Fatal(err)
	}
	lik, _ := p.Likelihood(NoisyMax)
	s, err := NewSearcher(size, lik, r)
	if err != nil {
		b.Fatal(err)
	}
	queries, hits := 0, 0
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		s.Reset()
		res, err := s.Run(o, Halting{Posterior: 0.5}, 4)
		if err != nil {
			b.Fatal(err)
		}
		queries += res.Queries
		if res.Top[0] == star {
			hits++
		}
	}
	b.ReportMetric(float64(queries)/float64(b.N), "queries/op")
	b.ReportMetric(float64(hits)/float64(b.N), "hit/op")
}
