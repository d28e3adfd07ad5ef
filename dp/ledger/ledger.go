// Package ledger owns dpal's privacy ledger: an append-only log of every
// charge made for a release, kept in a Store (in memory, durable on disk
// with fsync before a release leaves, or in a database that several
// processes charge at once: a SyncStore such as dp/ledger/pgstore's), from
// which each group's total loss and remaining budget are derived.
//
// A group is a set of records that every charge treats alike: one record
// (an id), a named set of records, or the part of a partition a mechanism
// touched. A group's loss is the sequential composition (account.Compose)
// of the losses of the entries naming it, so its ε is the ε of each of its
// records. Charges to different groups do not add up: that is parallel
// composition over disjoint groups (McSherry 2009, Thm 4), and it is the
// caller's to make groups disjoint.
//
// Charge-then-release: Release is the one way a mechanism's output leaves.
// It checks the budget and appends the entry in one critical section,
// commits it to the store (durably, for a durable store), and only then
// runs the draw that produces the released value. A charge that would take
// any of its groups past the budget fails with an error wrapping
// account.ErrBudgetExceeded before any noise is drawn, and records nothing.
//
// It imports dp/account and nothing else of dpal's.
package ledger

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/dpal-dev/dpal/dp/account"
)

// budgetSlack is the relative tolerance of budget checks. It only absorbs
// the rounding of summing many floating-point charges (ten charges of 0.1
// must fit a budget of 1); it is far below any meaningful ε.
const budgetSlack = 1e-12

// Version is the version of the ledger's stored form (Meta and Entry).
const Version = 2

// Meta is what a ledger is created with, stored once at the head of its
// store: the per-group budget and how RDP parts become (ε, δ).
type Meta struct {
	// Version is the stored form's version (Version).
	Version int `json:"version"`
	// Budget is every group's budget.
	Budget account.Budget `json:"budget"`
	// Conversion turns Rényi parts into (ε, δ) at the budget's δ.
	Conversion account.Conversion `json:"conversion"`
	// Created is when the ledger was created.
	Created time.Time `json:"created"`
}

// Validate checks a decoded Meta.
func (m Meta) Validate() error {
	if m.Version != Version {
		return fmt.Errorf("ledger version %d, this dpal reads %d", m.Version, Version)
	}
	if err := m.Budget.Validate(); err != nil {
		return err
	}
	if _, err := m.Conversion.MarshalText(); err != nil {
		return err
	}
	return nil
}

// Entry is one charge in the log.
type Entry struct {
	// Seq numbers the entries 1, 2, 3, … in the order they were committed.
	Seq uint64 `json:"seq"`
	// Time is when the charge was committed.
	Time time.Time `json:"time"`
	// Groups are the groups the release touched; each pays Loss.
	Groups []string `json:"groups"`
	// Loss is the release's privacy loss, with the mechanism's name and
	// parameters.
	Loss account.Loss `json:"loss"`
	// Once, when set, names a charge made at most once per ledger: a
	// mechanism applied once to each record of a partition (a stream's
	// selection decisions) costs every record its loss once, however many
	// records it screens (parallel composition).
	Once string `json:"once,omitempty"`
	// Note is free text for the audit trail.
	Note string `json:"note,omitempty"`
}

// Validate checks a decoded entry.
func (e Entry) Validate() error {
	if e.Seq == 0 {
		return errors.New("entry has sequence number 0")
	}
	if err := checkGroups(e.Groups); err != nil {
		return fmt.Errorf("entry %d: %w", e.Seq, err)
	}
	if err := e.Loss.Validate(); err != nil {
		return fmt.Errorf("entry %d: %w", e.Seq, err)
	}
	return nil
}

// maxGroupLen bounds a group name.
const maxGroupLen = 256

// checkGroups accepts one or more distinct non-empty group names. Long
// lists (a selection charges every record of a pool) are checked for
// repeats with a set, short ones by scanning.
func checkGroups(groups []string) error {
	if len(groups) == 0 {
		return errors.New("a charge needs at least one group")
	}
	var seen map[string]struct{}
	if len(groups) > 16 {
		seen = make(map[string]struct{}, len(groups))
	}
	for i, g := range groups {
		if g == "" || len(g) > maxGroupLen || strings.ContainsAny(g, "\n\r\x00") {
			return fmt.Errorf("invalid group name %q", g)
		}
		dup := false
		if seen != nil {
			_, dup = seen[g]
			seen[g] = struct{}{}
		} else {
			dup = slices.Contains(groups[:i], g)
		}
		if dup {
			return fmt.Errorf("group %q named twice", g)
		}
	}
	return nil
}

