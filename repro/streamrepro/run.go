package streamrepro

import (
	"fmt"

	"github.com/dpal-dev/dpal/active/stream"
	"github.com/dpal-dev/dpal/data"
	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/session"
)

// method is one learner variant of the paper's figures.
type method struct {
	Selector  stream.SelectorKind
	Policy    stream.PolicyKind
	Window    int
	Shrinking bool
	// NonPrivate is the deterministic Tong–Koller baseline: request iff
	// c ≥ τ, update without noise (the selector field is ignored).
	NonPrivate bool
}

// name is the legend label, in the paper's style ("Bernoulli-FLMB"), with
// the window when it differs from the default and the slab when shrinking.
func (m method) name(defaultWindow int) string {
	sel := map[stream.SelectorKind]string{stream.Bernoulli: "Bernoulli", stream.Exponential: "Exponential"}[m.Selector]
	if m.NonPrivate {
		sel = "NonPrivate"
	}
	s := fmt.Sprintf("%s-%s", sel, map[stream.PolicyKind]string{stream.FLSW: "FLSW", stream.FLMB: "FLMB"}[m.Policy])
	if m.Window != defaultWindow {
		s += fmt.Sprintf("-w%d", m.Window)
	}
	if m.Shrinking {
		s += "-shrinking"
	}
	return s
}

// cvKey names the cross-validation choice m uses: its policy, or the
// non-private baseline's own.
func (m method) cvKey() string {
	if m.NonPrivate {
		return "nonprivate-" + m.Policy.String()
	}
	return m.Policy.String()
}

// nonPrivateMethod is the deterministic Tong–Koller FLMB baseline.
func nonPrivateMethod(w int) method {
	return method{Policy: stream.FLMB, Window: w, NonPrivate: true}
}

// stopRule says how long a run goes on: until it has made at least Updates
// updates, its latest release has used at least Labels labels, and it has
// seen at least Obs events — or the training stream ends.
type stopRule struct {
	Updates, Labels, Obs int
}

func (s stopRule) merge(o stopRule) stopRule {
	return stopRule{max(s.Updates, o.Updates), max(s.Labels, o.Labels), max(s.Obs, o.Obs)}
}

func (s stopRule) done(t *trajectory) bool {
	return t.updates() >= s.Updates && t.Labels[len(t.Labels)-1] >= s.Labels && len(t.LabelsAtObs) >= s.Obs
}

// hyper is a choice of step size and regulariser.
type hyper struct {
	Eta    float64 `json:"eta"`
	Lambda float64 `json:"lambda"`
}

// runLearner streams set's rows in the order perm through a learner built
// from cfg and seeded with seed, answering every label request at once
// from the set's labels (the simulated oracle), until stop is met. eval
// gives the test error of a model; it is called lazily by the trajectory.
func runLearner(cfg stream.Config, seed uint64, set *data.Dataset, perm []int, stop stopRule, eval func([]float64) float64) (*trajectory, error) {
	l, err := stream.New(cfg, rng.Seeded(seed), nil)
	if err != nil {
		return nil, err
	}
	t := &trajectory{W: [][]float64{make([]float64, cfg.Dim)}, Obs: []int{0}, Labels: []int{0}, eval: eval}
	labels, updates := 0, 0
	// record notes a release made since the last call. FLSW releases at
	// the start of the event after its window (before that event's
	// request), FLMB on the L-th label; either way labels counts the
	// requests made up to the release.
	record := func() {
		s := l.Stats()
		if s.Updates == updates {
			return
		}
		updates = s.Updates
		t.W = append(t.W, l.Weights())
		t.Obs = append(t.Obs, s.Observed)
		t.Labels = append(t.Labels, labels)
	}
	hooks := session.Hooks{
		Stop:     func() bool { return stop.done(t) },
		Observed: func(stream.Decision) { record() },
		Done: func(dec stream.Decision) {
			if dec.Request {
				labels++
				record()
			}
			t.LabelsAtObs = append(t.LabelsAtObs, int32(labels))
		},
	}
	if err := session.RunDataset(l, set, perm, hooks); err != nil {
		return nil, err
	}
	record()
	if cfg.FinalShare > 0 {
		if t.Final, err = l.Final(); err != nil {
			return nil, err
		}
	}
	if led := l.Ledger(); led != nil { // nil for the non-private baseline
		_, eps := led.MaxEpsilon()
		t.EpsRecord = &eps
	}
	return t, nil
}

// mix derives a well-spread seed from a base seed and a tag (SplitMix64's
// finaliser), so that each (permutation, method) run has its own learner
// randomness while sharing the permutation's stream order.
func mix(seed, tag uint64) uint64 {
	z := seed + 0x9e3779b97f4a7c15*(tag+1)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
