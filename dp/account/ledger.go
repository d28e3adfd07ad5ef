package account

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
)

// budgetSlack is the relative tolerance of budget checks. It only absorbs
// the rounding of summing many floating-point spends (ten spends of 0.1
// must fit a budget of 1); it is far below any meaningful ε.
const budgetSlack = 1e-12

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

// Ledger records the privacy spent by groups of records. A group holds
// records that have been treated identically (for the stream learner,
// "selected and batched" versus "observed only"), so a group's ε is the ε of
// each of its records. A group's cost is the sequential composition of its
// (ε, δ) spends (Dwork & Roth 2014, Thm 3.16) and of its RDP curve (the
// sum of its RDP spends), converted with the ledger's conversion at the δ
// left over by the (ε, δ) spends. The two parts may be interleaved in any
// order: basic composition also holds concurrently (Lyu 2022,
// "Composition theorems for interactive differential privacy", Thm 1.2).
//
// A spend that would take its group past the budget fails with a wrapped
// ErrBudgetExceeded and records nothing. A Ledger is safe for concurrent
// use and round-trips through JSON exactly.
type Ledger struct {
	mu     sync.Mutex
	budget Budget
	conv   Conversion
	groups map[string]*groupSpend
}

// groupSpend is one group's accumulated cost.
type groupSpend struct {
	Epsilon float64   `json:"epsilon"`
	Delta   float64   `json:"delta"`
	Spends  int       `json:"spends"`
	Orders  []float64 `json:"orders,omitempty"`
	RDP     []float64 `json:"rdp,omitempty"`
}

// LedgerOption configures a Ledger at construction.
type LedgerOption func(*Ledger)

// WithConversion makes the ledger convert RDP curves with c instead of the
// default Balle2020.
func WithConversion(c Conversion) LedgerOption {
	return func(l *Ledger) { l.conv = c }
}

// NewLedger returns an empty ledger in which every group has budget b.
func NewLedger(b Budget, opts ...LedgerOption) (*Ledger, error) {
	if err := b.Validate(); err != nil {
		return nil, err
	}
	l := &Ledger{budget: b, conv: Balle2020, groups: map[string]*groupSpend{}}
	for _, o := range opts {
		o(l)
	}
	if _, err := l.conv.MarshalText(); err != nil {
		return nil, err
	}
	return l, nil
}

// Budget returns the per-group budget.
func (l *Ledger) Budget() Budget {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.budget
}

// Spend records one release of cost c against group. It fails, recording
// nothing, when c is invalid or when the group would exceed the budget
// (errors.Is(err, ErrBudgetExceeded)).
func (l *Ledger) Spend(group string, c Cost) error {
	return l.SpendN(group, c, 1)
}

