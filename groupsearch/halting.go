package groupsearch

import "math"

// Reasons a search stops, as reported in Result.HaltedBy.
const (
	// HaltBudget: the next answer would exceed the budget b, or the
	// oracle's ledger refused it.
	HaltBudget = "budget"
	// HaltPosterior: max_i f(i) exceeded α.
	HaltPosterior = "posterior"
	// HaltDelta: the log-odds of eq. 25 exceeded log(1/δ).
	HaltDelta = "delta"
	// HaltBenOrHassidim: max_i f(i) exceeded ε_par = (24 ln n)^(−1/2).
	HaltBenOrHassidim = "ben-or-hassidim"
	// HaltMaxQueries: the query cap was reached.
	HaltMaxQueries = "max-queries"
	// HaltError: the oracle or the likelihood failed with another error.
	HaltError = "error"
)

// DefaultMaxQueries caps a search that has only posterior-based halting
// rules, which noise can keep from ever firing.
const DefaultMaxQueries = 100000

// Halting combines the stopping rules of §4.2; the search stops at the
// first that fires (checked before each query, on f_{t−1}).
type Halting struct {
	// Budget b > 0 stops before (T+1)ε > b; 0 disables the rule.
	Budget float64 `json:"budget,omitempty"`
	// Posterior α in (0, 1) stops once max_i f(i) > α; 0 disables it.
	Posterior float64 `json:"posterior,omitempty"`
	// Delta δ in (0, 1) stops once max_i log(f(i)/(1−f(i))) > log(1/δ)
	// (Burnashev–Zigangirov, eq. 25); 0 disables it.
	Delta float64 `json:"delta,omitempty"`
	// BenOrHassidim stops once max_i f(i) > ε_par = (24 ln n)^(−1/2).
	BenOrHassidim bool `json:"ben_or_hassidim,omitempty"`
	// MaxQueries caps T; 0 means DefaultMaxQueries when no budget is set
	// and no cap otherwise.
	MaxQueries int `json:"max_queries,omitempty"`
}

// Validate checks each rule's range.
func (h Halting) Validate() error {
	switch {
	case !(h.Budget >= 0) || math.IsInf(h.Budget, 0):
		return badSetting("budget", "budget must be finite and >= 0, got %v", h.Budget)
	case !(h.Posterior >= 0 && h.Posterior < 1):
		return badSetting("posterior", "halting posterior α must be in (0, 1), got %v", h.Posterior)
	case !(h.Delta >= 0 && h.Delta < 1):
		return badSetting("delta", "halting δ must be in (0, 1), got %v", h.Delta)
	case h.MaxQueries < 0:
		return badSetting("max_queries", "max queries must be >= 0, got %d", h.MaxQueries)
	}
	return nil
}

// EpsPar is Ben-Or and Hassidim's threshold ε_par = (24 ln n)^(−1/2) for a
// population of size n+1 (n is taken as at least 2).
func EpsPar(size int) float64 {
	n := float64(max(size-1, 2))
	return 1 / math.Sqrt(24*math.Log(n))
}

// Check returns the first rule that fires for s when the next answer costs
// eps, or "" to continue.
func (h Halting) Check(s *Searcher, eps float64) string {
	_, fmax := s.MaxPosterior()
	switch {
	case h.Posterior > 0 && fmax > h.Posterior:
		return HaltPosterior
	case h.Delta > 0 && s.logOddsMax() > math.Log(1/h.Delta):
		return HaltDelta
	case h.BenOrHassidim && fmax > EpsPar(s.Len()):
		return HaltBenOrHassidim
	case h.Budget > 0 && float64(s.Queries()+1)*eps > h.Budget*(1+1e-12):
		return HaltBudget
	}
	limit := h.MaxQueries
	if limit == 0 && h.Budget == 0 {
		limit = DefaultMaxQueries
	}
	if limit > 0 && s.Queries() >= limit {
		return HaltMaxQueries
	}
	return ""
}

// Prop3Bound is the right side of eq. 26, (log(n+1) + log(1/δ) + ε)/(1 − h_b(p)),
// the bound on E[T] for the binarised search stopped by eq. 25. The paper
// does not name the base of its logarithms; bits uses base 2 throughout
// (1 − h_b(p) is then the capacity of the binary symmetric channel, as in
// Burnashev–Zigangirov), nats uses natural logarithms. It is +Inf when
// p ≥ 1/2 (bits) or h_b(p) ≥ 1 (nats).
func Prop3Bound(size int, delta, eps, p float64) (bits, nats float64) {
	hNats := -p*math.Log(p) - (1-p)*math.Log1p(-p)
	hBits := hNats / math.Ln2
	bits = (math.Log2(float64(size)) + math.Log2(1/delta) + eps) / (1 - hBits)
	nats = (math.Log(float64(size)) + math.Log(1/delta) + eps) / (1 - hNats)
	if !(1-hBits > 0) {
		bits = math.Inf(1)
	}
	if !(1-hNats > 0) {
		nats = math.Inf(1)
	}
	return bits, nats
}
