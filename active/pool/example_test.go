package pool_test

import (
	"fmt"

	"github.com/dpal-dev/dpal/active/pool"
)

// Step amplification on the CIFAR-10 setting of the paper's code: every
// group ends exactly at ε = 8, selections (eq. 6) included.
func ExampleBuild() {
	p, err := pool.Build(pool.Config{Epsilon: 8, EpsilonSelect: 2, Delta: 1e-5, Batch: 4096, Epochs: 30,
		Initial: 10000, Queries: []int{10000, 3000, 1000, 1000}, Mode: pool.StepAmplification})
	if err != nil {
		panic(err)
	}
	for _, g := range p.Groups {
		fmt.Printf("%-8s training %.4f + selection %.1f = %.6f\n", g.Group, g.EpsilonTraining, g.EpsilonSelection, g.EpsilonTotal)
	}
	// Output:
	// initial  training 8.0000 + selection 0.0 = 8.000000
	// query-1  training 7.5000 + selection 0.5 = 8.000000
	// query-2  training 7.0000 + selection 1.0 = 8.000000
	// query-3  training 6.5000 + selection 1.5 = 8.000000
	// query-4  training 6.0000 + selection 2.0 = 8.000000
}
