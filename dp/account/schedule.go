package account

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Phase is a run of Steps steps of the Poisson subsampled Gaussian
// mechanism with sampling rate SampleRate and noise multiplier
// NoiseMultiplier (noise standard deviation over the L2 sensitivity).
type Phase struct {
	// SampleRate is the Poisson sampling probability q of each record per
	// step, 0 ≤ q ≤ 1.
	SampleRate float64 `json:"sample_rate"`
	// NoiseMultiplier is σ, the Gaussian noise standard deviation divided by
	// the L2 sensitivity (finite, > 0).
	NoiseMultiplier float64 `json:"noise_multiplier"`
	// Steps is the number of steps in the phase (≥ 0).
	Steps int `json:"steps"`
}

// Validate accepts 0 ≤ q ≤ 1, finite σ > 0 and steps ≥ 0.
func (p Phase) Validate() error {
	if !(p.SampleRate >= 0 && p.SampleRate <= 1) {
		return fmt.Errorf("sample rate must satisfy 0 <= q <= 1, got %v", p.SampleRate)
	}
	if err := validateSigma(p.NoiseMultiplier); err != nil {
		return err
	}
	if p.Steps < 0 {
		return fmt.Errorf("steps must be >= 0, got %d", p.Steps)
	}
	return nil
}

func validateSigma(sigma float64) error {
	if !(sigma > 0) || math.IsInf(sigma, 0) {
		return fmt.Errorf("noise multiplier must be finite and > 0, got %v", sigma)
	}
	return nil
}

func validatePhases(phases []Phase) error {
	if len(phases) == 0 {
		return fmt.Errorf("no phases")
	}
	for i, p := range phases {
		if err := p.Validate(); err != nil {
			return fmt.Errorf("phase %d: %w", i+1, err)
		}
	}
	return nil
}

// ParseSchedule parses "q:steps,q:steps,…" or, per phase,
// "q:sigma:steps". Phases without their own sigma get sigma, which must then
// be > 0; pass 0 when every phase must carry its own.
func ParseSchedule(s string, sigma float64) ([]Phase, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("empty schedule")
	}
	var out []Phase
	for i, item := range strings.Split(s, ",") {
		p, err := parsePhase(strings.TrimSpace(item), sigma)
		if err != nil {
			return nil, fmt.Errorf("schedule phase %d %q: %w", i+1, item, err)
		}
		out = append(out, p)
	}
	return out, nil
}

func parsePhase(item string, sigma float64) (Phase, error) {
	f := strings.Split(item, ":")
	if len(f) != 2 && len(f) != 3 {
		return Phase{}, fmt.Errorf("want q:steps or q:sigma:steps")
	}
	q, err := strconv.ParseFloat(strings.TrimSpace(f[0]), 64)
	if err != nil {
		return Phase{}, fmt.Errorf("sample rate: %w", err)
	}
	steps, err := strconv.Atoi(strings.TrimSpace(f[len(f)-1]))
	if err != nil {
		return Phase{}, fmt.Errorf("steps: %w", err)
	}
	if len(f) == 3 {
		if sigma, err = strconv.ParseFloat(strings.TrimSpace(f[1]), 64); err != nil {
			return Phase{}, fmt.Errorf("noise multiplier: %w", err)
		}
	} else if sigma == 0 {
		return Phase{}, fmt.Errorf("no noise multiplier (give q:sigma:steps or a default)")
	}
	p := Phase{SampleRate: q, NoiseMultiplier: sigma, Steps: steps}
	return p, p.Validate()
}
