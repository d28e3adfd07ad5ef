package mech

import (
	"math/rand/v2"
	"testing"

	"github.com/dpal-dev/dpal/dp/rng"
)

type countSrc struct {
	s rand.Source
	n int
}

func (c *countSrc) Uint64() uint64 { c.n++; return c.s.Uint64() }

// The lazy bit comparisons keep the randomness cost of a sample to a few
// words; a regression to a word per Bernoulli draw (≈ 35 words per discrete
// Gaussian) would show here.
func TestRandomnessEconomy(t *testing.T) {
	c := &countSrc{s: rand.NewPCG(1, 2)}
	r := &rng.Rand{Rand: rand.New(c)}
	g := newDGaussInt(15280, 15280)
	const n = 100000
	for range n {
		g.sample(r)
	}
	if w := float64(c.n) / n; w > 5 {
		t.Errorf("discrete Gaussian uses %.2f words per sample", w)
	} else {
		t.Logf("discrete Gaussian: %.2f words per sample", w)
	}
	c.n = 0
	for range n {
		_, _ = DiscreteLaplace(r, 4097<<30, 1<<29)
	}
	if w := float64(c.n) / n; w > 4 {
		t.Errorf("discrete Laplace uses %.2f words per sample", w)
	} else {
		t.Logf("discrete Laplace: %.2f words per sample", w)
	}
}
