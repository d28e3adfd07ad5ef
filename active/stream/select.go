package stream

import (
	"fmt"
	"math"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/rng"
)

// Distance returns d(x, w) = |⟨w, x⟩| / ‖w‖ of eq. 5 given the score
// ⟨w, x⟩ and ‖w‖. For w = 0 there is no hyperplane yet; d is defined as 0,
// so every point is maximally informative (c = 1) and lies in every slab.
func Distance(score, wNorm float64) float64 {
	if wNorm == 0 {
		return 0
	}
	return math.Abs(score) / wNorm
}

// Informativeness returns c = exp(−d) of eq. 5–6 (Tong and Koller's
// closeness to the hyperplane), in [0, 1].
func Informativeness(d float64) float64 { return math.Exp(-d) }

// selector is the resolved selection rule: one of the two mechanisms of
// selectors.go (SlabRR, Lemma 1; ExpSelector, Lemma 2), built from
// Config once, so that the per-event path is a comparison and one exact
// Bernoulli draw. Both mechanisms document their neighbouring relation
// and guarantee; eps is the true ε_s charged per record.
type selector struct {
	kind SelectorKind
	rr   *SlabRR
	exp  *ExpSelector
	eps  float64
}

// newSelector resolves cfg's selection rule and its true ε_s.
func newSelector(cfg Config) (selector, error) {
	s := selector{kind: cfg.Selector}
	if cfg.NonPrivate {
		s.eps = math.Inf(1)
		return s, nil
	}
	var err error
	switch cfg.Selector {
	case Bernoulli:
		s.rr, err = NewSlabRR(cfg.EpsSelect)
		if err == nil {
			s.eps = s.rr.Epsilon()
		}
	case Exponential:
		s.exp, err = NewExpSelector(cfg.EpsSelect, cfg.B, cfg.M, cfg.Calibration)
		if err == nil {
			s.eps = s.exp.Epsilon()
		}
	}
	if err != nil {
		return s, fmt.Errorf("stream: %w", err)
	}
	return s, nil
}

// mechanism is the selection rule as the ledger sees it.
func (s *selector) mechanism() account.Mechanism {
	if s.exp != nil {
		return s.exp
	}
	return s.rr
}

// prob returns the selection probability of a point at distance d from
// the hyperplane, given the current slab half-width slab = ln(1/τ).
// The Bernoulli rule selects inside the slab, c ≥ τ ⟺ d ≤ ln(1/τ).
func (s *selector) prob(d, slab float64) float64 {
	if s.exp != nil {
		return s.exp.Prob(d)
	}
	return s.rr.Prob(d <= slab)
}

// draw makes one private selection decision.
func (s *selector) draw(r *rng.Rand, d, slab float64) bool {
	if s.exp != nil {
		return s.exp.Select(r, d)
	}
	return s.rr.Select(r, d <= slab)
}
