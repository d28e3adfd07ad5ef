package online

import (
	"testing"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/audit"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/mech"
	"github.com/dpal-dev/dpal/dp/rng"
)

// probe is an Algorithm that meets condition (1) with equality: x_{t+1} =
// (λ/2)·y_1/t, so replacing y_1 = +1 by −1 moves every iterate by exactly
// λ/t, the worst case POCP's noise is calibrated for.
type probe struct {
	lambda, y1 float64
	x          []float64
}

func (p *probe) Update(t int, ex Example) ([]float64, error) {
	if t == 1 {
		p.y1 = ex.Y
	}
	p.x[0] = p.lambda / 2 * p.y1 / float64(t)
	return p.x, nil
}
func (p *probe) Stability() float64 { return p.lambda }
func (p *probe) Warmup() int        { return 0 }
func (p *probe) Name() string       { return "probe" }
func (p *probe) Cost() Cost {
	return Cost{Loss: Logistic, Dim: 1, FeatureBound: 1, Alpha: 1, Radius: 1e9}
}

// The audit runs POCP over T = 5 rounds on neighbouring streams that differ
// in the first label, with the likelihood-ratio statistic Σ_t t·x̂_{t+1}
// (each release's mean moves by λ/t under noise β/t). The charged ε must
// cover the audit's lower bound, and a POCP with half the noise must be
// caught.
func TestAuditPOCP(t *testing.T) {
	const steps, delta = 5, 1e-5
	led, _ := ledger.New(account.Budget{Epsilon: 1e9, Delta: delta})
	mk := func(halve bool) (*POCP, func(*rng.Rand, float64) float64) {
		alg := &probe{lambda: 1, x: make([]float64, 1)}
		p, err := NewPOCP(alg, steps, Calibration{Exact: true, Epsilon: 2, Delta: delta}, led, []string{"audit"})
		if err != nil {
			t.Fatal(err)
		}
		if halve {
			if p.noise, err = mech.NewGaussianVector(p.beta/2, 1, 1); err != nil {
				t.Fatal(err)
			}
		}
		return p, func(r *rng.Rand, y1 float64) float64 {
			p.t = 0
			var stat float64
			for s := 1; s < steps; s++ {
				y := 1.0
				if s == 1 {
					y = y1
				}
				if err := p.Observe(r, Example{V: []float64{0}, Y: y}); err != nil {
					t.Fatal(err)
				}
				stat += float64(s) * p.Point()[0]
			}
			return stat
		}
	}
	p, run := mk(false)
	charged := p.Privacy().ChargedEpsilon
	c := audit.Config{Trials: 300000, Confidence: 0.999, Delta: delta}
	res, err := audit.Continuous(rng.Seeded(21),
		func(r *rng.Rand) float64 { return run(r, 1) }, func(r *rng.Rand) float64 { return run(r, -1) }, c)
	if err != nil {
		t.Fatal(err)
	}
	if res.Epsilon > charged {
		t.Errorf("audit lower bound %.3f exceeds the charged ε=%.3f (event %s)", res.Epsilon, charged, res.Event)
	}
	_, runMut := mk(true)
	mut, err := audit.Continuous(rng.Seeded(22),
		func(r *rng.Rand) float64 { return runMut(r, 1) }, func(r *rng.Rand) float64 { return runMut(r, -1) }, c)
	if err != nil {
		t.Fatal(err)
	}
	if mut.Epsilon <= charged {
		t.Errorf("halved-noise POCP not caught: lower bound %.3f ≤ charged ε=%.3f", mut.Epsilon, charged)
	}
	t.Logf("POCP T=%d: charged ε=%.3f, genuine ε_lb=%.3f, mutant ε_lb=%.3f", steps, charged, res.Epsilon, mut.Epsilon)
}
