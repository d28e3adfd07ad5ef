package searchrepro

import (
	"fmt"
	"math"

	"github.com/dpal-dev/dpal/dp/rng"
)

// Shapes of the synthetic generator: the two kinds of Yahoo A1 series the
// paper contrasts (§6.1).
const (
	// Mixture draws |N(0.3, 0.05²)| or |N(0.7, 0.08²)| with equal odds.
	Mixture = "mixture"
	// Skewed draws 0.1·Exp(1): most mass near 0, a thin right tail.
	Skewed = "skewed"
)

// SyntheticLen is the length of a synthetic series (a Yahoo A1 series has
// about 1,420 points).
const SyntheticLen = 1420

// Synthetic draws size scores of shape and plants one anomaly at a uniformly
// random index with x* chosen so the §6.1 thresholds have exactly the given
// ratio (t_h − t_ℓ)/t_ℓ (0 < ratio < 8).
func Synthetic(shape string, size int, ratio float64, r *rng.Rand) (Instance, error) {
	if !(ratio > 0 && ratio < 8) || size < 2 {
		return Instance{}, fmt.Errorf("synthetic: need 0 < ratio < 8 and size >= 2, got %v, %d", ratio, size)
	}
	xs := make([]float64, size)
	for i := range xs {
		switch shape {
		case Mixture:
			if r.IntN(2) == 0 {
				xs[i] = math.Abs(0.3 + 0.05*r.NormFloat64())
			} else {
				xs[i] = math.Abs(0.7 + 0.08*r.NormFloat64())
			}
		case Skewed:
			xs[i] = 0.1 * r.ExpFloat64()
		default:
			return Instance{}, fmt.Errorf("synthetic: unknown shape %q", shape)
		}
	}
	star := r.IntN(size)
	xs[star] = 0
	xj := 0.0
	for _, x := range xs {
		xj = max(xj, x)
	}
	// ratio = 0.8D/(x_j + 0.1D) for D = x* − x_j.
	xs[star] = xj + ratio*xj/(0.8-0.1*ratio)
	anomaly := make([]bool, size)
	anomaly[star] = true
	in, ok, err := NewInstance(fmt.Sprintf("synthetic-%s-r%.3g", shape, ratio), Raw, xs, anomaly)
	if err != nil || !ok {
		return in, fmt.Errorf("synthetic: %v (fit %v)", err, ok)
	}
	in.Shape = shape
	return in, nil
}
