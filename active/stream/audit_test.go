package stream

import (
	"testing"

	"github.com/dpal-dev/dpal/dp/audit"
	"github.com/dpal-dev/dpal/dp/mech"
	"github.com/dpal-dev/dpal/dp/rng"
)

// oneUpdate runs a single eq. 10 update from w = 0 on the batch
// {(0.5, +1), (x, y)} in dimension 1 and returns the released w′.
func oneUpdate(t testing.TB, l *Learner, x, y float64) float64 {
	l.w[0], l.wNorm, l.updates = 0, 0, 0
	l.free = l.free[:0]
	l.batch = append(l.batch[:0], point{id: 1, x: []float64{0.5}, y: 1}, point{id: 2, x: []float64{x}, y: y})
	if err := l.update(); err != nil {
		t.Fatal(err)
	}
	l.DropReleases()
	return l.w[0]
}

// updateLearner is a 1-d learner whose update is the bare eq. 10 step: no
// regulariser, η = 1, and a projection radius too large to bite.
func updateLearner(t testing.TB, epsGrad float64) *Learner {
	cfg := DefaultConfig(1)
	cfg.EpsGrad, cfg.Lambda, cfg.Eta, cfg.Radius = epsGrad, 0, 1, 1e9
	return mustNew(t, cfg, 17)
}

// TestUpdateAudit audits one mini-batch update (Lemma 3) on neighbouring
// batches that differ in one record at the worst case of the sensitivity
// 2M: (x, y) = (+1, +1) versus (−1, +1). The empirical lower bound must
// not exceed ε_g, and a mutant with half the noise must be caught.
func TestUpdateAudit(t *testing.T) {
	const epsG, trials = 1.0, 200_000
	cfgA := audit.Config{Trials: trials, Confidence: 0.95}

	run := func(l *Learner) audit.Result {
		m0 := func(*rng.Rand) float64 { return oneUpdate(t, l, 1, 1) }
		m1 := func(*rng.Rand) float64 { return oneUpdate(t, l, -1, 1) }
		res, err := audit.Continuous(rng.Seeded(5), m0, m1, cfgA)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := run(updateLearner(t, epsG))
	t.Logf("update audit: ε ≥ %.3f (event %s, p0 %.4f, p1 %.4f)", res.Epsilon, res.Event, res.P0, res.P1)
	if res.Epsilon > epsG {
		t.Errorf("audit lower bound %v exceeds the claimed ε_g = %v", res.Epsilon, epsG)
	}
	if res.Epsilon < 0.5*epsG {
		t.Errorf("audit lower bound %v is too weak to catch anything", res.Epsilon)
	}

	mutant := updateLearner(t, epsG)
	half, err := mech.NewGammaVector(2*epsG, 2*mutant.cfg.M, 1) // half the noise scale
	if err != nil {
		t.Fatal(err)
	}
	mutant.noise = half
	res = run(mutant)
	t.Logf("halved-noise mutant: ε ≥ %.3f", res.Epsilon)
	if res.Epsilon <= epsG {
		t.Errorf("halved-noise mutant not caught: lower bound %v <= %v", res.Epsilon, epsG)
	}
}

// TestSelectionAudit audits one selection decision on neighbouring records
// at the two ends of the distance range. Bernoulli selection stays within
// ε_s; the exponential selector at the paper's b = 0.2 leaks more than its
// nominal ε_s = 1 through the non-selection event, as computed by
// ExpSelectorEpsilon (≈ 1.171), and the audit sees it.
func TestSelectionAudit(t *testing.T) {
	const trials = 200_000
	cfgA := audit.Config{Trials: trials, Confidence: 0.95}
	run := func(l *Learner) audit.Result {
		setW(l, []float64{1, 0})
		near, far := []float64{0, 1}, []float64{1, 0} // d = 0 and d = M
		observe := func(x []float64) func(*rng.Rand) bool {
			return func(*rng.Rand) bool {
				dec, err := l.Observe(x)
				if err != nil {
					t.Fatal(err)
				}
				if dec.Request {
					if err := l.Decline(dec.ID); err != nil {
						t.Fatal(err)
					}
				}
				return dec.Request
			}
		}
		res, err := audit.Bool(rng.Seeded(6), observe(near), observe(far), cfgA)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	cfg := DefaultConfig(2)
	cfg.Window = MaxWindow
	res := run(mustNew(t, cfg, 8))
	t.Logf("bernoulli selection audit: ε ≥ %.3f (%s)", res.Epsilon, res.Event)
	if res.Epsilon > 1 || res.Epsilon < 0.8 {
		t.Errorf("Bernoulli selection audit %v, want in [0.8, 1]", res.Epsilon)
	}
	cfg.Selector = Exponential
	l := mustNew(t, cfg, 9)
	res = run(l)
	t.Logf("exponential selection audit (paper scale): ε ≥ %.3f (%s), true ε_s %.4f", res.Epsilon, res.Event, l.Stats().EpsSelect)
	if res.Epsilon <= 1 || res.Epsilon > l.Stats().EpsSelect {
		t.Errorf("exponential selection audit %v, want in (1, %v]", res.Epsilon, l.Stats().EpsSelect)
	}
}
