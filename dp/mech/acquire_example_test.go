package mech_test

import (
	"fmt"

	"github.com/dpal-dev/dpal/dp/mech"
	"github.com/dpal-dev/dpal/dp/rng"
)

// One private entropy selection of 2 records out of 4 at ε = 0.5 (ε_Sel = 2
// over T = 4 phases), with the paper's clipping to 0.8. The seed is for the
// example only; production uses rng.Secure().
func ExampleAcquire() {
	a, err := mech.NewAcquire(mech.Entropy, 0.5, 2, 3, mech.EntropyClip)
	if err != nil {
		panic(err)
	}
	pool := [][][]float64{
		{{0.98, 0.01, 0.01}},
		{{0.34, 0.33, 0.33}},
		{{0.5, 0.5, 0}},
		{{0.9, 0.05, 0.05}},
	}
	scores, err := a.Scores(pool)
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
