package pool

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dpsgd"
)

// Mode is how the planner spends the budget of records labelled late.
type Mode int

const (
	// Naive is Fig. 2: in phase i every labelled record is sampled at
	// q_i = b/|D_i| for n_i = ⌊e·|D_i|/b⌋ steps, with one noise multiplier
	// for the whole schedule calibrated so that the group that loses most
	// ends exactly at the target. Later groups end below it.
	Naive Mode = iota
	// StepAmplification is Fig. 5 and §3.3 for any number of groups: per
	// phase, a sampling rate per group and a step count such that every
	// labelled group's total loss after the phase is the same, E_i, and the
	// expected batch is b. The steps are the largest integer for which the
	// rates still give an expected batch ≥ b; the phase's noise multiplier
	// is then lowered (never raised) until the batch is b exactly.
	StepAmplification
	// NoiseReduction is App. D.1's first alternative: per-group rates as in
	// step amplification, the naive step counts, and the phase's noise
	// multiplier solved so that the expected batch is b.
	NoiseReduction
	// Continual is App. D.1's second alternative: each phase first trains
	// on the newly labelled group alone (rate min(1, b/|Q|)) until its loss
	// reaches the others', then on everyone at the naive rate b/|D_i| for
	// the naive steps, with a noise multiplier that brings the group that
	// loses most to E_i.
	Continual
)

var modeNames = []string{"naive", "step-amplification", "noise-reduction", "continual"}

// String returns the name ParseMode accepts.
func (m Mode) String() string {
	return nameOf(modeNames, int(m), "Mode")
}

// ParseMode accepts naive, step-amplification, noise-reduction or continual.
func ParseMode(s string) (Mode, error) {
	i, err := parseName("mode", modeNames, s)
	return Mode(i), err
}

// nameOf is names[i], or type(i) for an unknown value.
func nameOf(names []string, i int, typ string) string {
	if i >= 0 && i < len(names) {
		return names[i]
	}
	return typ + "(" + strconv.Itoa(i) + ")"
}

// parseName returns the index of s (case-insensitive) in names.
func parseName(what string, names []string, s string) (int, error) {
	for i, n := range names {
		if strings.EqualFold(strings.TrimSpace(s), n) {
			return i, nil
		}
	}
	return 0, fmt.Errorf("unknown %s %q (want %s)", what, s, strings.Join(names, ", "))
}

// Accounting is how a group's selection loss composes with its training.
type Accounting int

const (
	// Basic adds the selections' ε to the training's converted ε (basic
	// composition, the paper's eq. 6).
	Basic Accounting = iota
	// RDP adds each selection's RDP curve (account.PureRDP, valid for the
	// discrete Laplace top-k of dp/mech) to the DP-SGD curve and converts
	// once. It charges less than Basic for the same mechanisms, so the plan
	// can spend more on training.
	RDP
)

var accountingNames = []string{"basic", "rdp"}

// String returns the name ParseAccounting accepts.
func (a Accounting) String() string {
	return nameOf(accountingNames, int(a), "Accounting")
}

// ParseAccounting accepts basic or rdp.
func ParseAccounting(s string) (Accounting, error) {
	i, err := parseName("accounting", accountingNames, s)
	return Accounting(i), err
}

// Config is what the planner is given: all public.
type Config struct {
	// Epsilon is every record's total budget ε (selection and training).
	Epsilon float64
	// EpsilonSelect is ε_Sel, the budget of all T selections together
	// (0 for selections that do not look at the data, e.g. random).
	EpsilonSelect float64
	// Delta is δ (0 < δ < 1), all of it for the DP-SGD part.
	Delta float64
	// Batch is the expected batch size b.
	Batch int
	// Epochs is e, the epochs per training phase of the naive schedule.
	Epochs int
	// Initial is |D_1|, the randomly chosen initial labelled set (≥ b).
	Initial int
	// Queries are the sizes of the T selections, in order.
	Queries []int
	// Mode is the planning mode.
	Mode Mode
	// Accounting is how selection and training compose.
	Accounting Accounting
	// ScoresLabelled is set for acquisitions that score labelled records
	// too (§3.5): then every record pays every selection, ε_Sel in all.
	ScoresLabelled bool
	// Conversion turns RDP into (ε, δ); the zero value is Balle2020, as
	// in dp/ledger.
	Conversion account.Conversion
	// Selection is how records are chosen for labelling: TopK (the
	// paper's fixed sizes, the zero value) or Poisson (independent coins,
	// see poisson.go and docs/pool.md).
	Selection Selection
	// Labeler is whom the chosen records are shown to: Trusted (the
	// paper's §3.1, the zero value) or Untrusted, for whom a selection is
	// a release; Poisson selection needs a trusted labeler.
	Labeler Labeler
	// PoolSize is n, the number of pool records, which sets the initial
	// set's Poisson rate β = Initial/n (Poisson selection only). Like
	// every DP-SGD sampling rate q = b/n, it is treated as public.
	PoolSize int
	// PMax is p_max, the largest probability with which a selection may
	// choose a record (Poisson selection only, 0 < p_max ≤ 1).
	PMax float64
	// PaperTopK plans top-k selection the paper's way, its training
	// charged under add/remove: for comparison only (the ε it claims is
	// not the ε the run pays, see Group.EpsilonReplace); Run refuses such
	// a plan.
	PaperTopK bool
}

