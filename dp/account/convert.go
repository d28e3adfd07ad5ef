package account

import (
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
)

// Conversion selects how a Rényi-DP curve becomes an (ε, δ) guarantee.
type Conversion int

const (
	// Balle2020 is Balle et al. 2020, "Hypothesis testing interpretations
	// and Rényi differential privacy", Thm 21:
	// ε = rdp(α) + log1p(−1/α) − (log δ + log α)/(α − 1).
	// It is the conversion of Opacus ≥ 1.0 and the default.
	Balle2020 Conversion = iota
	// Classic is Mironov 2017, "Rényi differential privacy", Prop. 3:
	// ε = rdp(α) + log(1/δ)/(α − 1). It reproduces the published tables
	// of Abadi et al. 2016 and Opacus < 1.0.
	Classic
)

// String returns the name ParseConversion accepts.
func (c Conversion) String() string {
	switch c {
	case Balle2020:
		return "balle2020"
	case Classic:
		return "classic"
	}
	return fmt.Sprintf("Conversion(%d)", int(c))
}

// ParseConversion accepts "balle2020" or "classic".
func ParseConversion(s string) (Conversion, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "balle2020":
		return Balle2020, nil
	case "classic":
		return Classic, nil
	}
	return 0, fmt.Errorf("unknown RDP conversion %q (want balle2020 or classic)", s)
}

// MarshalText encodes c by name.
func (c Conversion) MarshalText() ([]byte, error) {
	if c != Balle2020 && c != Classic {
		return nil, fmt.Errorf("invalid conversion %d", int(c))
	}
	return []byte(c.String()), nil
}

// UnmarshalText decodes a name written by MarshalText.
func (c *Conversion) UnmarshalText(b []byte) error {
	v, err := ParseConversion(string(b))
	if err != nil {
		return err
	}
	*c = v
	return nil
}

// epsilonAt is the one place each conversion's formula lives: the ε that
// an RDP bound rdp at order alpha gives for δ = e^logDelta. It is never
// negative: an (ε, δ) guarantee with ε < 0 implies the one with ε = 0.
func (c Conversion) epsilonAt(alpha, rdp, logDelta float64) float64 {
	var eps float64
	switch c {
	case Classic:
		eps = rdp - logDelta/(alpha-1)
	default:
		eps = rdp + math.Log1p(-1/alpha) - (logDelta+math.Log(alpha))/(alpha-1)
	}
	return math.Max(eps, 0)
}

// RDPBudget inverts the conversion at one order: the largest RDP value at
// order alpha whose (ε, δ) conversion is at most eps, for eps > 0 and
// 0 < delta < 1. Planners that solve for a parameter order by order use it
// so that the conversion's formula stays here.
func (c Conversion) RDPBudget(alpha, eps, delta float64) float64 {
	logDelta := math.Log(delta)
	switch c {
	case Classic:
		return eps + logDelta/(alpha-1)
	default:
		return eps - math.Log1p(-1/alpha) + (logDelta+math.Log(alpha))/(alpha-1)
	}
}

// DefaultOrders returns Opacus's default RDP orders: 1.1, 1.2, …, 10.9,
// then 12, 13, …, 63 (151 orders). The slice is fresh on every call.
func DefaultOrders() []float64 {
	out := make([]float64, 0, 151)
	for x := 1; x < 100; x++ {
		out = append(out, 1+float64(x)/10)
	}
	for a := 12; a < 64; a++ {
		out = append(out, float64(a))
	}
	return out
}

// ValidateOrders accepts a non-empty list of finite orders > 1.
func ValidateOrders(orders []float64) error {
	if len(orders) == 0 {
		return fmt.Errorf("no RDP orders")
	}
	for _, a := range orders {
		if !(a > 1) || math.IsInf(a, 0) {
			return fmt.Errorf("RDP order must be finite and > 1, got %v", a)
		}
	}
	return nil
}

// ExtendOrders returns the default orders together with extra, sorted and
// without duplicates; each extra order must be finite and > 1.
func ExtendOrders(extra ...float64) ([]float64, error) {
	if len(extra) > 0 {
		if err := ValidateOrders(extra); err != nil {
			return nil, err
		}
	}
	out := append(DefaultOrders(), extra...)
	slices.Sort(out)
	return slices.Compact(out), nil
}

// EpsilonResult is an (ε, δ) guarantee read off an RDP curve.
type EpsilonResult struct {
	// Epsilon is the smallest ε over the orders.
	Epsilon float64 `json:"epsilon"`
	// Order is the RDP order α that attains it (0 when nothing is spent).
	Order float64 `json:"order"`
	// Delta is the δ the guarantee holds for.
	Delta float64 `json:"delta"`
	// EdgeWarning is set when the optimal order is the smallest or largest
	// of the list, so a wider list might give a smaller ε.
	EdgeWarning string `json:"edge_warning,omitempty"`
}

// RDPToEpsilon converts the RDP curve rdp (one value per order) into the
// smallest (ε, δ) guarantee over the orders with conversion conv. When the
// optimum sits at either end of the order list it fills EdgeWarning and logs
// it with slog.Warn.
func RDPToEpsilon(orders, rdp []float64, delta float64, conv Conversion) (EpsilonResult, error) {
	if err := checkCurve(orders, rdp); err != nil {
		return EpsilonResult{}, err
	}
	if err := ValidateDelta(delta); err != nil || delta == 0 {
		return EpsilonResult{}, fmt.Errorf("RDP conversion needs 0 < delta < 1, got %v", delta)
	}
	res := bestOrder(orders, rdp, delta, conv)
	if math.IsInf(res.Epsilon, 1) {
		return res, fmt.Errorf("RDP curve is infinite at every order")
	}
	warnEdge(&res, orders)
	return res, nil
}

// bestOrder minimises the converted ε over the orders (no validation).
func bestOrder(orders, rdp []float64, delta float64, conv Conversion) EpsilonResult {
	logDelta := math.Log(delta)
	res := EpsilonResult{Epsilon: math.Inf(1), Order: math.NaN(), Delta: delta}
	for i, a := range orders {
		if e := conv.epsilonAt(a, rdp[i], logDelta); e < res.Epsilon {
			res.Epsilon, res.Order = e, a
		}
	}
	return res
}

// warnEdge fills res.EdgeWarning when res.Order is an extreme of orders.
func warnEdge(res *EpsilonResult, orders []float64) {
	if len(orders) < 2 {
		return
	}
	lo, hi := slices.Min(orders), slices.Max(orders)
	switch res.Order {
	case lo:
		res.EdgeWarning = fmt.Sprintf("optimal RDP order %v is the smallest in the list; add smaller orders (> 1)", lo)
	case hi:
		res.EdgeWarning = fmt.Sprintf("optimal RDP order %v is the largest in the list; add larger orders", hi)
	default:
		return
	}
	slog.Warn("RDP accountant", "warning", res.EdgeWarning, "epsilon", res.Epsilon, "delta", res.Delta)
}

// checkCurve validates an RDP curve: matching lengths, valid orders and
// values in [0, +Inf].
func checkCurve(orders, rdp []float64) error {
	if len(orders) != len(rdp) {
		return fmt.Errorf("RDP curve has %d orders but %d values", len(orders), len(rdp))
	}
	if err := ValidateOrders(orders); err != nil {
		return err
	}
	for i, r := range rdp {
		if !(r >= 0) {
			return fmt.Errorf("RDP value at order %v must be >= 0, got %v", orders[i], r)
		}
	}
	return nil
}
