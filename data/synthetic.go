package data

import (
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/dpal-dev/dpal/vec"
)

// SyntheticRegression is the synthetic stream of Jain, Kothari and
// Thakurta 2012, App. G.1 (Figure 2(a)), with the choices the paper leaves
// open made explicit: x* is a standard Gaussian vector scaled to ‖x*‖ = 1;
// v_t ~ N(0, I/d), projected onto the unit ball; y_t = v_tᵀx* + η_t with
// η_t ~ N(0, noiseSD²) ("standard variance 0.01" read as the variance,
// noiseSD = 0.1), clamped to [−1, 1]. It is seeded data, not noise: the
// generator is math/rand/v2's PCG.
func SyntheticRegression(n, d int, noiseSD float64, seed uint64) (*Regression, []float64) {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	xs := make([]float64, d)
	for j := range xs {
		xs[j] = r.NormFloat64()
	}
	nx := vec.Norm(xs)
	for j := range xs {
		xs[j] /= nx
	}
	out := &Regression{Name: "synthetic", X: make([][]float64, n), Y: make([]float64, n), FeatureNames: make([]string, d)}
	for j := range d {
		out.FeatureNames[j] = "g" + strconv.Itoa(j+1)
	}
	sd := 1 / math.Sqrt(float64(d))
	for i := range n {
		v := make([]float64, d)
		for j := range v {
			v[j] = sd * r.NormFloat64()
		}
		vec.ProjectBall(v, 1)
		out.X[i] = v
		out.Y[i] = math.Max(-1, math.Min(1, vec.Dot(v, xs)+noiseSD*r.NormFloat64()))
	}
	return out, xs
}

// SyntheticClassification is a ±1-labelled stream from the same design:
// y_t = sign(v_tᵀx* + η_t), so a linear classifier through 0 separates it
// up to the label noise η.
func SyntheticClassification(n, d int, noiseSD float64, seed uint64) *Dataset {
	reg, _ := SyntheticRegression(n, d, noiseSD, seed)
	out := &Dataset{Name: "synthetic", X: reg.X, Y: reg.Y, FeatureNames: reg.FeatureNames}
	for i, y := range out.Y {
		out.Y[i] = 1
		if y < 0 {
			out.Y[i] = -1
		}
	}
	return out
}