// maxRecords bounds the dataset sizes the planner accepts.
const maxRecords = 1 << 40

// Validate checks the configuration, naming the first bad field.
func (c Config) Validate() error {
	if err := account.ValidateEpsilon(c.Epsilon); err != nil {
		return fmt.Errorf("epsilon: %w", err)
	}
	if !(c.EpsilonSelect >= 0 && c.EpsilonSelect < c.Epsilon) {
		return fmt.Errorf("epsilon-select must satisfy 0 <= ε_Sel < ε = %v, got %v", c.Epsilon, c.EpsilonSelect)
	}
	if !(c.Delta > 0 && c.Delta < 1) {
		return fmt.Errorf("delta must satisfy 0 < δ < 1, got %v", c.Delta)
	}
	switch {
	case c.Batch < 1:
		return fmt.Errorf("batch must be >= 1, got %d", c.Batch)
	case c.Epochs < 1 || c.Epochs > 1e6:
		return fmt.Errorf("epochs must be in [1, 10^6], got %d", c.Epochs)
	case c.Initial < c.Batch:
		return fmt.Errorf("initial labelled set (%d) must be at least the batch (%d)", c.Initial, c.Batch)
	case c.Initial > maxRecords:
		return fmt.Errorf("initial labelled set %d is too large", c.Initial)
	case len(c.Queries) == 0:
		return errors.New("at least one query is needed")
	case c.Mode < Naive || c.Mode > Continual:
		return fmt.Errorf("unknown mode %d", int(c.Mode))
	case c.Accounting != Basic && c.Accounting != RDP:
		return fmt.Errorf("unknown accounting %d", int(c.Accounting))
	}
	total := c.Initial
	for i, q := range c.Queries {
		if q < 1 || q > maxRecords {
			return fmt.Errorf("query %d: size must be in [1, 2^40], got %d", i+1, q)
		}
		if total += q; total > maxRecords {
			return errors.New("labelled set too large")
		}
	}
	if _, err := c.Conversion.MarshalText(); err != nil {
		return err
	}
	return c.validateSelection()
}

// GroupRate is one group's Poisson sampling rate in a phase.
type GroupRate struct {
	// Group names the group ("initial", "query-1", …).
	Group string `json:"group"`
	// Size is the group's number of records.
	Size int `json:"size"`
	// SampleRate is each of its records' inclusion probability per step.
	SampleRate float64 `json:"sample_rate"`
}

// Phase is one training phase of the plan: Steps DP-SGD steps with noise
// multiplier NoiseMultiplier, each record of a group sampled independently
// with the group's rate.
type Phase struct {
	// Round is the training phase i = 1…T+1 the entry belongs to (the
	// selection j follows round j). Continual mode has two entries per
	// round from the second on: the catch-up and the joint training.
	Round int `json:"-"`
	// Steps is the number of DP-SGD steps.
	Steps int `json:"steps"`
	// NoiseMultiplier is σ for every step of the phase.
	NoiseMultiplier float64 `json:"noise_multiplier"`
	// Groups are the labelled groups with their rates (rate 0: not
	// sampled in this phase).
	Groups []GroupRate `json:"groups"`
	// ExpectedBatch is Σ rate·size.
	ExpectedBatch float64 `json:"expected_batch"`
}

