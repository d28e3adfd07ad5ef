package f32

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestAddColSums compares AddColSums with the plain loop bit for bit, for
// widths with and without groups of 16 and 8 and a tail.
func TestAddColSums(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct{ rows, cols int }{
		{0, 16}, {1, 1}, {1, 8}, {3, 7}, {5, 16}, {196, 16}, {25, 32}, {7, 24}, {9, 40}, {4, 45}, {2, 10},
	} {
		m := make([]float32, c.rows*c.cols)
		for i := range m {
			m[i] = float32(r.NormFloat64()) * float32(math.Pow(10, float64(r.IntN(9)-4)))
		}
		got, want := make([]float32, c.cols), make([]float32, c.cols)
		for j := range got {
			got[j] = float32(r.NormFloat64())
			want[j] = got[j]
		}
		AddColSums(got, m, c.rows, c.cols)
		for i := range c.rows {
			for j := range c.cols {
				want[j] += m[i*c.cols+j]
			}
		}
		for j := range got {
			if math.Float32bits(got[j]) != math.Float32bits(want[j]) {
				t.Errorf("%d×%d column %d: %g, want %g", c.rows, c.cols, j, got[j], want[j])
			}
		}
	}
}
