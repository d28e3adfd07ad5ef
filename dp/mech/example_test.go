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
	fmt.Println(m.Loss().Mechanism, m.Loss().Epsilon, onGrid)
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
	fmt.Printf("eps %.4f flip %.2f\n", m.Loss().Epsilon, m.FlipProb())
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
	fmt.Println(len(grad), m.Loss().Epsilon)
	// Output: 3 1
}

func ExampleExponential() {
	// Pick the most common item; one record changes each count by at most 1,
	// all in the same direction (monotone).
	m, err := mech.NewExponential(1, 1, true)
	if err != nil {
		fmt.Println(err)
		return
	}
	counts := []float64{3, 40, 5}
	i, err := m.Select(rng.Seeded(1), counts)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(i, m.Loss().Mechanism, m.Loss().Epsilon)
	// Output: 1 exponential 1
}

func ExampleReportNoisyMax() {
	m, err := mech.NewReportNoisyMax(1, 1, false)
	if err != nil {
		fmt.Println(err)
		return
	}
	i, err := m.Select(rng.Seeded(2), []float64{3, 40, 5})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(i, m.Loss().Mechanism, m.Loss().Epsilon)
	// Output: 1 report-noisy-max 1
}

func ExampleNoisyTopK() {
	// Each record touches one item's score by at most 1, so one selection
	// costs ε per record by parallel composition.
	m, err := mech.NewNoisyTopK(1, 1, 2)
	if err != nil {
		fmt.Println(err)
		return
	}
	top, err := m.Select(rng.Seeded(3), []float64{0, 90, 10, 60})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(top, m.Loss().Mechanism, m.Loss().Epsilon)
	// Output: [1 3] noisy-top-k 1
}

func ExampleGaussianVector() {
	// DP-SGD noise: noise multiplier 1.1, clipping norm 1, d = 3. The DP-SGD
	// accountant, not the mechanism, records the cost.
	m, err := mech.NewGaussianVector(1.1, 1, 3)
	if err != nil {
		fmt.Println(err)
		return
	}
	sum := []float64{0.5, -0.25, 1}
	if err := m.AddTo(rng.Seeded(4), sum); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("sigma >= z*C: %v, on grid: %v\n", m.Sigma() >= 1.1, sum[0]/m.Granularity() == float64(int64(sum[0]/m.Granularity())))
	// Output: sigma >= z*C: true, on grid: true
}

// A tree mechanism releases a noisy running sum after every atom; its whole
// run of T releases is one Gaussian mechanism, charged once.
func ExampleTree() {
	tr, err := mech.NewTree(1000, 2, 1, 4) // T = 1000 atoms in R², ‖w‖ ≤ 1, z = 4
	if err != nil {
		fmt.Println(err)
		return
	}
	r := rng.Seeded(1)
	for range 10 {
		if _, err := tr.Add(r, []float64{0.5, -0.5}); err != nil {
			fmt.Println(err)
			return
		}
	}
	eps, _ := mech.GaussianEpsilon(tr.Mu(), 1e-6)
	fmt.Printf("levels %d, rho %.4f, exact ε at δ=1e-6 %.2f\n", tr.Levels(), tr.Loss().Rho, eps)
	// Output: levels 11, rho 0.3438, exact ε at δ=1e-6 3.95
}

// A NoiseStream hands out the same noise however it is cut: DP-SGD draws a
// step's noise chunk by chunk on one core and whole vectors ahead on more.
func ExampleGaussianVector_NewNoiseStream() {
	const d = 5000
	m, err := mech.NewGaussianVector(1.1, 1, d)
	if err != nil {
		fmt.Println(err)
		return
	}
	whole, chunked := make([]float64, d), make([]float64, d)
	m.NewNoiseStream(rng.Seeded(3)).Next(whole)
	s := m.NewNoiseStream(rng.Seeded(3))
	for lo := 0; lo < d; lo += 1000 {
		s.Next(chunked[lo : lo+1000])
	}
	same := true
	for i := range whole {
		same = same && whole[i] == chunked[i]
	}
	fmt.Println(same)
	// Output: true
}