// Charge is a request to record a loss against groups.
type Charge struct {
	// Groups are the groups the release touches (at least one).
	Groups []string
	// Loss is what each group pays.
	Loss account.Loss
	// Once makes the charge idempotent: a second charge with the same
	// Once is a no-op (see Entry.Once).
	Once string
	// Note is free text for the audit trail.
	Note string
}

// Ledger is an append-only privacy ledger over a Store. Per-group totals
// are derived from the log when it is opened and kept up to date as a
// cache; they are never stored. A Ledger is safe for concurrent use; a
// durable store is also locked against other processes while it is open,
// and a SyncStore is shared with them: each Record folds in their charges
// before it checks the budget (see SyncStore).
type Ledger struct {
	mu     sync.Mutex
	meta   Meta
	budget account.Budget // in force: the stored one, or a lower one given to Open
	store  Store
	groups map[string]*total
	once   map[string]uint64
	seq    uint64
	now    func() time.Time
}

// total is one group's composed loss and its (ε, δ), cached.
type total struct {
	loss       account.Loss
	eps, delta float64
	charges    int
}

// Option configures a ledger at creation.
type Option func(*Meta)

// WithConversion makes a new ledger convert Rényi parts with c instead of
// the default account.Balle2020.
func WithConversion(c account.Conversion) Option {
	return func(m *Meta) { m.Conversion = c }
}

// New returns an empty in-memory ledger in which every group has budget b.
func New(b account.Budget, opts ...Option) (*Ledger, error) {
	return Open(NewMemStore(), b, opts...)
}

// Open returns the ledger kept in store. A new store is created with
// budget b. An existing one keeps the budget it was created with: a zero b
// means that one, a lower b is enforced for this Ledger only (the stored
// budget is unchanged), and a higher one is refused: reopening never
// raises a budget.
func Open(store Store, b account.Budget, opts ...Option) (*Ledger, error) {
	meta, ok, err := store.Meta()
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	if !ok {
		meta = Meta{Version: Version, Budget: b, Conversion: account.Balle2020, Created: time.Now().UTC()}
		for _, o := range opts {
			o(&meta)
		}
		if err := meta.Validate(); err != nil {
			return nil, fmt.Errorf("ledger: %w", err)
		}
		if err := store.Init(meta); errors.Is(err, ErrInitialised) {
			// Another process sharing the store created it meanwhile.
			if meta, ok, err = store.Meta(); err == nil && !ok {
				err = errors.New("store reports settings it does not have")
			}
			if err != nil {
				return nil, fmt.Errorf("ledger: %w", err)
			}
		} else if err != nil {
			return nil, fmt.Errorf("ledger: %w", err)
		}
	}
	if ok {
		if err := checkReopen(meta, b); err != nil {
			return nil, err
		}
	}
	budget := meta.Budget
	if b != (account.Budget{}) {
		budget = b // checkReopen made sure it is not above the stored one
	}
	l := &Ledger{meta: meta, budget: budget, store: store, groups: map[string]*total{}, once: map[string]uint64{}, now: time.Now}
	if err := store.Scan(l.replay); err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	return l, nil
}

// checkReopen refuses a budget above the stored one.
func checkReopen(meta Meta, b account.Budget) error {
	if err := meta.Validate(); err != nil {
		return fmt.Errorf("ledger: stored settings: %w", err)
	}
	if b == (account.Budget{}) {
		return nil
	}
	if b.Epsilon > meta.Budget.Epsilon || b.Delta > meta.Budget.Delta {
		return fmt.Errorf("ledger: budget ε=%v, δ=%v exceeds the ledger's own ε=%v, δ=%v: a budget cannot be raised by reopening",
			b.Epsilon, b.Delta, meta.Budget.Epsilon, meta.Budget.Delta)
	}
	return nil
}

