package stream

import (
	"math"
	"testing"
)

// TestConfigBudget: a configuration states its own per-record budget, the
// one its private ledger gets: ε = RecordEpsilon at δ = LedgerDelta,
// which is the Gaussian and tree updates' δ and 0 for the gamma update.
func TestConfigBudget(t *testing.T) {
	tree := DetectorConfig(4)
	tree.Update, tree.LabelBudget = Tree, 100
	gamma := DefaultConfig(4)
	gamma.Delta = 1e-6 // ignored: the gamma update is pure ε
	exp := DefaultConfig(4)
	exp.Selector = Exponential // paper scale: its true ε_s exceeds EpsSelect
	for name, c := range map[string]struct {
		cfg       Config
		wantDelta float64
	}{
		"gaussian": {DetectorConfig(4), 1e-5},
		"tree":     {tree, 1e-5},
		"gamma":    {gamma, 0},
		"exp":      {exp, 0},
	} {
		b, err := c.cfg.Budget()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		eps, _ := c.cfg.RecordEpsilon()
		if b.Epsilon != eps || b.Delta != c.wantDelta || c.cfg.LedgerDelta() != c.wantDelta {
			t.Errorf("%s: budget %+v, want ε %v at δ %v", name, b, eps, c.wantDelta)
		}
		l := mustNew(t, c.cfg, 1)
		if got := l.Ledger().Budget(); got != b {
			t.Errorf("%s: the learner's own ledger has budget %+v, Budget says %+v", name, got, b)
		}
	}
	if b, err := exp.Budget(); err != nil || !(b.Epsilon > exp.EpsSelect+exp.EpsGrad) {
		t.Errorf("exponential selector at the paper's scale: budget %+v (%v), want its true ε_s above the target", b, err)
	}
	np := DefaultConfig(4)
	np.NonPrivate = true
	if b, err := np.Budget(); err != nil || !math.IsInf(b.Epsilon, 1) {
		t.Errorf("non-private baseline: budget %+v (%v), want ε = +Inf", b, err)
	}
	bad := DefaultConfig(4)
	bad.EpsGrad = 0
	if _, err := bad.Budget(); err == nil {
		t.Error("an invalid configuration has a budget")
	}
}