// SpendN records n identical releases of cost c against group at once, as
// n calls of Spend would (all or nothing).
func (l *Ledger) SpendN(group string, c Cost, n int) error {
	if err := c.Validate(); err != nil {
		return fmt.Errorf("group %q: %w", group, err)
	}
	if n < 1 {
		return fmt.Errorf("group %q: spend count must be >= 1, got %d", group, n)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	next := l.group(group).clone()
	next.Epsilon += float64(n) * c.Epsilon
	next.Delta += float64(n) * c.Delta
	next.Spends += n
	return l.commit(group, next, fmt.Sprintf("%d × %s (ε=%v, δ=%v)", n, c.Mechanism, c.Epsilon, c.Delta))
}

// SpendRDP adds an RDP curve (values rdp at orders, e.g. one DP-SGD phase)
// to group's curve. Orders the group already tracks but the new curve lacks
// are dropped, since nothing bounds the sum there; orders with an infinite
// value are ignored. Fails like Spend; also when the budget has δ = 0, for
// which an RDP curve gives no finite ε.
func (l *Ledger) SpendRDP(group string, orders, rdp []float64) error {
	if err := checkCurve(orders, rdp); err != nil {
		return fmt.Errorf("group %q: %w", group, err)
	}
	if l.budget.Delta == 0 {
		return fmt.Errorf("group %q: RDP spends need a budget with delta > 0", group)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	next := l.group(group).clone()
	next.addCurve(orders, rdp)
	if len(next.Orders) == 0 {
		return fmt.Errorf("group %q: RDP curve shares no finite order with the group's curve", group)
	}
	next.Spends++
	return l.commit(group, next, "RDP curve")
}

// SpendPhases adds the RDP curve of DP-SGD phases (Poisson-subsampled
// Gaussian steps, see ScheduleRDP) over DefaultOrders to group, like
// SpendRDP.
func (l *Ledger) SpendPhases(group string, phases []Phase) error {
	orders := DefaultOrders()
	curve, err := ScheduleRDP(phases, orders)
	if err != nil {
		return fmt.Errorf("group %q: %w", group, err)
	}
	return l.SpendRDP(group, orders, curve)
}

// Spent returns group's ε and δ so far (zero for an unknown group). For a
// group with RDP spends δ is the budget's δ, at which the curve is
// converted; ε is +Inf if the (ε, δ) spends left no δ for the conversion.
func (l *Ledger) Spent(group string) (eps, delta float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	g, ok := l.groups[group]
	if !ok {
		return 0, 0
	}
	return l.total(g)
}

// Groups returns the names of the groups that have spent, sorted.
func (l *Ledger) Groups() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, 0, len(l.groups))
	for k := range l.groups {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// MaxEpsilon returns the group with the largest ε and that ε (ties go to
// the first name in sort order; "" and 0 for an empty ledger). When groups
// are records or classes of records it is "every record's ε".
func (l *Ledger) MaxEpsilon() (group string, eps float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for name, g := range l.groups {
		e, _ := l.total(g)
		if group == "" || e > eps || e == eps && name < group {
			group, eps = name, e
		}
	}
	return group, eps
}

// ledgerJSON is the serialised form of a Ledger.
type ledgerJSON struct {
	Budget     Budget                 `json:"budget"`
	Conversion Conversion             `json:"conversion"`
	Groups     map[string]*groupSpend `json:"groups"`
}

// MarshalJSON encodes the budget, the conversion and every group's spends.
func (l *Ledger) MarshalJSON() ([]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return json.Marshal(ledgerJSON{Budget: l.budget, Conversion: l.conv, Groups: l.groups})
}

// UnmarshalJSON replaces l with a ledger encoded by MarshalJSON, after
// validating it.
func (l *Ledger) UnmarshalJSON(b []byte) error {
	var v ledgerJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	if err := v.Budget.Validate(); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	if v.Groups == nil {
		v.Groups = map[string]*groupSpend{}
	}
	for name, g := range v.Groups {
		if err := g.validate(); err != nil {
			return fmt.Errorf("ledger group %q: %w", name, err)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.budget, l.conv, l.groups = v.Budget, v.Conversion, v.Groups
	return nil
}

// group returns group's spends, or an empty record (not yet stored).
func (l *Ledger) group(name string) *groupSpend {
	if g, ok := l.groups[name]; ok {
		return g
	}
	return &groupSpend{}
}

// commit stores next as group's spends if it fits the budget.
func (l *Ledger) commit(group string, next *groupSpend, what string) error {
	eps, delta := l.total(next)
	if eps > l.budget.Epsilon*(1+budgetSlack) || next.Delta > l.budget.Delta*(1+budgetSlack) {
		return fmt.Errorf("group %q: %s would bring it to ε=%v, δ=%v over the budget ε=%v, δ=%v: %w",
			group, what, eps, delta, l.budget.Epsilon, l.budget.Delta, ErrBudgetExceeded)
	}
	l.groups[group] = next
	return nil
}

// total is a group's (ε, δ): its (ε, δ) spends plus its RDP curve converted
// at the δ they leave over.
func (l *Ledger) total(g *groupSpend) (eps, delta float64) {
	if len(g.Orders) == 0 {
		return g.Epsilon, g.Delta
	}
	rest := l.budget.Delta - g.Delta
	if !(rest > 0) {
		return math.Inf(1), l.budget.Delta
	}
	r := bestOrder(g.Orders, g.RDP, rest, l.conv)
	return g.Epsilon + r.Epsilon, l.budget.Delta
}

// clone returns a deep copy of g.
func (g *groupSpend) clone() *groupSpend {
	c := *g
	c.Orders = slices.Clone(g.Orders)
	c.RDP = slices.Clone(g.RDP)
	return &c
}

// addCurve adds the curve (orders, rdp) to g's, keeping only the orders
// both have with a finite value (all of the new curve's if g has none).
func (g *groupSpend) addCurve(orders, rdp []float64) {
	add := make(map[float64]float64, len(orders))
	for i, a := range orders {
		if !math.IsInf(rdp[i], 1) {
			add[a] = rdp[i]
		}
	}
	if len(g.Orders) == 0 {
		for a := range add {
			g.Orders = append(g.Orders, a)
		}
		slices.Sort(g.Orders)
		for _, a := range g.Orders {
			g.RDP = append(g.RDP, add[a])
		}
		return
	}
	var orders2, rdp2 []float64
	for i, a := range g.Orders {
		if v, ok := add[a]; ok {
			orders2 = append(orders2, a)
			rdp2 = append(rdp2, g.RDP[i]+v)
		}
	}
	g.Orders, g.RDP = orders2, rdp2
}

// validate checks a decoded group record.
func (g *groupSpend) validate() error {
	if g == nil {
		return fmt.Errorf("missing record")
	}
	if !(g.Epsilon >= 0) || math.IsInf(g.Epsilon, 1) || !(g.Delta >= 0 && g.Delta < 1) || g.Spends < 0 {
		return fmt.Errorf("invalid spends ε=%v δ=%v count=%d", g.Epsilon, g.Delta, g.Spends)
	}
	if len(g.Orders) == 0 && len(g.RDP) == 0 {
		return nil
	}
	return checkCurve(g.Orders, g.RDP)
}
