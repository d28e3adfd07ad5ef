package pool

import (
	"errors"
	"fmt"
	"math"

	"github.com/dpal-dev/dpal/dp/account"
)

// Selection is how the loop chooses the records to label.
type Selection int

const (
	// TopK is the paper's scheme: an initial set of exactly Initial
	// records drawn uniformly, then per selection the noisy top-k of size
	// Queries[j] (App. C). Fixed sizes couple the records: a record that
	// enters pushes another out, so two neighbouring pools' training sets
	// differ by a substitution, and training is charged under replace-one
	// (account.SubsampledGaussianReplace).
	TopK Selection = iota
	// Poisson is Poisson active learning (docs/pool.md, "Poisson
	// selection"): the initial set includes each record independently
	// with probability β = Initial/PoolSize, and selection j includes each
	// unlabelled record independently with probability p_j(x) ≤ p_max, a
	// fixed public function of its acquisition score under the previous
	// released model. Nothing couples two records, the selections are
	// shown only to the trusted labeler, and every pool record is charged
	// the worst-entry training loss amplified at the rate η = EntryRate.
	Poisson
)

var selectionNames = []string{"topk", "poisson"}

// String returns the name ParseSelection accepts.
func (s Selection) String() string { return nameOf(selectionNames, int(s), "Selection") }

// ParseSelection accepts topk or poisson.
func ParseSelection(s string) (Selection, error) {
	i, err := parseName("selection", selectionNames, s)
	return Selection(i), err
}

// Labeler is whom the chosen records are shown to.
type Labeler int

const (
	// Trusted is paper 001's labeler (§3.1): it sees the chosen records,
	// and what it sees is not released.
	Trusted Labeler = iota
	// Untrusted labelers see a release: each selection must then be a DP
	// mechanism charged to the ledger (the top-k scheme's Laplace
	// selection, or dpal kanon), and Poisson selection is refused.
	Untrusted
)

var labelerNames = []string{"trusted", "untrusted"}

// String returns the name ParseLabeler accepts.
func (l Labeler) String() string { return nameOf(labelerNames, int(l), "Labeler") }

// ParseLabeler accepts trusted or untrusted.
func ParseLabeler(s string) (Labeler, error) {
	i, err := parseName("labeler", labelerNames, s)
	return Labeler(i), err
}

// validateSelection checks the selection fields.
func (c Config) validateSelection() error {
	switch {
	case c.Labeler != Trusted && c.Labeler != Untrusted:
		return fmt.Errorf("unknown labeler %d", int(c.Labeler))
	case c.PaperTopK && c.Selection != TopK:
		return errors.New("the paper's accounting is a top-k plan; Poisson selection has its own")
	case c.Selection == TopK:
		return nil
	case c.Selection != Poisson:
		return fmt.Errorf("unknown selection %d", int(c.Selection))
	case c.Labeler == Untrusted:
		return errors.New("poisson selection needs a trusted labeler: its selections are not released " +
			"mechanisms, so an untrusted labeler would see records that no mechanism protects; " +
			"use --selection topk (each selection a charged Laplace top-k) or dpal kanon")
	case c.EpsilonSelect != 0:
		return fmt.Errorf("poisson selection charges nothing for selecting (the selections are not released), "+
			"so plan it with ε_Sel = 0 (got %v)", c.EpsilonSelect)
	case c.ScoresLabelled:
		return errors.New("poisson selection scores only the unlabelled pool; plan without ScoresLabelled")
	case !(c.PMax > 0 && c.PMax <= 1):
		return fmt.Errorf("p-max must satisfy 0 < p_max <= 1, got %v", c.PMax)
	}
	need := c.Initial
	for _, q := range c.Queries {
		need += q
	}
	if c.PoolSize < need || c.PoolSize > maxRecords {
		return fmt.Errorf("pool size %d must be at least the expected labels %d (initial + queries) and at most 2^40", c.PoolSize, need)
	}
	return nil
}

// InitialRate is β = Initial/PoolSize, the initial set's Poisson rate
// under Poisson selection.
func (c Config) InitialRate() float64 {
	return float64(c.Initial) / float64(c.PoolSize)
}

// EntryRate is η = 1 − (1 − β)(1 − p_max)^T, the probability that one of a
// record's T + 1 entry coins falls below its public ceiling (β for the
// initial set, p_max for each selection). The coins are drawn
// independently of the data, so a record takes part in no training with
// probability 1 − η whatever the models say (docs/pool.md, Theorem 1).
func (c Config) EntryRate() float64 {
	stay := (1 - c.InitialRate()) * math.Pow(1-c.PMax, float64(len(c.Queries)))
	return 1 - stay
}

// randomRate is random acquisition's selection probability under Poisson
// selection: query j's expected size over the expected number of records
// still unlabelled, n − Initial − Q_1 − … − Q_{j−1}. Only public numbers
// enter, so the random baseline asks the same expected labels as the plan
// without reading a record.
func (c Config) randomRate(j int) float64 {
	left := c.PoolSize - c.Initial
	for _, q := range c.Queries[:j-1] {
		left -= q
	}
	return float64(c.Queries[j-1]) / float64(max(1, left))
}

