package account

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
)

// ErrBudgetExceeded is returned (wrapped) when a charge would take a group
// past its budget. Callers test for it with errors.Is and must stop
// releasing: a ledger never degrades silently.
var ErrBudgetExceeded = errors.New("privacy budget exceeded")

// Mechanism is what every mechanism in dp/mech implements: the privacy loss
// of one release under its neighbouring relation. The ledger records it
// before the release leaves (see dp/ledger).
type Mechanism interface {
	Loss() Loss
}

// Loss is a privacy loss: of one release, or of several composed. It has
// up to three parts, all of which may be present at once:
//
//   - an approximate-DP part (Epsilon, Delta); Delta = 0 is pure ε-DP;
//   - a zero-concentrated-DP part Rho (Bun & Steinke 2016): RDP α·ρ at
//     every order α > 1;
//   - a Rényi-DP curve RDP over Orders (Mironov 2017);
//   - privacy-loss-distribution terms PLD (see PLD and PLDTerm): mechanisms
//     named with their parameters and counts, composed exactly by FFT when
//     the loss is converted.
//
// The parts compose sequentially: the whole is (Epsilon + ε_R, Delta + δ_R)
// -DP whenever the RDP part (the curve plus α·ρ) converts to (ε_R, δ_R)
// (basic composition also holds when the parts are interleaved, Lyu 2022,
// Thm 1.2). Composition, parallel composition, amplification and
// conversion are defined once, here, as functions of Loss. A PLD part
// absorbs the approximate part through its dominating pair when converted;
// beside a Rényi part the two split the δ.
//
// Mechanism and Params describe where the loss came from, for the audit
// trail; they play no part in the arithmetic.
type Loss struct {
	// Mechanism names what produced the release.
	Mechanism string `json:"mechanism"`
	// Params are the mechanism's public parameters (noise scale, rates…).
	Params map[string]float64 `json:"params,omitempty"`
	// Epsilon is the approximate-DP part's ε (finite, ≥ 0).
	Epsilon float64 `json:"epsilon,omitempty"`
	// Delta is the approximate-DP part's δ (0 ≤ δ < 1).
	Delta float64 `json:"delta,omitempty"`
	// Rho is the zCDP part's ρ (finite, ≥ 0).
	Rho float64 `json:"rho,omitempty"`
	// Orders are the RDP curve's orders (finite, > 1, increasing).
	Orders []float64 `json:"orders,omitempty"`
	// RDP holds the curve's value at each order (finite, ≥ 0).
	RDP []float64 `json:"rdp,omitempty"`
	// PLD are mechanisms accounted by privacy-loss distribution, each
	// with its count; equal mechanisms are merged.
	PLD []PLDTerm `json:"pld,omitempty"`
}

// Pure returns the loss of an ε-DP release.
func Pure(mechanism string, eps float64) Loss {
	return Loss{Mechanism: mechanism, Epsilon: eps}
}

// Approx returns the loss of an (ε, δ)-DP release.
func Approx(mechanism string, eps, delta float64) Loss {
	return Loss{Mechanism: mechanism, Epsilon: eps, Delta: delta}
}

// ZCDP returns the loss of a ρ-zCDP release, such as the Gaussian
// mechanism with ℓ2 sensitivity Δ and noise σ: ρ = Δ²/(2σ²) (Bun & Steinke
// 2016, Prop. 1.6).
func ZCDP(mechanism string, rho float64) Loss {
	return Loss{Mechanism: mechanism, Rho: rho}
}

// RDPCurve returns the loss of a release with the given RDP curve. Orders
// whose value is +Inf carry no bound and are dropped; the rest are sorted.
func RDPCurve(mechanism string, orders, rdp []float64) (Loss, error) {
	if err := checkCurve(orders, rdp); err != nil {
		return Loss{}, fmt.Errorf("%s: %w", mechanism, err)
	}
	l := Loss{Mechanism: mechanism}
	l.Orders, l.RDP = finiteCurve(orders, rdp)
	if len(l.Orders) == 0 {
		return Loss{}, fmt.Errorf("%s: RDP curve is infinite at every order", mechanism)
	}
	return l, nil
}

// SubsampledGaussian returns the loss of DP-SGD phases (Poisson-subsampled
// Gaussian steps, ScheduleRDP) as an RDP curve over DefaultOrders.
func SubsampledGaussian(phases []Phase) (Loss, error) {
	return scheduleLoss("subsampled-gaussian", phases, addRemoveCurve)
}