// replay adds a stored entry to the cached totals.
func (l *Ledger) replay(e Entry) error {
	if err := e.Validate(); err != nil {
		return err
	}
	if e.Seq != l.seq+1 {
		return fmt.Errorf("entry %d follows entry %d: the log has a gap", e.Seq, l.seq)
	}
	// The stored log must fit the stored budget (a log past it was
	// tampered with); a budget lowered for this Ledger holds for new
	// charges only.
	next, err := l.apply(e.Groups, e.Loss, l.meta.Budget)
	if err != nil {
		return fmt.Errorf("entry %d: %w", e.Seq, err)
	}
	l.commitCache(e, next)
	return nil
}

// Meta returns the ledger's settings.
func (l *Ledger) Meta() Meta {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.meta
}

// Budget returns the per-group budget in force (see Open).
func (l *Ledger) Budget() account.Budget {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.budget
}

// Charge records one release of m's loss against groups; see Record.
func (l *Ledger) Charge(m account.Mechanism, groups ...string) (Entry, error) {
	return l.Record(Charge{Groups: groups, Loss: m.Loss()})
}

// Record appends c to the log if every group stays within the budget, and
// returns the committed entry; when it returns nil the entry is in the
// store (durably, for a durable store). It fails, recording nothing, when
// c is invalid or charges no loss at all, when a group would exceed the
// budget (errors.Is(err, account.ErrBudgetExceeded)) or when the store
// fails. A charge whose Once was already recorded records nothing new and
// returns only that entry's Seq and Once.
func (l *Ledger) Record(c Charge) (Entry, error) {
	if seq, ok := l.recorded(c.Once); ok {
		return Entry{Seq: seq, Once: c.Once}, nil
	}
	c, err := prepare(c)
	if err != nil {
		return Entry{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var (
		e    Entry
		next []*total
		dup  bool  // c's Once was recorded meanwhile
		derr error // decide's refusal, returned as it is
	)
	decide := func() (Entry, bool, error) {
		if seq, ok := l.once[c.Once]; ok && c.Once != "" {
			e, dup = Entry{Seq: seq, Once: c.Once}, true
			return Entry{}, false, nil
		}
		if next, derr = l.apply(c.Groups, c.Loss, l.budget); derr != nil {
			return Entry{}, false, derr
		}
		e = Entry{Seq: l.seq + 1, Time: l.now().UTC(), Groups: slices.Clone(c.Groups), Loss: c.Loss, Once: c.Once, Note: c.Note}
		return e, true, nil
	}
	if err := l.commit(decide); err != nil {
		if derr != nil && errors.Is(err, derr) {
			return Entry{}, derr
		}
		return Entry{}, fmt.Errorf("ledger: entry %d not recorded: %w", l.seq+1, err)
	}
	if !dup {
		l.commitCache(e, next)
	}
	return e, nil
}

// commit runs decide and appends the entry it accepts: with a SyncStore
// in one unit of the store (SyncStore.Sync), after folding in what other
// processes committed; with another store, which this Ledger alone
// writes, by Append. The caller holds l.mu.
func (l *Ledger) commit(decide func() (Entry, bool, error)) error {
	if ss, ok := l.store.(SyncStore); ok {
		return ss.Sync(l.seq, l.replay, decide)
	}
	e, ok, err := decide()
	if err != nil || !ok {
		return err
	}
	return l.store.Append(e)
}

// Refresh folds in the entries that other processes committed to a
// SyncStore since this Ledger last looked, so that Spent, Summary and
// Report include them; Record does it by itself. With another store it
// does nothing.
func (l *Ledger) Refresh() error {
	ss, ok := l.store.(SyncStore)
	if !ok {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := ss.Sync(l.seq, l.replay, func() (Entry, bool, error) { return Entry{}, false, nil }); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	return nil
}

// prepare validates c and gives it a copy of its loss.
func prepare(c Charge) (Charge, error) {
	if err := checkGroups(c.Groups); err != nil {
		return c, fmt.Errorf("ledger: %w", err)
	}
	loss, err := account.Compose(c.Loss) // validates, and copies the caller's slices
	if err != nil {
		return c, fmt.Errorf("ledger: %w", err)
	}
	if loss.IsZero() {
		// A mechanism that reports no loss at all is misconfigured (its ε
		// unset); a truly free computation needs no ledger.
		return c, fmt.Errorf("ledger: %s reports no privacy loss", loss.Mechanism)
	}
	c.Loss = loss
	return c, nil
}

// Check reports whether Record(c) would succeed now, recording nothing:
// nil when c is valid and every group would stay within the budget (or c's
// Once is already recorded), else Record's error (errors.Is(err,
// account.ErrBudgetExceeded) over budget). A caller that charges a run in
// parts checks the parts still to come together before the first, so that
// a run that cannot finish is refused before it spends anything. Between
// Check and Record another charge may take the room: Record still decides.
func (l *Ledger) Check(c Charge) error {
	if _, ok := l.recorded(c.Once); ok {
		return nil
	}
	c, err := prepare(c)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err = l.apply(c.Groups, c.Loss, l.budget)
	return err
}

// apply returns the groups' totals after paying loss, or an error if any
// would exceed the budget b. It changes nothing.
func (l *Ledger) apply(groups []string, loss account.Loss, b account.Budget) ([]*total, error) {
	next := make([]*total, len(groups))
	for i, g := range groups {
		t, err := l.after(g, loss, b)
		if err != nil {
			return nil, err
		}
		next[i] = t
	}
	return next, nil
}

// after is group's total once it pays loss, checked against budget b.
func (l *Ledger) after(group string, loss account.Loss, b account.Budget) (*total, error) {
	if loss.HasRDP() && b.Delta == 0 {
		return nil, fmt.Errorf("ledger: group %q: %s has a Rényi loss, which needs a budget with delta > 0", group, loss.Mechanism)
	}
	sum := loss
	prev := l.groups[group]
	if prev != nil {
		var err error
		if sum, err = account.Compose(prev.loss, loss); err != nil {
			return nil, fmt.Errorf("ledger: group %q: %w", group, err)
		}
	}
	t := &total{loss: sum, charges: 1}
	if prev != nil {
		t.charges = prev.charges + 1
	}
	t.eps, t.delta = l.spent(sum)
	eps := t.eps
	if b.Delta != l.budget.Delta {
		eps, _ = l.spentAt(sum, b.Delta)
	}
	if eps > b.Epsilon*(1+budgetSlack) || sum.Delta > b.Delta*(1+budgetSlack) {
		e := &BudgetError{Group: group, Mechanism: loss.Mechanism, Epsilon: eps, Delta: sum.Delta, Budget: b, Stored: l.meta.Budget}
		if prev != nil {
			e.Spent, _ = l.spentAt(prev.loss, b.Delta)
		}
		return nil, e
	}
	return t, nil
}

// BudgetError is the error of a charge that would take a group past the
// budget; it wraps account.ErrBudgetExceeded.
type BudgetError struct {
	// Group is the group, Mechanism the charge's mechanism.
	Group, Mechanism string
	// Spent is the group's ε before the charge; Epsilon and Delta are
	// what the charge would bring it to (ε read at Budget's δ).
	Spent, Epsilon, Delta float64
	// Budget is the budget in force; Stored the ledger's own, which a run
	// may have lowered.
	Budget, Stored account.Budget
}

func (e *BudgetError) Error() string {
	var b strings.Builder
	if over := e.Epsilon - e.Budget.Epsilon; over > e.Budget.Epsilon*budgetSlack {
		fmt.Fprintf(&b, "ledger: group %q would reach ε = %.6g (from %.6g) with this %s charge, over its budget ε = %.6g by %.3g",
			e.Group, e.Epsilon, e.Spent, e.Mechanism, e.Budget.Epsilon, over)
	} else {
		fmt.Fprintf(&b, "ledger: group %q would reach δ = %.3g with this %s charge, over its budget δ = %.3g by %.3g",
			e.Group, e.Delta, e.Mechanism, e.Budget.Delta, e.Delta-e.Budget.Delta)
	}
	if e.Budget != e.Stored {
		fmt.Fprintf(&b, " (lowered for this run from the ledger's ε = %.6g, δ = %.3g)", e.Stored.Epsilon, e.Stored.Delta)
	}
	fmt.Fprintf(&b, ": %v; spend less, or use a new ledger (a ledger's budget is set when it is created and cannot be raised)", account.ErrBudgetExceeded)
	return b.String()
}

// Unwrap makes errors.Is(err, account.ErrBudgetExceeded) hold.
func (e *BudgetError) Unwrap() error { return account.ErrBudgetExceeded }

// spent is a total loss's (ε, δ): without a Rényi part its own; with one,
// the Rényi part converted at the δ the budget in force leaves (+Inf if
// none).
func (l *Ledger) spent(loss account.Loss) (eps, delta float64) {
	return l.spentAt(loss, l.budget.Delta)
}

// spentAt is spent with the Rényi part converted at total δ = delta.
func (l *Ledger) spentAt(loss account.Loss, delta float64) (eps, d float64) {
	if !loss.NeedsConversion() {
		return loss.Epsilon, loss.Delta
	}
	eps, err := loss.EpsilonAt(delta, l.meta.Conversion)
	if err != nil {
		return posInf, delta
	}
	return eps, delta
}

// commitCache installs the new totals of an appended entry.
func (l *Ledger) commitCache(e Entry, next []*total) {
	for i, g := range e.Groups {
		l.groups[g] = next[i]
	}
	if e.Once != "" {
		l.once[e.Once] = e.Seq
	}
	l.seq = e.Seq
}

// Release charges m's loss to groups and, only once the entry is
// committed, calls draw and returns what it releases. It is the one way a
// mechanism's output should leave: nothing is drawn when the charge fails.
func Release[T any](l *Ledger, m account.Mechanism, groups []string, draw func() (T, error)) (T, error) {
	return ReleaseCharge(l, Charge{Groups: groups, Loss: m.Loss()}, draw)
}

// ReleaseCharge is Release for a prepared Charge (with a note, or a Once
// key for a mechanism applied once per record of a partition).
func ReleaseCharge[T any](l *Ledger, c Charge, draw func() (T, error)) (T, error) {
	if _, err := l.Record(c); err != nil {
		var zero T
		return zero, err
	}
	return draw()
}

// Charged reports whether a charge with this Once key has been recorded.
func (l *Ledger) Charged(once string) bool {
	_, ok := l.recorded(once)
	return ok
}

// recorded returns the sequence number of the charge with this Once key
// ("" never matches). It is the cheap path of a repeated Once charge: no
// validation, no allocation.
func (l *Ledger) recorded(once string) (uint64, bool) {
	if once == "" {
		return 0, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	seq, ok := l.once[once]
	return seq, ok
}

// Spent returns group's ε and δ so far (zero for an unknown group). For a
// group with a Rényi part δ is the budget's δ, at which it is converted;
// ε is +Inf if the approximate part left no δ for the conversion.
func (l *Ledger) Spent(group string) (eps, delta float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if t, ok := l.groups[group]; ok {
		return t.eps, t.delta
	}
	return 0, 0
}

// Remaining returns the ε left in group's budget (never negative).
func (l *Ledger) Remaining(group string) float64 {
	eps, _ := l.Spent(group)
	return remaining(l.Budget(), eps)
}

// remaining is the ε budget b leaves after spending eps (never negative).
func remaining(b account.Budget, eps float64) float64 { return max(0, b.Epsilon-eps) }

// Loss returns group's composed loss (the zero Loss for an unknown group).
func (l *Ledger) Loss(group string) account.Loss {
	l.mu.Lock()
	defer l.mu.Unlock()
	if t, ok := l.groups[group]; ok {
		c, _ := account.Compose(t.loss) // a deep copy
		return c
	}
	return account.Loss{}
}

// Groups returns the names of the groups that have been charged, sorted.
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
	for name, t := range l.groups {
		if group == "" || t.eps > eps || t.eps == eps && name < group {
			group, eps = name, t.eps
		}
	}
	return group, eps
}

// Len returns the number of entries in the log.
func (l *Ledger) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return int(l.seq)
}

// Entries returns every entry in order, read back from the store.
func (l *Ledger) Entries() ([]Entry, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Entry
	err := l.store.Scan(func(e Entry) error { out = append(out, e); return nil })
	return out, err
}

// Close closes the store.
func (l *Ledger) Close() error { return l.store.Close() }

// GroupSummary is one group's spend, as reports show it.
type GroupSummary struct {
	Group     string  `json:"group"`
	Epsilon   float64 `json:"epsilon"`
	Delta     float64 `json:"delta"`
	Charges   int     `json:"charges"`
	Budget    float64 `json:"budget"`
	Remaining float64 `json:"remaining"`
}

// Summary returns every group's spend, sorted by group name.
func (l *Ledger) Summary() []GroupSummary {
	out, _ := l.summarise(func(t *total) (float64, float64, error) { return t.eps, t.delta, nil })
	return out
}

// SummaryAt is Summary with every group's ε read at total δ = delta
// instead of the budget's δ.
func (l *Ledger) SummaryAt(delta float64) ([]GroupSummary, error) {
	return l.summarise(func(t *total) (float64, float64, error) {
		eps, err := t.loss.EpsilonAt(delta, l.meta.Conversion)
		return eps, delta, err
	})
}

// summarise builds the sorted summary with each group's (ε, δ) from at.
func (l *Ledger) summarise(at func(*total) (eps, delta float64, err error)) ([]GroupSummary, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]GroupSummary, 0, len(l.groups))
	for name, t := range l.groups {
		eps, delta, err := at(t)
		if err != nil {
			return nil, fmt.Errorf("group %q: %w", name, err)
		}
		out = append(out, GroupSummary{Group: name, Epsilon: eps, Delta: delta, Charges: t.charges,
			Budget: l.budget.Epsilon, Remaining: remaining(l.budget, eps)})
	}
	slices.SortFunc(out, func(a, b GroupSummary) int { return strings.Compare(a.Group, b.Group) })
	return out, nil
}

