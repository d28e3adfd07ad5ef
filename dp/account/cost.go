package account

import (
	"errors"
	"fmt"
	"math"
)

// ErrBudgetExceeded is returned (wrapped) when a spend would take a group
// past its budget. Callers test for it with errors.Is and must stop
// releasing: a ledger never degrades silently.
var ErrBudgetExceeded = errors.New("privacy budget exceeded")

// Cost is the privacy cost of one release, as the ledger records it.
// Delta = 0 means a pure ε-DP release.
type Cost struct {
	// Mechanism names what produced the release, for the audit trail.
	Mechanism string `json:"mechanism"`
	// Epsilon is the release's ε (> 0).
	Epsilon float64 `json:"epsilon"`
	// Delta is the release's δ (0 ≤ δ < 1).
	Delta float64 `json:"delta,omitempty"`
}

// Validate reports whether c is a well-formed cost.
func (c Cost) Validate() error {
	if err := ValidateEpsilon(c.Epsilon); err != nil {
		return fmt.Errorf("cost of %q: %w", c.Mechanism, err)
	}
	if err := ValidateDelta(c.Delta); err != nil {
		return fmt.Errorf("cost of %q: %w", c.Mechanism, err)
	}
	return nil
}

// ValidateEpsilon accepts finite ε > 0.
func ValidateEpsilon(eps float64) error {
	if !(eps > 0) || math.IsInf(eps, 0) {
		return fmt.Errorf("epsilon must be finite and > 0, got %v", eps)
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
