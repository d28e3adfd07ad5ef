package pool

import (
	"fmt"
	"math"

	"github.com/dpal-dev/dpal/dp/account"
)

// batchTol is how close to b the expected batch of a phase is solved.
const batchTol = 1e-9

// Build returns the plan for cfg. It reads only cfg, so it costs no
// privacy. Every labelled group's total ε (training and the selections it
// paid for, composed under cfg.Accounting and read as the ledger reads it)
// is at most cfg.Epsilon; under step amplification and noise reduction all
// groups end at cfg.Epsilon (to the searches' 1e-12) and are equal after
// every phase, with expected batch b. Under Poisson selection the groups'
// training is planned the same way at the training target whose amplified
// worst-entry loss (PoissonPrivacy) is cfg.Epsilon, the ε every pool record
// is charged.
func Build(cfg Config) (*Plan, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("pool plan: %w", err)
	}
	if cfg.Selection == Poisson {
		return buildPoisson(cfg)
	}
	p, err := buildTraining(cfg)
	if err != nil {
		return nil, err
	}
	p.Selection = cfg.Selection.String()
	return p, nil
}

// buildTraining plans the training phases so that every group's total
// loss (training and the selections it paid for) ends at cfg.Epsilon.
func buildTraining(cfg Config) (*Plan, error) {
	p, err := newPlanner(cfg)
	if err != nil {
		return nil, fmt.Errorf("pool plan: %w", err)
	}
	naive, err := p.naive()
	if err != nil {
		return nil, fmt.Errorf("pool plan: %w", err)
	}
	if cfg.Mode == Naive {
		return naive, nil
	}
	targets, err := p.targets(naive)
	if err != nil {
		return nil, fmt.Errorf("pool plan: %w", err)
	}
	plan := &Plan{Config: cfg}
	groups := p.groups()
	for i := 1; i <= len(cfg.Queries)+1; i++ {
		active := groups[:i]
		for _, g := range active {
			g.sel = cfg.selections(g.query, i)
		}
		var phases []Phase
		switch cfg.Mode {
		case StepAmplification, NoiseReduction:
			phases, err = p.amplified(i, active, targets[i])
		case Continual:
			phases, err = p.continual(i, active, targets[i-1], targets[i])
		}
		if err != nil {
			return nil, fmt.Errorf("pool plan: round %d: %w", i, err)
		}
		plan.Phases = append(plan.Phases, phases...)
	}
	if err := plan.report(); err != nil {
		return nil, fmt.Errorf("pool plan: %w", err)
	}
	return plan, nil
}

func (p *planner) groups() []*group {
	var out []*group
	for g, name := range GroupNames(len(p.cfg.Queries)) {
		out = append(out, p.newGroup(name, p.cfg.size(g), g))
	}
	return out
}

// naive is Fig. 2: uniform rates b/|D_i|, the naive steps, and the one σ
// with which the group that loses most ends exactly at ε.
func (p *planner) naive() (*Plan, error) {
	cfg := p.cfg
	T := len(cfg.Queries)
	sched := cfg.naiveSchedule(1)
	sigma := 0.0
	for _, g := range p.groups() {
		g.sel = cfg.selections(g.query, T+1)
		s := p.minSigma(g, cfg.Epsilon, sched[g.query:])
		if math.IsInf(s, 1) {
			return nil, fmt.Errorf("group %s cannot train within ε = %v: its %d selections cost %v and even the "+
				"faintest training converts to more than the rest at δ = %v; lower --epsilon-select or raise ε or δ",
				g.name, cfg.Epsilon, g.sel, float64(g.sel)*p.epsSel, cfg.Delta)
		}
		sigma = math.Max(sigma, s)
	}
	if sigma <= sigmaMin {
		return nil, fmt.Errorf("ε = %v would need a noise multiplier below %v, where the planner does not search "+
			"(the RDP accountant gets slow there); lower ε, or raise --epochs", cfg.Epsilon, sigmaMin)
	}
	p.sigmaNaive = sigma
	return naivePlan(cfg, sigma)
}

