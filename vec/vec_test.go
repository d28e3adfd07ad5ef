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
