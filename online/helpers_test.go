package online

import (
	"math"

	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/vec"
)

// synthetic returns n regression records in the unit ball: y = vᵀx* +
// noise, clipped to [−1, 1].
func synthetic(d, n int, seed uint64) []Example {
	r := rng.Seeded(seed)
	u := func() float64 { return float64(r.Uint64()>>11)/(1<<53)*2 - 1 }
	xs := make([]float64, d)
	for j := range xs {
		xs[j] = u()
	}
	vec.ProjectBall(xs, 1)
	out := make([]Example, n)
	for i := range out {
		v := make([]float64, d)
		for j := range v {
			v[j] = u()
		}
		vec.ProjectBall(v, 1)
		y := math.Max(-1, math.Min(1, vec.Dot(v, xs)+0.1*u()))
		out[i] = Example{V: v, Y: y}
	}
	return out
}
