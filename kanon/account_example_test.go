package kanon_test

import (
	"fmt"

	"github.com/dpal-dev/dpal/kanon"
)

// Sampling 60% of the log and keeping queries seen at least 100 times in
// the sample: δ at ε = −ln(1 − β) + 0.5 peaks past n_m.
func ExampleDelta() {
	r, err := kanon.Delta(0.6, 100, 1.416290731874155)
	if err != nil {
		panic(err)
	}
	fmt.Printf("delta %.4g, n_m %d, peak at n %d\n", r.Delta, r.NMin, r.NMax)
	// Output: delta 4.511e-13, n_m 110, peak at n 114
}

// The smallest threshold that gives (1, 1e-6)-DP when 10% of the log is
// sampled.
func ExampleSmallestK() {
	r, err := kanon.SmallestK(0.1, 1, 1e-6)
	if err != nil {
		panic(err)
	}
	fmt.Printf("k = %d (delta %.3g)\n", r.K, r.Delta)
	// Output: k = 9 (delta 4.91e-07)
}