// HasRDP reports whether l has a Rényi part (a curve or ρ > 0), which
// needs a δ > 0 to become an (ε, δ) guarantee.
func (l Loss) HasRDP() bool { return len(l.Orders) > 0 || l.Rho > 0 }

// HasPLD reports whether l has a privacy-loss-distribution part.
func (l Loss) HasPLD() bool { return len(l.PLD) > 0 }

// NeedsConversion reports whether l's ε depends on the δ it is read at
// (it has a Rényi or a PLD part): read it with EpsilonAt.
func (l Loss) NeedsConversion() bool { return l.HasRDP() || l.HasPLD() }

// IsZero reports whether l is no loss at all.
func (l Loss) IsZero() bool {
	return l.Epsilon == 0 && l.Delta == 0 && !l.NeedsConversion()
}

// Kind names l's form: "pure", "approx", "zcdp", "rdp", "pld", "mixed" or
// "zero".
func (l Loss) Kind() string {
	parts := 0
	kind := "zero"
	if l.Epsilon > 0 || l.Delta > 0 {
		parts++
		kind = "pure"
		if l.Delta > 0 {
			kind = "approx"
		}
	}
	if l.Rho > 0 {
		parts++
		kind = "zcdp"
	}
	if len(l.Orders) > 0 {
		parts++
		kind = "rdp"
	}
	if len(l.PLD) > 0 {
		parts++
		kind = "pld"
	}
	if parts > 1 {
		return "mixed"
	}
	return kind
}

// Validate reports whether l is a well-formed loss.
func (l Loss) Validate() error {
	if err := l.validate(); err != nil {
		if l.Mechanism != "" {
			return fmt.Errorf("loss of %q: %w", l.Mechanism, err)
		}
		return fmt.Errorf("loss: %w", err)
	}
	return nil
}

func (l Loss) validate() error {
	switch {
	case !(l.Epsilon >= 0) || math.IsInf(l.Epsilon, 1):
		return fmt.Errorf("epsilon must be finite and >= 0, got %v", l.Epsilon)
	case !(l.Delta >= 0 && l.Delta < 1):
		return fmt.Errorf("delta must satisfy 0 <= delta < 1, got %v", l.Delta)
	case !(l.Rho >= 0) || math.IsInf(l.Rho, 1):
		return fmt.Errorf("rho must be finite and >= 0, got %v", l.Rho)
	}
	for k, v := range l.Params {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("parameter %q is not finite: %v", k, v)
		}
	}
	for _, t := range l.PLD {
		if err := t.Validate(); err != nil {
			return err
		}
	}
	if len(l.Orders) == 0 && len(l.RDP) == 0 {
		return nil
	}
	if err := checkCurve(l.Orders, l.RDP); err != nil {
		return err
	}
	for i, v := range l.RDP {
		if math.IsInf(v, 1) {
			return fmt.Errorf("RDP value at order %v is infinite", l.Orders[i])
		}
		if i > 0 && !(l.Orders[i] > l.Orders[i-1]) {
			return fmt.Errorf("RDP orders must increase, got %v after %v", l.Orders[i], l.Orders[i-1])
		}
	}
	return nil
}

// Compose returns the sequential composition of losses, for adaptively
// chosen mechanisms: ε, δ and ρ add (Dwork & Roth 2014, Thm 3.16; Bun &
// Steinke 2016, Lemma 2.3) and RDP curves add order by order (Mironov 2017,
// Prop. 1). Only the orders every curve has survive; a composition whose
// curves share no order is an error.
//
// PLD terms are concatenated (equal mechanisms' counts added): the
// composition is exact when converted (with parallel alternatives, their
// cross product: see pldparallel.go).
func Compose(losses ...Loss) (Loss, error) {
	return combine("composition", losses, func(a, b float64) float64 { return a + b }, composeTerms)
}

// Parallel returns the loss of mechanisms each applied to one part of a
// partition of the data into disjoint parts: a record is in one part only,
// so the part-wise maximum of every component bounds everything (McSherry
// 2009, Thm 4; it holds for RDP and zCDP alike, as each record's divergence
// is that of its own part). Different PLD parts are kept as alternatives,
// the ε being the largest of theirs (see pldparallel.go).
func Parallel(losses ...Loss) (Loss, error) {
	return combine("parallel composition", losses, math.Max, parallelTerms)
}