// PoissonPrivacy is the per-record guarantee of a Poisson plan
// (docs/pool.md, Theorem 1): every pool record, labelled or not, is
// charged Loss, the Poisson amplification at rate EntryRate (Zhu & Wang
// 2019, Thm 6, account.AmplifyPoissonRDP) of the worst-entry training
// curve: at each RDP order the largest of the groups' composed DP-SGD
// curves (a record that enters with selection j trains in the phases from
// j on at query-j's rates).
type PoissonPrivacy struct {
	// InitialRate is β, PMax is p_max and EntryRate is η.
	InitialRate float64 `json:"initial_rate"`
	PMax        float64 `json:"p_max"`
	EntryRate   float64 `json:"entry_rate"`
	// WorstEntry names the group whose training ε is the largest.
	WorstEntry string `json:"worst_entry"`
	// EpsilonTraining is the worst-entry curve's ε at δ, unamplified: what
	// a record known to be labelled would pay.
	EpsilonTraining float64 `json:"epsilon_training"`
	// Epsilon is the amplified ε at δ: what every pool record is charged.
	Epsilon float64 `json:"epsilon"`
	// Loss is the amplified loss itself, as the ledger records it.
	Loss account.Loss `json:"-"`
}

// amplifyOrders are the integer RDP orders 2…64 of the worst-entry curve:
// Zhu & Wang's bound at order α reads the curve at every integer order
// from 2 to α.
func amplifyOrders() []float64 {
	out := make([]float64, 0, 63)
	for a := 2; a <= 64; a++ {
		out = append(out, float64(a))
	}
	return out
}

// poissonPrivacy computes the amplified worst-entry loss of a plan whose
// phases are built.
func (p *Plan) poissonPrivacy() (*PoissonPrivacy, error) {
	cfg := p.Config
	orders := amplifyOrders()
	worst := make([]float64, len(orders))
	pp := &PoissonPrivacy{InitialRate: cfg.InitialRate(), PMax: cfg.PMax, EntryRate: cfg.EntryRate()}
	best := -1.0
	for g, name := range GroupNames(len(cfg.Queries)) {
		steps := p.groupSteps(g, len(cfg.Queries)+1)
		if len(steps) == 0 {
			continue
		}
		curve, err := account.ScheduleRDP(steps, orders)
		if err != nil {
			return nil, fmt.Errorf("group %s: %w", name, err)
		}
		for k, v := range curve {
			worst[k] = math.Max(worst[k], v)
		}
		if e, err := p.epsilonOf(account.Loss{Orders: orders, RDP: curve}); err == nil && e > best {
			best, pp.WorstEntry = e, name
		}
	}
	train, err := account.RDPCurve("poisson-al worst-entry training", orders, worst)
	if err != nil {
		return nil, err
	}
	if pp.EpsilonTraining, err = p.epsilonOf(train); err != nil {
		return nil, err
	}
	amp, err := account.AmplifyPoissonRDP(train, pp.EntryRate)
	if err != nil {
		return nil, err
	}
	amp.Mechanism = "poisson-active-learning"
	amp.Params = map[string]float64{"initial_rate": pp.InitialRate, "p_max": cfg.PMax, "entry_rate": pp.EntryRate,
		"selections": float64(len(cfg.Queries)), "phases": float64(len(p.Phases))}
	pp.Loss = amp
	if pp.Epsilon, err = p.epsilonOf(amp); err != nil {
		return nil, err
	}
	return pp, nil
}

// groupSteps are group g's DP-SGD phases up to round `round`.
func (p *Plan) groupSteps(g, round int) []account.Phase {
	var steps []account.Phase
	for _, ph := range p.Phases {
		if ph.Round > round {
			break
		}
		if g < len(ph.Groups) && ph.Groups[g].SampleRate > 0 {
			steps = append(steps, account.Phase{SampleRate: ph.Groups[g].SampleRate, NoiseMultiplier: ph.NoiseMultiplier, Steps: ph.Steps})
		}
	}
	return steps
}

// poissonTol is how close below the target the amplified ε is solved
// (relative).
const poissonTol = 1e-5

// buildPoisson plans Poisson active learning: the training plan (cfg.Mode,
// no selection loss) at the training target t whose amplified worst-entry
// ε equals cfg.Epsilon, found by a bracketed search on log t. Every plan
// the search keeps has amplified ε ≤ cfg.Epsilon, so the result never
// overspends even where rounding of the step counts makes ε(t) jump.
func buildPoisson(cfg Config) (*Plan, error) {
	at := func(t float64) (*Plan, error) {
		inner := cfg
		inner.Epsilon = t
		plan, err := buildTraining(inner)
		if err != nil {
			return nil, err
		}
		plan.Config = cfg
		if plan.Poisson, err = plan.poissonPrivacy(); err != nil {
			return nil, err
		}
		return plan, nil
	}
	var best *Plan
	f := func(y float64) float64 {
		plan, err := at(math.Exp(y))
		if err != nil {
			return math.Inf(1) // too little noise to plan: infeasible
		}
		gap := plan.Poisson.Epsilon/cfg.Epsilon - 1
		if gap <= 0 && (best == nil || plan.Poisson.Epsilon > best.Poisson.Epsilon) {
			best = plan
		}
		return gap
	}
	// First guess: amplification lowers ε by roughly a constant, so the
	// target t = ε + (ε − ε_amp(ε)) is usually within a percent.
	x0 := math.Log(cfg.Epsilon)
	if gap := f(x0); !math.IsInf(gap, 0) {
		x0 = math.Log(cfg.Epsilon * (1 - gap))
	}
	lo, hi := math.Log(cfg.Epsilon/8), math.Log(cfg.Epsilon*64)
	if _, _, ok := largestFeasibleTol(f, x0, lo, hi, poissonTol); !ok || best == nil {
		return nil, fmt.Errorf("pool plan: no training target in [%v, %v] gives an amplified ε ≤ %v", cfg.Epsilon/8, cfg.Epsilon*64, cfg.Epsilon)
	}
	best.Selection = cfg.Selection.String()
	return best, nil
}
