package stream

import (
	"math"
	"testing"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/audit"
	"github.com/dpal-dev/dpal/dp/mech"
	"github.com/dpal-dev/dpal/dp/rng"
)

// TestUpdateLossMatchesLedger: for each update mechanism, the per-record ε
// the configuration promises (RecordEpsilon), the learner's Stats and the
// ledger's entry for the batched records all agree, and the update's
// entry alone is exactly ε_g at the ledger's δ.
func TestUpdateLossMatchesLedger(t *testing.T) {
	X, Y := synthStream(600, 8, 0.05, 3)
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"gamma", DefaultConfig(8)},
		{"gaussian", DetectorConfig(8)},
		{"gaussian eps 0.25", func() Config { c := DetectorConfig(8); c.EpsGrad = 0.25; return c }()},
		{"gaussian eps 4 delta 1e-7", func() Config { c := DetectorConfig(8); c.EpsGrad, c.Delta = 4, 1e-7; return c }()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Window = 20
			l := mustNew(t, cfg, 4)
			runOracle(t, l, X, Y)
			checkRecordLoss(t, l, l.noise.Loss())
		})
	}
}

// checkRecordLoss fails unless the ledger's and Stats' per-record ε after
// a run of l are RecordEpsilon, and the update's loss upd is ε_g at the
// ledger's δ.
func checkRecordLoss(t *testing.T, l *Learner, upd account.Loss) {
	t.Helper()
	cfg := l.Config()
	want, err := cfg.RecordEpsilon()
	if err != nil {
		t.Fatal(err)
	}
	led := l.Ledger()
	group, eps := led.MaxEpsilon()
	if group != GroupBatched || math.Abs(eps-want) > 1e-9*want {
		t.Errorf("ledger: %s at ε = %v, want %s at %v", group, eps, GroupBatched, want)
	}
	if s := l.Stats(); s.Updates == 0 || math.Abs(s.MaxEpsilonPerRecord-want) > 1e-9*want {
		t.Errorf("stats: ε = %v after %d updates, want %v", s.MaxEpsilonPerRecord, s.Updates, want)
	}
	got, err := upd.EpsilonAt(led.Budget().Delta, led.Meta().Conversion)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(got-cfg.EpsGrad) > 1e-8*cfg.EpsGrad || got > cfg.EpsGrad*(1+1e-12) {
		t.Errorf("update entry: ε = %v, want ε_g = %v", got, cfg.EpsGrad)
	}
}

// checkAudit fails unless an honest mechanism's empirical lower bound res
// lies in [0.4·claim, claim]: below the claim, and strong enough that a
// mutant could be caught.
func checkAudit(t *testing.T, what string, res audit.Result, claim, deltaA float64) {
	t.Helper()
	t.Logf("%s audit at δ = %v: ε ≥ %.3f (claim %.3f; event %s)", what, deltaA, res.Epsilon, claim, res.Event)
	if res.Epsilon > claim {
		t.Errorf("audit lower bound %v exceeds the claimed ε(δ) = %v", res.Epsilon, claim)
	}
	if res.Epsilon < 0.4*claim {
		t.Errorf("audit lower bound %v is too weak to catch anything (claim %v)", res.Epsilon, claim)
	}
}

// gaussianUpdateLearner is a 1-d Gaussian-update learner whose step is a
// bare scaling of the noisy gradient: λ = 0 and a ball too large to bite.
func gaussianUpdateLearner(t testing.TB, epsGrad float64) *Learner {
	cfg := DetectorConfig(1)
	cfg.EpsGrad, cfg.Lambda, cfg.Eta, cfg.Radius, cfg.Window = epsGrad, 0, 1e-3, 1e9, 2
	return mustNew(t, cfg, 19)
}

// TestGaussianUpdateAudit audits one Gaussian update on batches that
// differ in one record at the worst case of the sensitivity 2C:
// (x, y) = (+1, +1) versus (−1, +1). The update claims ρ-zCDP, hence
// (ε(δ_a), δ_a)-DP at every δ_a; at δ_a = 0.01, where 200,000 trials can
// see the tails, the empirical lower bound must stay below ε(δ_a), and a
// mutant with half the noise must exceed it.
func TestGaussianUpdateAudit(t *testing.T) {
	const epsG, deltaA, trials = 1.0, 0.01, 200_000
	cfgA := audit.Config{Trials: trials, Confidence: 0.95, Delta: deltaA}
	run := func(l *Learner) audit.Result {
		m0 := func(*rng.Rand) float64 { return oneUpdate(t, l, 1, 1) }
		m1 := func(*rng.Rand) float64 { return oneUpdate(t, l, -1, 1) }
		res, err := audit.Continuous(rng.Seeded(7), m0, m1, cfgA)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	l := gaussianUpdateLearner(t, epsG)
	claim, err := l.noise.Loss().EpsilonAt(deltaA, account.Balle2020)
	if err != nil {
		t.Fatal(err)
	}
	checkAudit(t, "gaussian update", run(l), claim, deltaA)
	mutant := gaussianUpdateLearner(t, epsG)
	z := 1 / math.Sqrt(2*mutant.noise.Loss().Rho)
	half, err := mech.NewGaussianVector(z/2, 2*mutant.cfg.Clip, 1)
	if err != nil {
		t.Fatal(err)
	}
	mutant.updateCharge() // the mutant claims the honest loss
	mutant.noise = half
	res := run(mutant)
	t.Logf("halved-σ mutant: ε ≥ %.3f", res.Epsilon)
	if res.Epsilon <= claim {
		t.Errorf("halved-σ mutant not caught: lower bound %v <= %v", res.Epsilon, claim)
	}
}
