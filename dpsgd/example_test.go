package dpsgd_test

import (
	"fmt"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/dpsgd"
	"github.com/dpal-dev/dpal/model/nn"
)

// A pool active learner's training phase with step amplification: the
// records labelled earlier are sampled at one rate, the newly labelled ones
// at a higher rate, and each group is charged its own loss before any step.
func ExampleTrainer_Run() {
	r := rng.Seeded(1) // experiments only; rng.Secure() in production
	var d dpsgd.Data
	for i := range 300 {
		x := []float64{0.1 * float64(i%7), 0.1 * float64(i%5)}
		x[i%2] += 1
		d.X, d.Labels = append(d.X, x), append(d.Labels, i%2)
	}
	net, _ := nn.New(nn.Spec{Arch: nn.LogReg, Inputs: 2, Classes: 2}, r)
	tr, _ := dpsgd.New(net, dpsgd.Config{NoiseMultiplier: 2, Clip: 1, Optimizer: dpsgd.Momentum, LR: 0.5})
	led, _ := ledger.New(account.Budget{Epsilon: 8, Delta: 1e-5})
	old, fresh := make([]int, 200), make([]int, 100)
	for i := range old {
		old[i] = i
	}
	for i := range fresh {
		fresh[i] = 200 + i
	}
	res, err := tr.Run(led, r, d, []dpsgd.Group{
		{Name: "labelled-round-1", Records: old, Rate: 0.05},
		{Name: "labelled-round-2", Records: fresh, Rate: 0.1},
	}, 50, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	e1, _ := led.Spent("labelled-round-1")
	e2, _ := led.Spent("labelled-round-2")
	fmt.Printf("%d steps, expected batch %v, ε old %.2f < ε new %.2f\n", res.Steps, res.ExpectedBatch, e1, e2)
	// Output: 50 steps, expected batch 20, ε old 0.88 < ε new 1.84
}
