// Package vec owns dpal's pure vector helpers on []float64: the inner
// product, the Euclidean norm and the projection onto an ℓ2 ball. It
// imports nothing of dpal's, so the data loaders and the learners measure
// and project vectors with the same arithmetic (the same summation order,
// hence the same rounding) without depending on each other: a row the
// loaders project into the unit ball is inside it by every learner's norm.
package vec

import "math"

// Dot returns ⟨a, b⟩ over the common length, summed left to right.
func Dot(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// Norm returns the Euclidean norm ‖a‖.
func Norm(a []float64) float64 { return math.Sqrt(Dot(a, a)) }

// FiniteNorm returns Norm(a) and the index of a's first NaN or ±Inf
// coordinate, or −1 when every coordinate is finite. It takes one pass
// when they all are: Dot(a, a) is NaN or +Inf whenever some coordinate is,
// and only then are the coordinates searched (finite coordinates whose
// squares overflow give norm +Inf and −1, which a bound check refuses).
func FiniteNorm(a []float64) (norm float64, bad int) {
	ss := Dot(a, a)
	if math.IsNaN(ss) || math.IsInf(ss, 0) {
		for i, x := range a {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return math.Sqrt(ss), i
			}
		}
	}
	return math.Sqrt(ss), -1
}

// ProjectBall scales w in place onto the ℓ2 ball of the given radius
// (the projection Π of Ghassemi et al. eq. 10); a w inside the ball is
// left unchanged. Afterwards Norm(w) ≤ radius holds exactly as computed
// (plain scaling can leave radius·(1 + 2⁻⁵²)), so a strict bound check
// downstream, such as a learner's reject mode, never refuses a projected
// vector.
func ProjectBall(w []float64, radius float64) {
	n := Norm(w)
	if n <= radius || n == 0 {
		return
	}
	s := radius / n
	for i := range w {
		w[i] *= s
	}
	for Norm(w) > radius {
		for i := range w {
			w[i] *= 1 - 0x1p-52
		}
	}
}
