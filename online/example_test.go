package online_test

import (
	"fmt"
	"math"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/online"
)

// Private FTL on a small regression stream: the whole run is charged to
// the ledger before the first release; Privacy reports the paper's nominal
// ε, the exact ε of the release sequence and the ε the ledger charged.
func ExampleNewLearner() {
	cost := online.Cost{Loss: online.Squared, Dim: 2, FeatureBound: 1, LabelBound: 1, Alpha: 1, Radius: math.Inf(1)}
	spec := online.Spec{Algorithm: "ftl", Cost: cost, Steps: 1000, Batch: 1,
		Calibration: online.Calibration{Exact: true, Epsilon: 1, Delta: 1e-5}}
	led, _ := ledger.New(account.Budget{Epsilon: 2, Delta: 1e-5})
	learner, priv, err := online.NewLearner(spec, led, []string{"stream-A"})
	if err != nil {
		fmt.Println(err)
		return
	}
	records := make([]online.Example, 1000)
	for i := range records {
		v := []float64{0.6, 0.8 * float64(i%2)}
		records[i] = online.Example{V: v, Y: 0.5*v[0] - 0.25*v[1]}
	}
	cps, err := online.Run(rng.Seeded(1), learner, cost, records, []int{1000}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	spent, _ := led.Spent("stream-A")
	fmt.Printf("exact ε %.2f, charged ε %.2f (ledger %.2f), regret > 0: %v\n",
		priv.ExactEpsilon, priv.ChargedEpsilon, spent, cps[0].Loss > cps[0].Best)
	// Output: exact ε 0.92, charged ε 1.00 (ledger 1.00), regret > 0: true
}
