package dpsgd

import (
	"fmt"
	"math"

	"github.com/dpal-dev/dpal/dp/account"
)

// Plan is a DP-SGD run calibrated for a target guarantee.
type Plan struct {
	// NoiseMultiplier is σ (noise standard deviation over C).
	NoiseMultiplier float64 `json:"noise_multiplier"`
	// SampleRate is the Poisson rate q = batch/n.
	SampleRate float64 `json:"sample_rate"`
	// Steps is ⌈epochs/q⌉.
	Steps int `json:"steps"`
	// Guarantee is what the accountant certifies for the run.
	Guarantee account.EpsilonResult `json:"guarantee"`
}

// Calibrate returns the smallest σ (to relative 1e-9, rounded to the safe
// side: account.CalibrateNoise) for which ⌈epochs·n/batch⌉ steps at rate
// q = batch/n are (eps, delta)-DP under the RDP accountant.
func Calibrate(eps, delta, epochs float64, batch, n int) (Plan, error) {
	q, steps, err := Schedule(epochs, batch, n)
	if err != nil {
		return Plan{}, err
	}
	sigma, res, err := account.CalibrateNoise(account.Budget{Epsilon: eps, Delta: delta}, q, steps, account.Options{})
	if err != nil {
		return Plan{}, fmt.Errorf("dpsgd: %w", err)
	}
	return Plan{NoiseMultiplier: sigma, SampleRate: q, Steps: steps, Guarantee: res}, nil
}

// MaxSteps is the most steps Schedule plans: 2³¹, days of the fastest
// model's steps and far beyond any tuned setting (the longest default,
// mnist's CNN, takes 3,516). It keeps a run from being planned for 10¹²
// steps, and the step count an exact int.
const MaxSteps = 1 << 31

// Schedule returns the Poisson rate q = batch/n and the ⌈epochs/q⌉ steps of
// a run of epochs epochs at expected batch size batch over n records (at
// most MaxSteps).
func Schedule(epochs float64, batch, n int) (q float64, steps int, err error) {
	if n < 1 || batch < 1 || batch > n {
		return 0, 0, fmt.Errorf("dpsgd: expected batch %d must be in [1, n=%d]", batch, n)
	}
	if !(epochs > 0) || math.IsInf(epochs, 0) {
		return 0, 0, fmt.Errorf("dpsgd: epochs must be finite and > 0, got %v", epochs)
	}
	q = float64(batch) / float64(n)
	s := math.Ceil(epochs/q - 1e-9)
	if s > MaxSteps {
		return 0, 0, fmt.Errorf("dpsgd: %v epochs at batch %d of n = %d records take %.0f steps, above the limit %d",
			epochs, batch, n, s, MaxSteps)
	}
	return q, int(s), nil
}