// snapshot is the JSON form of a ledger: its settings and every entry.
type snapshot struct {
	Meta    Meta    `json:"meta"`
	Entries []Entry `json:"entries"`
}

// MarshalJSON encodes the settings and every entry, so that an in-memory
// ledger can travel inside a saved state.
func (l *Ledger) MarshalJSON() ([]byte, error) {
	entries, err := l.Entries()
	if err != nil {
		return nil, err
	}
	if entries == nil {
		entries = []Entry{}
	}
	return json.Marshal(snapshot{Meta: l.Meta(), Entries: entries})
}

// UnmarshalJSON replaces l with an in-memory ledger holding the encoded
// settings and entries, after validating all of them.
func (l *Ledger) UnmarshalJSON(b []byte) error {
	var s snapshot
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	if err := s.Meta.Validate(); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	st := NewMemStore()
	if err := st.Init(s.Meta); err != nil {
		return err
	}
	st.entries = s.Entries
	nl, err := Open(st, account.Budget{})
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.meta, l.budget, l.store, l.groups, l.once, l.seq, l.now = nl.meta, nl.budget, nl.store, nl.groups, nl.once, nl.seq, nl.now
	return nil
}

// Report is what a privacy officer reads: the settings, every entry and
// every group's spend against the budget. `dpal ledger show --json` and
// the service print it.
type Report struct {
	Meta    Meta           `json:"meta"`
	Entries []Entry        `json:"entries"`
	Groups  []GroupSummary `json:"groups"`
}

// Report returns the ledger's report, optionally restricted to the entries
// and the summary of one group ("" for all).
func (l *Ledger) Report(group string) (*Report, error) {
	return l.report(group, l.Summary())
}

// ReportAt is Report with every group's ε read at total δ = delta.
func (l *Ledger) ReportAt(group string, delta float64) (*Report, error) {
	sum, err := l.SummaryAt(delta)
	if err != nil {
		return nil, err
	}
	return l.report(group, sum)
}

func (l *Ledger) report(group string, summary []GroupSummary) (*Report, error) {
	entries, err := l.Entries()
	if err != nil {
		return nil, err
	}
	r := &Report{Meta: l.Meta(), Entries: []Entry{}, Groups: []GroupSummary{}}
	for _, e := range entries {
		if group == "" || slices.Contains(e.Groups, group) {
			r.Entries = append(r.Entries, e)
		}
	}
	for _, g := range summary {
		if group == "" || g.Group == group {
			r.Groups = append(r.Groups, g)
		}
	}
	return r, nil
}
