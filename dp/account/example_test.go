package account_test

import (
	"fmt"

	"github.com/dpal-dev/dpal/dp/account"
)

// Composing losses of different kinds: a pure-ε count, an (ε, δ) release
// and a DP-SGD run (an RDP curve), read as one (ε, δ) guarantee.
func ExampleCompose() {
	dpsgd, err := account.SubsampledGaussian([]account.Phase{{SampleRate: 256.0 / 60000, NoiseMultiplier: 1.1, Steps: 14062}})
	if err != nil {
		panic(err)
	}
	total, err := account.Compose(account.Pure("laplace", 0.1), account.Approx("gaussian", 0.5, 1e-6), dpsgd)
	if err != nil {
		panic(err)
	}
	eps, err := total.EpsilonAt(1e-5, account.Balle2020)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s: ε = %.4f at δ = 1e-5\n", total.Kind(), eps)
	// Output:
	// mixed: ε = 3.2114 at δ = 1e-5
}

// The RDP accountant on the Opacus reference case (MNIST DP-SGD: batch 256
// of 60000, σ = 1.1, 60 epochs).
func ExampleEpsilon() {
	phases := []account.Phase{{SampleRate: 256.0 / 60000, NoiseMultiplier: 1.1, Steps: 14062}}
	res, err := account.Epsilon(phases, 1e-5, account.Options{})
	if err != nil {
		panic(err)
	}
	fmt.Printf("ε = %.10f at order %v\n", res.Epsilon, res.Order)
	res, _ = account.Epsilon(phases, 1e-5, account.Options{Conversion: account.Classic})
	fmt.Printf("classic conversion: ε = %.10f at order %v\n", res.Epsilon, res.Order)
	// Output:
	// ε = 2.5965558690 at order 8.1
	// classic conversion: ε = 3.0082720825 at order 8.8
}

// Calibrating DP-SGD noise for a budget.
func ExampleCalibrateNoise() {
	sigma, res, err := account.CalibrateNoise(account.Budget{Epsilon: 8, Delta: 1e-5}, 0.01, 1000, account.Options{})
	if err != nil {
		panic(err)
	}
	fmt.Printf("σ = %.6f gives ε = %.6f at order %v\n", sigma, res.Epsilon, res.Order)
	// Output:
	// σ = 0.615717 gives ε = 8.000000 at order 2.9
}

// Optimal composition of k pure-ε steps against the simple advanced
// composition bound.
func ExampleKOVComposition() {
	kov, _ := account.KOVComposition(0.1, 0, 100, 1e-6)
	drv, _ := account.DRVComposition(0.1, 0, 100, 1e-6)
	fmt.Printf("KOV ε = %.4f, DRV ε = %.4f, basic ε = %.1f\n", kov, drv.Epsilon, 100*0.1)
	// Output:
	// KOV ε = 4.7746, DRV ε = 6.3082, basic ε = 10.0
}