// naiveSchedule is Fig. 2's schedule at noise multiplier sigma: in round
// i = 1…T+1 every labelled record is sampled at q_i = b/|D_i| for the
// naive steps n_i.
func (c Config) naiveSchedule(sigma float64) []account.Phase {
	sched := make([]account.Phase, len(c.Queries)+1)
	for i := range sched {
		sched[i] = account.Phase{SampleRate: float64(c.Batch) / float64(c.labelled(i+1)), NoiseMultiplier: sigma, Steps: c.NaiveSteps(i + 1)}
	}
	return sched
}

// naivePlan is the plan of the naive schedule at noise multiplier sigma,
// with its groups' losses reported.
func naivePlan(cfg Config, sigma float64) (*Plan, error) {
	names := GroupNames(len(cfg.Queries))
	plan := &Plan{Config: cfg}
	for i, ph := range cfg.naiveSchedule(sigma) {
		out := Phase{Round: i + 1, Steps: ph.Steps, NoiseMultiplier: sigma}
		for g := 0; g <= i; g++ {
			out.Groups = append(out.Groups, GroupRate{Group: names[g], Size: cfg.size(g), SampleRate: ph.SampleRate})
			out.ExpectedBatch += ph.SampleRate * float64(cfg.size(g))
		}
		plan.Phases = append(plan.Phases, out)
	}
	return plan, plan.report()
}

// targets are E_1 … E_{T+1}: the naive plan's total loss of the initial
// group after each round (Fig. 5, line 3), scaled so that E_{T+1} = ε.
// targets[0] is 0.
func (p *planner) targets(naive *Plan) ([]float64, error) {
	T := len(p.cfg.Queries)
	out := make([]float64, T+2)
	for i := 1; i <= T+1; i++ {
		e, _, err := naive.Epsilon(0, i)
		if err != nil {
			return nil, err
		}
		out[i] = e
	}
	scale := p.cfg.Epsilon / out[T+1]
	for i := range out {
		out[i] *= scale
	}
	out[T+1] = p.cfg.Epsilon
	return out, nil
}

// amplified plans round i under step amplification or noise reduction:
// every active group ends at total ε target.
func (p *planner) amplified(i int, active []*group, target float64) ([]Phase, error) {
	n, sigma := p.cfg.NaiveSteps(i), p.sigmaNaive
	if p.cfg.Mode == StepAmplification {
		var err error
		if n, err = p.steps(active, target, sigma, n); err != nil {
			return nil, err
		}
	}
	sigma, err := p.sigmaForBatch(active, target, n, sigma)
	if err != nil {
		return nil, err
	}
	if err := p.checkReached(active, target, sigma, n); err != nil {
		return nil, err
	}
	return []Phase{p.commit(i, active, n, sigma, func(g *group) float64 { return p.rate(g, target, sigma, n) })}, nil
}

// batch is the expected batch when every active group is sampled at its
// largest rate that keeps it within target for n steps at σ.
func (p *planner) batch(active []*group, target, sigma float64, n int) float64 {
	var b float64
	for _, g := range active {
		b += p.rate(g, target, sigma, n) * float64(g.size)
	}
	return b
}

// steps is step amplification's step count: the largest n whose rates
// still give an expected batch ≥ b (to batchTol) at σ. The batch falls
// roughly as 1/√n (the RDP of a step grows as q²), which gives the guesses;
// integer bisection finishes.
func (p *planner) steps(active []*group, target, sigma float64, n int) (int, error) {
	b := float64(p.cfg.Batch) * (1 - batchTol)
	lo, hi := 0, 0 // largest n known to reach b, smallest known not to
	for it := 0; lo == 0 || hi == 0 || hi-lo > 1; it++ {
		if it > 200 || n > 1<<40 {
			return 0, fmt.Errorf("no step count gives expected batch %d", p.cfg.Batch)
		}
		v := p.batch(active, target, sigma, n)
		if v >= b {
			lo = n
		} else {
			hi = n
			if n == 1 {
				return 0, fmt.Errorf("even one step gives expected batch %.6g < %d", v, p.cfg.Batch)
			}
		}
		next := int(math.Round(float64(n) * (v / b) * (v / b)))
		if lo > 0 && hi > 0 && (it > 4 || next <= lo || next >= hi) {
			next = lo + (hi-lo)/2
		}
		if next == n {
			next = n + 1
			if v < b {
				next = n - 1
			}
		}
		n = max(1, next)
		if lo > 0 && hi > 0 && hi-lo == 1 {
			break
		}
	}
	return lo, nil
}