// Group is one group's privacy loss at the end of the plan, as the ledger
// will read it (account.Loss.EpsilonAt at δ).
type Group struct {
	// Group names the group.
	Group string `json:"group"`
	// Size is its number of records.
	Size int `json:"size"`
	// EpsilonTraining is the ε of its DP-SGD phases alone at δ.
	EpsilonTraining float64 `json:"epsilon_training"`
	// EpsilonSelection is the nominal ε of the selections it paid for
	// (count × ε_Sel/T).
	EpsilonSelection float64 `json:"epsilon_selection"`
	// EpsilonTotal is the ε of selection and training composed under the
	// plan's accounting, at δ: what the ledger charges (the training part
	// under replace-one for top-k selection, add/remove for Poisson and
	// for a PaperTopK plan).
	EpsilonTotal float64 `json:"epsilon_total"`
	// EpsilonAddRemove and EpsilonReplace are, for top-k selection, the
	// same phases and selections read with the training under add/remove
	// (what the paper claims) and under replace-one (what they cost).
	EpsilonAddRemove float64 `json:"epsilon_add_remove,omitempty"`
	EpsilonReplace   float64 `json:"epsilon_replace,omitempty"`
}

// Plan is the planner's output.
type Plan struct {
	// Config is what the plan was made for.
	Config Config `json:"-"`
	// Phases are the training phases in order.
	Phases []Phase `json:"phases"`
	// Groups are the labelled groups' final losses.
	Groups []Group `json:"groups"`
	// Selection names the selection scheme the plan is for.
	Selection string `json:"selection"`
	// Poisson is the per-record guarantee of Poisson selection (nil for
	// top-k).
	Poisson *PoissonPrivacy `json:"poisson,omitempty"`
}

// GroupNames returns the planner's group names: initial, query-1, …
func GroupNames(queries int) []string {
	out := []string{"initial"}
	for j := 1; j <= queries; j++ {
		out = append(out, "query-"+strconv.Itoa(j))
	}
	return out
}

// selections is how many selections a record of group query (0 initial,
// j query-j) has paid for before training round i: those that scored it.
// Selection j scores the unlabelled pool, which holds query-j's records
// until they are chosen, so they pay min(j, i−1); the initial set pays
// only for acquisitions that score labelled records too.
func (c Config) selections(query, round int) int {
	if c.ScoresLabelled {
		return round - 1
	}
	return min(query, round-1)
}

// SelectionLoss is the loss one selection charges each record it scores:
// pure ε_Sel/T under Basic accounting, its PureRDP curve under RDP. The
// pool loop charges exactly this (Select, SelectionCharge), so the ledger
// reads what was planned.
func (c Config) SelectionLoss() (account.Loss, error) {
	return selectionLoss("selection", c.EpsilonSelect/float64(len(c.Queries)), c.Accounting)
}

// PhaseLoss is the DP-SGD loss of phase entry e for group g (0 initial, j
// query-j); ok is false when the group is not sampled in it. The pool loop
// charges it to the group's records before the phase's model is released.
func (p *Plan) PhaseLoss(e, g int) (l account.Loss, ok bool, err error) {
	if e < 0 || e >= len(p.Phases) {
		return account.Loss{}, false, fmt.Errorf("no phase %d", e)
	}
	ph := p.Phases[e]
	if g < 0 || g >= len(ph.Groups) || ph.Groups[g].SampleRate == 0 {
		return account.Loss{}, false, nil
	}
	l, err = dpsgd.TrainingLoss([]account.Phase{{SampleRate: ph.Groups[g].SampleRate, NoiseMultiplier: ph.NoiseMultiplier, Steps: ph.Steps}}, p.Config.replaceOne())
	return l, err == nil, err
}

// replaceOne reports whether the plan's training is charged under
// replace-one: top-k selection, unless planned the paper's way.
func (c Config) replaceOne() bool { return c.Selection == TopK && !c.PaperTopK }

// GroupLoss returns the composed loss of group index g (0 initial, j
// query-j) after training round `round` (1…T+1), the selections it paid for
// included, with the training part alone. round = T+1 is the end.
func (p *Plan) GroupLoss(g, round int) (total, training account.Loss, err error) {
	return p.groupLoss(g, round, p.Config.replaceOne())
}

