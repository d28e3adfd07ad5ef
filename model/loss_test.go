package model

import (
	"math"
	"testing"
)

func TestLossDerivMatchesFiniteDifference(t *testing.T) {
	for _, l := range []Loss{Hinge{}, Logistic{}} {
		for _, m := range []float64{-30, -2, -0.5, 0.3, 0.99, 1.5, 40} {
			h := 1e-6
			fd := (l.Value(m+h) - l.Value(m-h)) / (2 * h)
			if d := l.Deriv(m); math.Abs(d-fd) > 1e-5 {
				t.Errorf("%s'(%v) = %v, finite difference %v", l.Name(), m, d, fd)
			}
		}
	}
}
