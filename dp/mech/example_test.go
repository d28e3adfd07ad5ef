package mech_test

import (
	"fmt"

	"github.com/dpal-dev/dpal/dp/mech"
	"github.com/dpal-dev/dpal/dp/rng"
)

func ExampleLaplace() {
	m, err := mech.NewLaplace(0.5, 1) // ε = 0.5, sensitivity 1
	if err != nil {
		fmt.Println(err)
		return
	}
	// Tests and experiments use a seeded source; production uses rng.Secure().
	y, err := m.Release(rng.Seeded(7), 42)
	if err != nil {
		fmt.Println(err)
		return
	}
	onGrid := y/m.Granularity() == float64(int64(y/m.Granularity()))
	fmt.Println(m.Cost().Mechanism, m.Cost().Epsilon, onGrid)
	// Output: laplace 0.5 true
}

func ExampleNewGaussian() {
	m, err := mech.NewGaussian(1, 1e-5, 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("sigma %.2f\n", m.Sigma())
	// Output: sigma 3.73
}

func ExampleRandomizedResponse() {
	m, _ := mech.NewRandomizedResponse(mech.RREpsilon(0.25)) // flip a quarter of the bits
	fmt.Printf("eps %.4f flip %.2f\n", m.Cost().Epsilon, m.FlipProb())
	_ = m.Release(rng.Seeded(1), true)
	// Output: eps 1.0986 flip 0.25
}

func ExampleGammaVector() {
	m, err := mech.NewGammaVector(1, 2, 3) // ε = 1, ℓ2 sensitivity 2, d = 3
	if err != nil {
		fmt.Println(err)
		return
	}
	grad := []float64{0.1, -0.2, 0.3}
	if err := m.AddTo(rng.Seeded(1), grad); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(grad), m.Cost().Epsilon)
	// Output: 3 1
}
