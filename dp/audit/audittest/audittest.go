// Package audittest is the shared harness of dpal's mechanism audits, as
// net/http/httptest is for net/http: every mechanism is audited on a pair
// of neighbouring inputs that is (close to) worst case, its audited lower
// bound must not exceed the ε it claims, the Loss it charges the ledger
// must cover that ε, and a mutant with half the noise scale must be caught
// (lower bound above the claim). Tests of dp/mech, active/pool and
// active/stream run their mechanisms through it.
//
// The bound holds with probability ≥ Confidence, so a correct mechanism
// fails with probability ≤ 1e-3 under a random seed; the mutants' true ε is
// about twice the claim, far above what Trials can miss.
package audittest

import (
	"testing"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/audit"
)

// The audits' sample size and confidence.
const (
	Trials     = 200000
	Confidence = 0.999
)

// Case is the audit of one mechanism.
type Case struct {
	// Name labels the case in failures and logs.
	Name string
	// Epsilon and Delta are the claim the audit checks.
	Epsilon, Delta float64
	// Genuine audits the mechanism, Mutant its half-noise variant.
	Genuine, Mutant func() (audit.Result, error)
	// Mechanism is the audited mechanism: what its Loss charges the
	// ledger, converted by the accountant at Delta, must cover Epsilon.
	Mechanism account.Mechanism
}

// Config is the audit configuration at delta: Trials samples (three times
// as many for δ > 0, whose distinguishing events sit further in the tail)
// at Confidence.
func Config(delta float64) audit.Config {
	trials := Trials
	if delta > 0 {
		trials *= 3
	}
	return audit.Config{Trials: trials, Confidence: Confidence, Delta: delta}
}

// Run checks every case: the charged loss covers the claim, the genuine
// mechanism's lower bound stays at or below it, and the mutant's exceeds it.
func Run(t testing.TB, cases []Case) {
	t.Helper()
	for _, c := range cases {
		charged, err := c.Mechanism.Loss().EpsilonAt(c.Delta, account.Balle2020)
		if err != nil || charged < c.Epsilon*(1-1e-12) {
			t.Errorf("%s: the ledger would charge ε=%v (%v) at δ=%v, below the audited ε=%v", c.Name, charged, err, c.Delta, c.Epsilon)
		}
		res, err := c.Genuine()
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		if res.Epsilon > c.Epsilon {
			t.Errorf("%s: audit lower bound %.3f exceeds claimed ε=%v (event %s, p0=%.4g p1=%.4g)",
				c.Name, res.Epsilon, c.Epsilon, res.Event, res.P0, res.P1)
		}
		mut, err := c.Mutant()
		if err != nil {
			t.Fatalf("%s mutant: %v", c.Name, err)
		}
		if mut.Epsilon <= c.Epsilon {
			t.Errorf("%s: halved-noise mutant not caught: lower bound %.3f ≤ ε=%v (event %s)",
				c.Name, mut.Epsilon, c.Epsilon, mut.Event)
		}
		t.Logf("%s: genuine ε_lb=%.3f, mutant ε_lb=%.3f (claimed %v)", c.Name, res.Epsilon, mut.Epsilon, c.Epsilon)
	}
}
