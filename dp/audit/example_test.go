package audit_test

import (
	"fmt"

	"github.com/dpal-dev/dpal/dp/audit"
	"github.com/dpal-dev/dpal/dp/rng"
)

// Audit a (deliberately leaky) mechanism that reports a bit truthfully with
// probability 0.9: its true ε is ln 9 ≈ 2.2, so a claim of ε = 1 fails.
func Example() {
	leaky := func(bit bool) func(*rng.Rand) bool {
		return func(r *rng.Rand) bool {
			if r.IntN(10) == 0 {
				return !bit
			}
			return bit
		}
	}
	res, err := audit.Bool(rng.Seeded(1), leaky(false), leaky(true),
		audit.Config{Trials: 100000, Confidence: 0.99})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("epsilon lower bound > 1: %v\n", res.Epsilon > 1)
	// Output: epsilon lower bound > 1: true
}
