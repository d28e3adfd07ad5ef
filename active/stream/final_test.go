package stream

import (
	"bytes"
	"fmt"
	"math"
	"testing"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/audit"
	"github.com/dpal-dev/dpal/dp/rng"
)

// finalConfig is the detector in dimension 8 keeping share f of ρ for the
// final model, with a label budget.
func finalConfig(f float64) Config {
	c := DetectorConfig(8)
	c.FinalShare, c.LabelBudget, c.Window = f, 300, 20
	return c
}

// TestFinalLossMatchesLedger: with a final model, the updates' and the
// final model's entries compose to exactly ε_s + ε_g for a labelled record
// (RecordEpsilon, Stats and the ledger agree), whatever the share; the
// final model's entry alone is the ε of ρ·FinalShare; a second Final is
// refused, and a save/restore keeps the points and the charge.
func TestFinalLossMatchesLedger(t *testing.T) {
	X, Y := synthStream(600, 8, 0.05, 3)
	for _, f := range []float64{0.1, 0.5, 0.9} {
		t.Run(fmt.Sprintf("share %v", f), func(t *testing.T) {
			cfg := finalConfig(f)
			l := mustNew(t, cfg, 4)
			runOracle(t, l, X, Y)
			w, err := l.Final()
			if err != nil {
				t.Fatal(err)
			}
			if len(w) != cfg.Dim {
				t.Fatalf("final model of dimension %d", len(w))
			}
			want, err := cfg.RecordEpsilon()
			if err != nil {
				t.Fatal(err)
			}
			led := l.Ledger()
			if group, eps := led.MaxEpsilon(); group != GroupBatched || math.Abs(eps-want) > 1e-9*want || eps > want {
				t.Errorf("ledger: %s at ε = %v, want %s at %v", group, eps, GroupBatched, want)
			}
			conv := led.Meta().Conversion
			_, rhoF, err := gaussianRhos(cfg, conv)
			if err != nil {
				t.Fatal(err)
			}
			noise, err := l.finalNoise(len(l.kept))
			if err != nil {
				t.Fatal(err)
			}
			if got := noise.Loss().Rho; math.Abs(got-rhoF) > 1e-12*rhoF {
				t.Errorf("final entry ρ = %v, want ρ·share = %v", got, rhoF)
			}
			if _, err := l.Final(); err == nil {
				t.Error("a second final model was released")
			}
			var buf bytes.Buffer
			if err := l.SaveState(&buf); err != nil {
				t.Fatal(err)
			}
			r, err := Restore(&buf, rng.Seeded(4), nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.Final(); err == nil {
				t.Error("a restored learner released the final model again")
			}
			if _, eps := r.Ledger().MaxEpsilon(); math.Abs(eps-want) > 1e-9*want {
				t.Errorf("restored ledger at ε = %v, want %v", eps, want)
			}
		})
	}
}

// TestFinalConfigValidation: a final model needs the Gaussian update, the
// hinge loss, λ > 0, a label budget and a share in [0, 1).
func TestFinalConfigValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Config)
	}{
		{"share 1", func(c *Config) { c.FinalShare = 1 }},
		{"negative share", func(c *Config) { c.FinalShare = -0.1 }},
		{"gamma update", func(c *Config) { c.Update = Gamma }},
		{"logistic", func(c *Config) { c.Loss = "logistic" }},
		{"no label budget", func(c *Config) { c.LabelBudget = 0 }},
		{"lambda 0", func(c *Config) { c.Lambda = 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := finalConfig(0.5)
			tc.edit(&c)
			if _, err := New(c, rng.Seeded(1), nil); err == nil {
				t.Error("accepted")
			}
		})
	}
	l := mustNew(t, DetectorConfig(8), 1)
	if _, err := l.Final(); err == nil {
		t.Error("final model without a final share")
	}
}

// finalLearner is a 1-d learner for the final model's audit: λ = 1, so
// that on the two points below every hinge is active and w* moves by the
// full 2M/(nλ), and a radius too large to bite.
func finalLearner(t testing.TB) *Learner {
	cfg := DetectorConfig(1)
	cfg.FinalShare, cfg.LabelBudget, cfg.Lambda, cfg.Radius, cfg.Window = 0.5, 10, 1, 1e9, 100
	return mustNew(t, cfg, 23)
}

// oneFinal releases the final model on {(0.5, +1), (x, y)} in dimension 1.
func oneFinal(t testing.TB, l *Learner, x, y float64) float64 {
	l.kept = append(l.kept[:0], point{id: 1, x: []float64{0.5}, y: 1}, point{id: 2, x: []float64{x}, y: y})
	l.finalDone = false
	w, err := l.Final()
	if err != nil {
		t.Fatal(err)
	}
	return w[0]
}

// TestFinalAudit audits the final model on labelled sets that differ in
// one record at the worst case of the sensitivity: (x, y) = (+1, +1)
// versus (−1, +1), where w* is 0.75 versus −0.25. It claims ρ·share-zCDP;
// at δ_a = 0.01 the empirical lower bound must stay below the claim, and a
// mutant with half the noise must exceed it.
func TestFinalAudit(t *testing.T) {
	const deltaA, trials = 0.01, 100_000
	cfgA := audit.Config{Trials: trials, Confidence: 0.95, Delta: deltaA}
	run := func(l *Learner) audit.Result {
		m0 := func(*rng.Rand) float64 { return oneFinal(t, l, 1, 1) }
		m1 := func(*rng.Rand) float64 { return oneFinal(t, l, -1, 1) }
		res, err := audit.Continuous(rng.Seeded(7), m0, m1, cfgA)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	l := finalLearner(t)
	noise, err := l.finalNoise(2)
	if err != nil {
		t.Fatal(err)
	}
	claim, err := noise.Loss().EpsilonAt(deltaA, account.Balle2020)
	if err != nil {
		t.Fatal(err)
	}
	checkAudit(t, "final model", run(l), claim, deltaA)
	// The mutant fits the same model but draws half the noise while its
	// ledger entry claims the honest loss: a halved sensitivity.
	mutant := finalLearner(t)
	mutant.cfg.M = 0.5
	res := run(mutant)
	t.Logf("halved-noise mutant: ε ≥ %.3f", res.Epsilon)
	if res.Epsilon <= claim {
		t.Errorf("halved-noise mutant not caught: lower bound %v <= %v", res.Epsilon, claim)
	}
}
