package stream

import (
	"math"
	"testing"

	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/model"
	"github.com/dpal-dev/dpal/vec"
)

// synthStream returns n points inside the unit ball of dimension d with
// labels sgn⟨w*, x⟩ for a fixed w*, flipped with probability noise.
func synthStream(n, d int, noise float64, seed uint64) ([][]float64, []float64) {
	r := rng.Seeded(seed)
	wStar := make([]float64, d)
	for i := range wStar {
		wStar[i] = r.NormFloat64()
	}
	X := make([][]float64, n)
	Y := make([]float64, n)
	for t := range X {
		x := make([]float64, d)
		for i := range x {
			x[i] = r.NormFloat64()
		}
		s := (0.2 + 0.8*r.Float64()) / vec.Norm(x)
		for i := range x {
			x[i] *= s
		}
		X[t] = x
		Y[t] = model.Sign(vec.Dot(wStar, x))
		if r.Float64() < noise {
			Y[t] = -Y[t]
		}
	}
	return X, Y
}

// runOracle feeds X to l, answering every request at once from Y, and
// returns the decisions.
func runOracle(t testing.TB, l *Learner, X [][]float64, Y []float64) []Decision {
	t.Helper()
	out := make([]Decision, 0, len(X))
	for i, x := range X {
		dec, err := l.Observe(x)
		if err != nil {
			t.Fatalf("observe %d: %v", i, err)
		}
		if dec.Request {
			if err := l.Label(dec.ID, Y[i]); err != nil {
				t.Fatalf("label %d: %v", dec.ID, err)
			}
		}
		out = append(out, dec)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	return out
}

func mustNew(t testing.TB, cfg Config, seed uint64) *Learner {
	t.Helper()
	l, err := New(cfg, rng.Seeded(seed), nil)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// pointAt returns a point of norm ≤ 1 at distance d from the hyperplane of
// w = e_0 (any d ∈ [0, 1]) in dimension dim.
func pointAt(d float64, dim int) []float64 {
	x := make([]float64, dim)
	x[0] = d
	if dim > 1 {
		x[1] = math.Sqrt(math.Max(0, 1-d*d)) / 2
	}
	return x
}
