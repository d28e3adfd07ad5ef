package nn_test

import (
	"fmt"

	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/model/nn"
)

// A DP-SGD step's clipped sum: every example's gradient scaled to norm at
// most C, summed, without materialising the per-example gradients.
func ExampleNet_ClippedGrad() {
	spec, _ := nn.ParseArch("mlp:16")
	spec.Inputs, spec.Classes = 4, 3
	net, _ := nn.New(spec, rng.Seeded(1))
	rows := [][]float64{{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 1}}
	labels := []int{0, 1, 2}
	sum, _ := net.ClippedGrad(rows, labels, 0.1, rng.Seeded(2))
	norm := 0.0
	for _, v := range sum {
		norm += v * v
	}
	fmt.Printf("%d parameters, clipped sum of 3 examples within 3·C: %v\n", net.NumParams(), norm <= 0.09*(1+1e-12))
	// Output: 131 parameters, clipped sum of 3 examples within 3·C: true
}