// sigmaForBatch is the noise multiplier with which the rates of n steps
// give expected batch b: the batch grows with σ (more noise, higher
// rates). It is the smallest such σ, so that where the batch stays at b
// over a range of σ (every rate at 1) the groups still end at target.
func (p *planner) sigmaForBatch(active []*group, target float64, n int, sigma float64) (float64, error) {
	b := float64(p.cfg.Batch)
	f := func(y float64) float64 { return p.batch(active, target, math.Exp(y), n)/b - 1 + rootTol }
	below, y, ok := largestFeasible(f, math.Log(sigma), math.Log(sigmaMin), math.Log(sigmaMax))
	if !ok || y == below {
		return 0, fmt.Errorf("no noise multiplier in [%v, %v] gives expected batch %d", sigmaMin, sigmaMax, p.cfg.Batch)
	}
	return math.Exp(y), nil
}

// checkReached errors when a group sampled at every step (rate 1) still
// ends the round below target: the round cannot equalise the groups.
func (p *planner) checkReached(active []*group, target, sigma float64, n int) error {
	for _, g := range active {
		if p.rate(g, target, sigma, n) < 1 {
			continue
		}
		step := account.Phase{SampleRate: 1, NoiseMultiplier: sigma, Steps: n}
		if slack := p.budget(g, g.best, target) - p.rdpAt(g.best, math.Inf(1), step); slack > 1e-9*target {
			return fmt.Errorf("group %s (%d records) stays below ε = %.6g even sampled at every step: "+
				"too few steps for its budget (raise --epochs or lower --batch)", g.name, g.size, target)
		}
	}
	return nil
}

// commit records the round's phase: each active group's rate, appended to
// its history.
func (p *planner) commit(i int, active []*group, n int, sigma float64, rate func(*group) float64) Phase {
	out := Phase{Round: i, Steps: n, NoiseMultiplier: sigma}
	for _, g := range active {
		q := rate(g)
		out.Groups = append(out.Groups, GroupRate{Group: g.name, Size: g.size, SampleRate: q})
		out.ExpectedBatch += q * float64(g.size)
		if q > 0 {
			g.steps = append(g.steps, account.Phase{SampleRate: q, NoiseMultiplier: sigma, Steps: n})
		}
	}
	return out
}

// continual plans round i of App. D.1's continual learning: the newest
// group alone catches up with the others' loss prev, then everyone trains
// at the naive rate for the naive steps towards target.
func (p *planner) continual(i int, active []*group, prev, target float64) ([]Phase, error) {
	var out []Phase
	if i > 1 {
		g := active[len(active)-1]
		q := math.Min(1, float64(p.cfg.Batch)/float64(g.size))
		if n := p.maxSteps(g, prev, q, p.sigmaNaive); n > 0 {
			sigma := p.minSigma(g, prev, []account.Phase{{SampleRate: q, Steps: n}})
			out = append(out, p.commit(i, active, n, sigma, func(h *group) float64 {
				if h == g {
					return q
				}
				return 0
			}))
		}
	}
	q := float64(p.cfg.Batch) / float64(p.cfg.labelled(i))
	n := p.cfg.NaiveSteps(i)
	sigma := 0.0
	for _, g := range active {
		sigma = math.Max(sigma, p.minSigma(g, target, []account.Phase{{SampleRate: q, Steps: n}}))
	}
	if math.IsInf(sigma, 1) {
		return nil, fmt.Errorf("a group cannot reach ε = %v", target)
	}
	return append(out, p.commit(i, active, n, sigma, func(*group) float64 { return q })), nil
}

// maxSteps is the largest number of steps at rate q and noise σ that keep
// the group within target (0 if not even one does). The RDP is linear in
// the steps, so each order gives ⌊budget/RDP of one step⌋.
func (p *planner) maxSteps(g *group, target, q, sigma float64) int {
	at := func(k int) float64 {
		b := p.budget(g, k, target)
		r := p.rdpAt(k, math.Inf(1), account.Phase{SampleRate: q, NoiseMultiplier: sigma, Steps: 1})
		if !(b > 0) || !(r > 0) {
			return 0
		}
		return math.Floor(math.Min(b/r, 1<<40))
	}
	k, n := climb(len(p.orders), g.best, at, func(a, b float64) bool { return a > b })
	g.best = k
	return int(n)
}