// Times returns the sequential composition of n copies of l.
func (l Loss) Times(n int) (Loss, error) {
	if n < 1 {
		return Loss{}, fmt.Errorf("%s: release count must be >= 1, got %d", l.Mechanism, n)
	}
	if err := l.Validate(); err != nil {
		return Loss{}, err
	}
	out := l.clone()
	if n == 1 {
		return out, nil
	}
	f := float64(n)
	out.Mechanism = fmt.Sprintf("%d × %s", n, l.Mechanism)
	out.Epsilon, out.Delta, out.Rho = f*l.Epsilon, f*l.Delta, f*l.Rho
	for i := range out.RDP {
		out.RDP[i] *= f
	}
	out.PLD = timesTerms(l.PLD, n)
	if out.Delta >= 1 {
		return Loss{}, fmt.Errorf("%s: total delta %v >= 1 gives no guarantee", out.Mechanism, out.Delta)
	}
	return out, nil
}

// combine folds losses with op on every component (ε, δ, ρ, and the RDP
// curves on the orders they share) and with terms on the PLD parts.
func combine(name string, losses []Loss, op func(a, b float64) float64, terms func(a, b []PLDTerm) ([]PLDTerm, error)) (Loss, error) {
	if len(losses) == 0 {
		return Loss{}, fmt.Errorf("%s of no losses", name)
	}
	for _, l := range losses {
		if err := l.Validate(); err != nil {
			return Loss{}, fmt.Errorf("%s: %w", name, err)
		}
	}
	out := losses[0].clone()
	if len(losses) > 1 {
		// Not fmt: the ledger composes on every charge.
		out.Mechanism, out.Params = name+" of "+strconv.Itoa(len(losses)), nil
	}
	for _, l := range losses[1:] {
		if err := out.absorb(l, op); err != nil {
			return Loss{}, fmt.Errorf("%s: %w", name, err)
		}
		var err error
		if out.PLD, err = terms(out.PLD, l.PLD); err != nil {
			return Loss{}, fmt.Errorf("%s: %w", name, err)
		}
	}
	if out.Delta >= 1 {
		return Loss{}, fmt.Errorf("%s: total delta %v >= 1 gives no guarantee", name, out.Delta)
	}
	return out, nil
}

// absorb folds l into acc (both valid) with op, in place.
func (acc *Loss) absorb(l Loss, op func(a, b float64) float64) error {
	acc.Epsilon = op(acc.Epsilon, l.Epsilon)
	acc.Delta = op(acc.Delta, l.Delta)
	acc.Rho = op(acc.Rho, l.Rho)
	switch {
	case len(l.Orders) == 0:
		return nil
	case len(acc.Orders) == 0:
		acc.Orders, acc.RDP = slices.Clone(l.Orders), slices.Clone(l.RDP)
		return nil
	}
	orders, rdp := acc.Orders[:0:0], acc.RDP[:0:0]
	j := 0
	for i, a := range acc.Orders {
		for j < len(l.Orders) && l.Orders[j] < a {
			j++
		}
		if j < len(l.Orders) && l.Orders[j] == a {
			orders, rdp = append(orders, a), append(rdp, op(acc.RDP[i], l.RDP[j]))
		}
	}
	if len(orders) == 0 {
		return errors.New("the RDP curves share no order")
	}
	acc.Orders, acc.RDP = orders, rdp
	return nil
}

// AmplifyPoisson returns the loss of running an (ε, δ)-DP mechanism on a
// Poisson sample that includes each record independently with probability
// q: ε' = log(1 + q(e^ε − 1)), δ' = qδ (Li, Qardaji & Su 2012, Thm 1;
// Balle, Barthe & Gaboardi 2018, Thm 8). A loss with a Rényi or PLD part
// is refused: AmplifyPoissonRDP amplifies an RDP curve (Zhu & Wang's
// general bound), and the subsampled Gaussian has its own exact curve
// (SubsampledGaussian).
func AmplifyPoisson(l Loss, q float64) (Loss, error) {
	if err := l.Validate(); err != nil {
		return Loss{}, err
	}
	if !(q > 0 && q <= 1) {
		return Loss{}, fmt.Errorf("sampling rate must satisfy 0 < q <= 1, got %v", q)
	}
	if l.NeedsConversion() {
		return Loss{}, fmt.Errorf("%s: no generic Poisson amplification of a Rényi or PLD loss; use SubsampledGaussian or a subsampled PLD term", l.Mechanism)
	}
	return Loss{
		Mechanism: fmt.Sprintf("%s on a Poisson sample (q=%v)", l.Mechanism, q),
		Params:    maps.Clone(l.Params),
		Epsilon:   math.Log1p(q * math.Expm1(l.Epsilon)),
		Delta:     q * l.Delta,
	}, nil
}

