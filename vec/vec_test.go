package vec

import (
	"math"
	"testing"
)

func TestProjectBall(t *testing.T) {
	w := []float64{3, 4}
	ProjectBall(w, 1)
	if math.Abs(Norm(w)-1) > 1e-15 {
		t.Fatalf("norm after projection = %v", Norm(w))
	}
	v := []float64{0.1, 0.2}
	ProjectBall(v, 1)
	if v[0] != 0.1 || v[1] != 0.2 {
		t.Fatal("projection moved a point inside the ball")
	}
}

func TestProjectBallBoundHoldsAsComputed(t *testing.T) {
	// Vectors whose plain rescaling lands a rounding step above the radius.
	for seed := 1; seed <= 2000; seed++ {
		w := make([]float64, 7)
		for i := range w {
			w[i] = math.Sin(float64(seed*(i+3))) * float64(seed%13+1)
		}
		ProjectBall(w, 1)
		if n := Norm(w); n > 1 {
			t.Fatalf("seed %d: norm after projection %v > 1", seed, n)
		}
	}
}

func TestFiniteNorm(t *testing.T) {
	for _, c := range []struct {
		name string
		a    []float64
		bad  int
	}{
		{"finite", []float64{3, 4}, -1},
		{"empty", nil, -1},
		{"nan", []float64{1, math.NaN(), math.Inf(1)}, 1},
		{"inf first", []float64{math.Inf(-1), 0}, 0},
		{"overflow", []float64{1e200, 1e200}, -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			n, bad := FiniteNorm(c.a)
			if bad != c.bad || (bad < 0 && n != Norm(c.a)) {
				t.Errorf("FiniteNorm = %v, %d; want Norm %v, %d", n, bad, Norm(c.a), c.bad)
			}
		})
	}
}