// groupLoss is GroupLoss with the training read under replace-one or
// add/remove.
func (p *Plan) groupLoss(g, round int, replaceOne bool) (total, training account.Loss, err error) {
	steps := p.groupSteps(g, round)
	parts := []account.Loss{}
	if len(steps) > 0 {
		if training, err = dpsgd.TrainingLoss(steps, replaceOne); err != nil {
			return account.Loss{}, account.Loss{}, err
		}
		parts = append(parts, training)
	}
	sel, err := p.Config.SelectionLoss()
	if err != nil {
		return account.Loss{}, account.Loss{}, err
	}
	if n := p.Config.selections(g, round); n > 0 && !sel.IsZero() {
		s, err := sel.Times(n)
		if err != nil {
			return account.Loss{}, account.Loss{}, err
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return account.Loss{Mechanism: "none"}, training, nil
	}
	total, err = account.Compose(parts...)
	return total, training, err
}

// Epsilon returns the ε at the plan's δ of group g after round.
func (p *Plan) Epsilon(g, round int) (total, training float64, err error) {
	t, tr, err := p.GroupLoss(g, round)
	if err != nil {
		return 0, 0, err
	}
	if total, err = p.epsilonOf(t); err != nil {
		return 0, 0, err
	}
	training, err = p.epsilonOf(tr)
	return total, training, err
}

func (p *Plan) epsilonOf(l account.Loss) (float64, error) {
	if l.IsZero() {
		return 0, nil
	}
	return l.EpsilonAt(p.Config.Delta, p.Config.Conversion)
}

// EpsilonUnder returns group g's final total ε with the plan's phases and
// selections composed under acc instead of the plan's own accounting: the
// other reading of the same plan, for comparing basic composition with
// joint RDP accounting.
func (p *Plan) EpsilonUnder(acc Accounting, g int) (float64, error) {
	other := *p
	other.Config.Accounting = acc
	total, _, err := other.Epsilon(g, len(p.Config.Queries)+1)
	return total, err
}

// UnselectedEpsilon is the loss of a record never selected, as the ledger
// reads it: the T selections that scored it, ε_Sel under basic
// composition, their composed RDP curve converted at δ under RDP
// accounting (which can exceed ε_Sel: the curve pays for its conversion,
// and only pays off composed with training).
func (p *Plan) UnselectedEpsilon() (float64, error) {
	return p.SelectedEpsilon(len(p.Config.Queries))
}

// SelectedEpsilon is the loss, as the ledger reads it, of a record chosen
// by selection j before it first trains: the j selections that scored it
// (j·ε_Sel/T under basic composition, their composed curve under RDP).
func (p *Plan) SelectedEpsilon(j int) (float64, error) {
	sel, err := p.Config.SelectionLoss()
	if err != nil || sel.IsZero() || j == 0 {
		return 0, err
	}
	all, err := sel.Times(j)
	if err != nil {
		return 0, err
	}
	return p.epsilonOf(all)
}

// report fills p.Groups from the phases.
func (p *Plan) report() error {
	names := GroupNames(len(p.Config.Queries))
	end := len(p.Config.Queries) + 1
	p.Groups = p.Groups[:0]
	for g, name := range names {
		total, training, err := p.Epsilon(g, end)
		if err != nil {
			return fmt.Errorf("group %s: %w", name, err)
		}
		gr := Group{
			Group: name, Size: p.Config.size(g),
			EpsilonTraining:  training,
			EpsilonSelection: float64(p.Config.selections(g, end)) * p.Config.EpsilonSelect / float64(len(p.Config.Queries)),
			EpsilonTotal:     total,
		}
		if p.Config.Selection == TopK {
			for _, r := range []struct {
				replace bool
				to      *float64
			}{{false, &gr.EpsilonAddRemove}, {true, &gr.EpsilonReplace}} {
				l, _, err := p.groupLoss(g, end, r.replace)
				if err != nil {
					return fmt.Errorf("group %s: %w", name, err)
				}
				if *r.to, err = p.epsilonOf(l); err != nil {
					return fmt.Errorf("group %s: %w", name, err)
				}
			}
		}
		p.Groups = append(p.Groups, gr)
	}
	return nil
}

// size is group g's number of records.
func (c Config) size(g int) int {
	if g == 0 {
		return c.Initial
	}
	return c.Queries[g-1]
}

// labelled is |D_i|, the labelled set in round i.
func (c Config) labelled(round int) int {
	n := c.Initial
	for _, q := range c.Queries[:round-1] {
		n += q
	}
	return n
}

// NaiveSteps is n_i = ⌊e·|D_i|/b⌋ (at least 1): e epochs at q_i = b/|D_i|,
// rounded down, in integer arithmetic.
func (c Config) NaiveSteps(round int) int {
	return max(1, c.Epochs*c.labelled(round)/c.Batch)
}
