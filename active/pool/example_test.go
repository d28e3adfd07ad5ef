package pool_test

import (
	"fmt"

	"github.com/dpal-dev/dpal/active/pool"
	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/dpsgd"
	"github.com/dpal-dev/dpal/model/nn"
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

// A whole private active-learning run on a toy pool: the oracle reveals the
// pool's own labels, entropy selects privately, and every record's ledger
// ε is what the plan promised.
func ExampleRun() {
	x, y := [][]float64{}, []int{}
	for i := range 600 {
		c := i % 2
		x = append(x, []float64{0.5*float64(c) - 0.25 + 0.001*float64(i%7), 0.1})
		y = append(y, c)
	}
	plan, err := pool.Build(pool.Config{Epsilon: 4, EpsilonSelect: 1, Delta: 1e-4, Batch: 50, Epochs: 3,
		Initial: 100, Queries: []int{50, 50}, Mode: pool.StepAmplification})
	if err != nil {
		panic(err)
	}
	led, _ := ledger.New(account.Budget{Epsilon: 4, Delta: 1e-4})
	res, err := pool.Run(led, rng.Seeded(1), pool.Input{Plan: plan, Pool: x, Oracle: pool.DatasetOracle{Classes: y},
		Learner: pool.Learner{Spec: nn.Spec{Arch: nn.LogReg, Inputs: 2, Classes: 2}, Acquisition: pool.Entropy,
			Train: dpsgd.Config{Clip: 1, LR: 0.5}}})
	if err != nil {
		panic(err)
	}
	for _, g := range res.Privacy.Trained {
		fmt.Printf("%-8s %3d records at ε %.6f (plan %.6f)\n", g.Group, g.Records, g.Ledger.Max, g.Planned)
	}
	n := res.Privacy.NotSelected
	fmt.Printf("not selected %d records at ε %.6f; deviation ≤ 1e-9: %v\n", n.Records, n.Ledger.Max, res.Privacy.MaxDeviation <= 1e-9)
	// Output:
	// initial  100 records at ε 4.000000 (plan 4.000000)
	// query-1   50 records at ε 4.000000 (plan 4.000000)
	// query-2   50 records at ε 4.000000 (plan 4.000000)
	// not selected 400 records at ε 1.000000; deviation ≤ 1e-9: true
}

// Poisson active learning on a toy pool: every record, labelled or not, is
// charged the same amplified loss once, before the first coin; the labels
// asked are random and go only to the trusted labeler.
func ExampleRun_poisson() {
	x, y := [][]float64{}, []int{}
	for i := range 600 {
		c := i % 2
		x = append(x, []float64{0.5*float64(c) - 0.25 + 0.001*float64(i%7), 0.1})
		y = append(y, c)
	}
	plan, err := pool.Build(pool.Config{Epsilon: 4, Delta: 1e-5, Batch: 50, Epochs: 3, Initial: 100, Queries: []int{50, 50},
		Mode: pool.StepAmplification, Selection: pool.Poisson, PoolSize: len(x), PMax: 0.2})
	if err != nil {
		panic(err)
	}
	pp := plan.Poisson
	fmt.Printf("η = %.4f: training ε %.3f amplified to %.3f\n", pp.EntryRate, pp.EpsilonTraining, pp.Epsilon)
	led, _ := ledger.New(account.Budget{Epsilon: 4, Delta: 1e-5})
	res, err := pool.Run(led, rng.Seeded(1), pool.Input{Plan: plan, Pool: x, Oracle: pool.DatasetOracle{Classes: y},
		Learner: pool.Learner{Spec: nn.Spec{Arch: nn.LogReg, Inputs: 2, Classes: 2}, Acquisition: pool.Entropy, Threshold: 0.5,
			Train: dpsgd.Config{Clip: 1, LR: 0.5}}})
	if err != nil {
		panic(err)
	}
	a := res.Privacy.All
	fmt.Printf("all %d records at ε %.3f…%.3f\n", len(x), a.Min, a.Max)
	// Output:
	// η = 0.4667: training ε 4.654 amplified to 4.000
	// all 600 records at ε 4.000…4.000
}

// One private entropy selection of 2 records out of 4 at ε = 0.5 (ε_Sel = 2
// over T = 4 phases), with the paper's clipping to 0.8. The seed is for the
// example only; production uses rng.Secure().
func ExampleAcquire() {
	a, err := pool.NewAcquire(pool.Entropy, 0.5, 2, 3, pool.EntropyClip)
	if err != nil {
		panic(err)
	}
	records := [][][]float64{
		{{0.98, 0.01, 0.01}},
		{{0.34, 0.33, 0.33}},
		{{0.5, 0.5, 0}},
		{{0.9, 0.05, 0.05}},
	}
	scores, err := a.Scores(records)
	if err != nil {
		panic(err)
	}
	fmt.Printf("scores %.3f, Δ = %v\n", scores, a.Sensitivity())
	picked, err := a.Select(rng.Seeded(1), scores)
	if err != nil {
		panic(err)
	}
	fmt.Println("selected", len(picked), "records; loss per scored record:", a.Loss().Epsilon)
	// Output:
	// scores [0.102 0.800 0.631 0.359], Δ = 0.8
	// selected 2 records; loss per scored record: 0.5
}
