package data

import (
	"math"
	"slices"
	"testing"

	"github.com/dpal-dev/dpal/vec"
)

func TestSyntheticRegression(t *testing.T) {
	a, xs := SyntheticRegression(500, 10, 0.1, 7)
	b, _ := SyntheticRegression(500, 10, 0.1, 7)
	if math.Abs(vec.Norm(xs)-1) > 1e-12 {
		t.Fatalf("‖x*‖ = %v", vec.Norm(xs))
	}
	for i, x := range a.X {
		if vec.Norm(x) > 1 || math.Abs(a.Y[i]) > 1 {
			t.Fatalf("row %d outside the unit bounds", i)
		}
		if !slices.Equal(x, b.X[i]) || a.Y[i] != b.Y[i] {
			t.Fatalf("row %d differs between two runs with one seed", i)
		}
	}
	c := SyntheticClassification(500, 10, 0.1, 7)
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}