// EpsilonAt returns the ε of l's (ε, delta) guarantee, delta being the
// total δ: the approximate part's ε plus the Rényi part (curve + α·ρ)
// converted with conv at the δ the approximate part leaves. Without a Rényi
// part it is l.Epsilon, valid for any delta ≥ l.Delta. It errors when
// delta is below l.Delta, or not above it for a Rényi part (no finite ε).
// With a PLD part it is the PLD accountant's certified (upper) ε at the
// default grid (see pldEpsilon).
func (l Loss) EpsilonAt(delta float64, conv Conversion) (float64, error) {
	if err := l.Validate(); err != nil {
		return 0, err
	}
	if err := ValidateDelta(delta); err != nil {
		return 0, err
	}
	if l.HasPLD() {
		return l.pldEpsilon(delta, conv)
	}
	if !l.HasRDP() {
		if delta < l.Delta {
			return 0, fmt.Errorf("%s: delta %v is below the loss's own delta %v", l.Mechanism, delta, l.Delta)
		}
		return l.Epsilon, nil
	}
	rest := delta - l.Delta
	if !(rest > 0) {
		return 0, fmt.Errorf("%s: a Rényi loss needs delta above %v, got %v", l.Mechanism, l.Delta, delta)
	}
	return l.Epsilon + l.renyiEpsilon(rest, conv), nil
}

// renyiEpsilon converts the Rényi part (curve + α·ρ) at δ = delta > 0.
// A curve is read at its own orders; ρ alone is optimised over all α > 1.
func (l Loss) renyiEpsilon(delta float64, conv Conversion) float64 {
	logDelta := math.Log(delta)
	if len(l.Orders) == 0 {
		return zcdpEpsilon(l.Rho, logDelta, conv)
	}
	best := math.Inf(1)
	for i, a := range l.Orders {
		best = math.Min(best, conv.epsilonAt(a, l.RDP[i]+a*l.Rho, logDelta))
	}
	return best
}

// zcdpEpsilon is the smallest ε over α > 1 of conv applied to α·ρ. The
// converted ε is quasi-convex in log(α − 1), so a coarse log grid locates
// the minimum and golden-section search refines it; any α gives a valid
// bound, so the search only affects tightness.
func zcdpEpsilon(rho, logDelta float64, conv Conversion) float64 {
	f := func(t float64) float64 { a := 1 + math.Exp(t); return conv.epsilonAt(a, a*rho, logDelta) }
	const lo, hi, steps = -20.0, 40.0, 240
	bestT, bestE := lo, f(lo)
	for k := 1; k <= steps; k++ {
		t := lo + (hi-lo)*float64(k)/steps
		if e := f(t); e < bestE {
			bestT, bestE = t, e
		}
	}
	a, b := bestT-(hi-lo)/steps, bestT+(hi-lo)/steps
	const invPhi = 0.6180339887498949
	for range 80 {
		c, d := b-invPhi*(b-a), a+invPhi*(b-a)
		if f(c) < f(d) {
			b = d
		} else {
			a = c
		}
	}
	return math.Min(bestE, f((a+b)/2))
}

// clone returns a deep copy of l.
func (l Loss) clone() Loss {
	l.Params = maps.Clone(l.Params)
	l.Orders, l.RDP = slices.Clone(l.Orders), slices.Clone(l.RDP)
	l.PLD = slices.Clone(l.PLD)
	return l
}

// finiteCurve returns the finite points of a curve, sorted by order, with
// duplicate orders merged to their larger value.
func finiteCurve(orders, rdp []float64) ([]float64, []float64) {
	idx := make([]int, 0, len(orders))
	for i := range orders {
		if !math.IsInf(rdp[i], 1) {
			idx = append(idx, i)
		}
	}
	slices.SortStableFunc(idx, func(i, j int) int {
		switch {
		case orders[i] < orders[j]:
			return -1
		case orders[i] > orders[j]:
			return 1
		}
		return 0
	})
	var os, rs []float64
	for _, i := range idx {
		if n := len(os); n > 0 && os[n-1] == orders[i] {
			rs[n-1] = math.Max(rs[n-1], rdp[i])
			continue
		}
		os, rs = append(os, orders[i]), append(rs, rdp[i])
	}
	return os, rs
}
