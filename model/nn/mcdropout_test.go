package nn

import (
	"math"
	"testing"

	"github.com/dpal-dev/dpal/dp/rng"
)

func TestPredictDropout(t *testing.T) {
	drop := Spec{Arch: MLP, Inputs: 6, Classes: 3, Hidden: []int{8, 5}, Activation: ReLU, Dropout: 0.5}
	t.Run("equals the mean of full stochastic passes", func(t *testing.T) {
		n, _ := New(drop, rng.Seeded(1))
		rows, _ := testBatch(rng.Seeded(2), drop, 20)
		const passes = 7
		got, err := n.PredictDropout(rows, passes, rng.Seeded(3))
		if err != nil {
			t.Fatal(err)
		}
		r := rng.Seeded(3)
		want := make([][]float64, len(rows))
		for i := range want {
			want[i] = make([]float64, drop.Classes)
		}
		p := make([]float64, drop.Classes)
		for range passes {
			z := n.forward(rows, true, r)
			for i := range z.r {
				n.probs(p, z.row(i))
				for c := range p {
					want[i][c] += p[c] / passes
				}
			}
		}
		for i := range rows {
			for c := range want[i] {
				if math.Abs(got[i][c]-want[i][c]) > 1e-12 {
					t.Fatalf("row %d class %d: %v, want %v", i, c, got[i][c], want[i][c])
				}
			}
		}
	})
	t.Run("passes differ; one seed repeats", func(t *testing.T) {
		n, _ := New(drop, rng.Seeded(1))
		rows, _ := testBatch(rng.Seeded(2), drop, 5)
		a, _ := n.PredictDropout(rows, 1, rng.Seeded(4))
		b, _ := n.PredictDropout(rows, 1, rng.Seeded(5))
		c, _ := n.PredictDropout(rows, 1, rng.Seeded(4))
		if a[0][0] == b[0][0] && a[1][0] == b[1][0] {
			t.Error("two seeds gave the same dropout pass")
		}
		if a[0][0] != c[0][0] {
			t.Error("one seed gave two different passes")
		}
	})
	t.Run("no dropout is Predict", func(t *testing.T) {
		s := drop
		s.Dropout = 0
		n, _ := New(s, rng.Seeded(1))
		rows, _ := testBatch(rng.Seeded(2), s, 5)
		got, _ := n.PredictDropout(rows, 3, rng.Seeded(4))
		want, _ := n.Predict(rows)
		for i := range want {
			for c := range want[i] {
				if math.Abs(got[i][c]-want[i][c]) > 1e-12 {
					t.Fatalf("row %d: %v, want %v", i, got[i], want[i])
				}
			}
		}
	})
	t.Run("bad passes", func(t *testing.T) {
		n, _ := New(drop, rng.Seeded(1))
		if _, err := n.PredictDropout(nil, 0, rng.Seeded(1)); err == nil {
			t.Error("passes = 0 accepted")
		}
	})
}
