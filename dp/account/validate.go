package account

import (
	"fmt"
	"math"
)

// ValidateEpsilon accepts finite ε > 0.
func ValidateEpsilon(eps float64) error {
	if !(eps > 0) || math.IsInf(eps, 0) {
		return fmt.Errorf("epsilon must be finite and > 0, got %v", eps)
	}
	return nil
}

// MaxTargetEpsilon is the largest ε a calibration aims for. A loss of ε
// lets an outcome's probability change by a factor up to e^ε: at 50 that
// is 5·10^21, which protects nothing. Beyond it the noise gets so small
// (σ ≈ 0.1 for one subsampled Gaussian step at ε = 50) that the RDP
// series need millions of terms: a target of 1e308 bisected for half a
// minute and gigabytes before failing. Calibrations, and the CLI's target
// flags, refuse a larger target at once.
const MaxTargetEpsilon = 50

// ValidateTargetEpsilon accepts a target 0 < ε ≤ MaxTargetEpsilon.
func ValidateTargetEpsilon(eps float64) error {
	if err := ValidateEpsilon(eps); err != nil {
		return err
	}
	if eps > MaxTargetEpsilon {
		return fmt.Errorf("epsilon %v is above %v, the largest target dpal calibrates for (ε = %v lets an outcome's probability change %.0e-fold: no privacy)",
			eps, MaxTargetEpsilon, MaxTargetEpsilon, math.Exp(MaxTargetEpsilon))
	}
	return nil
}

// ValidateDelta accepts 0 ≤ δ < 1.
func ValidateDelta(delta float64) error {
	if !(delta >= 0 && delta < 1) {
		return fmt.Errorf("delta must satisfy 0 <= delta < 1, got %v", delta)
	}
	return nil
}

// Budget is a per-group privacy budget: every group may spend up to
// (Epsilon, Delta).
type Budget struct {
	// Epsilon is the group's ε budget (> 0).
	Epsilon float64 `json:"epsilon"`
	// Delta is the group's δ budget (0 ≤ δ < 1). RDP spends need δ > 0.
	Delta float64 `json:"delta"`
}

// Validate reports whether b is a usable budget.
func (b Budget) Validate() error {
	if err := ValidateEpsilon(b.Epsilon); err != nil {
		return fmt.Errorf("budget: %w", err)
	}
	if err := ValidateDelta(b.Delta); err != nil {
		return fmt.Errorf("budget: %w", err)
	}
	return nil
}

// ValidateTarget is Validate for a calibration's target: its ε must also
// be at most MaxTargetEpsilon.
func (b Budget) ValidateTarget() error {
	if err := ValidateTargetEpsilon(b.Epsilon); err != nil {
		return fmt.Errorf("budget: %w", err)
	}
	return b.Validate()
}

// DefaultDelta is the δ dpal picks when the user gives none, for a
// guarantee that covers n records: 1/(10 n), at most 1e-5. δ is the
// probability mass on which the guarantee may fail outright, so it must
// stay well below 1/n, the weight of one record (a mechanism that
// publishes one random record whole is (0, 1/n)-DP). Every command that
// chooses δ (train, pool run, ocp, stream's dataset mode) calls this one
// function.
func DefaultDelta(n int) float64 {
	return math.Min(1e-5, 1/(10*float64(max(1, n))))
}
