package online

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/mech"
	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/vec"
)

func newLedger(t *testing.T, eps float64) *ledger.Ledger {
	t.Helper()
	l, err := ledger.New(account.Budget{Epsilon: eps, Delta: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// classify returns n ±1-labelled records in the unit ball.
func classify(d, n int, seed uint64) []Example {
	out := synthetic(d, n, seed)
	for i := range out {
		out[i].Y = 1
		if out[i].V[0]+0.3*out[i].V[1] < 0 {
			out[i].Y = -1
		}
	}
	return out
}

func logisticCost(d int) Cost {
	return Cost{Loss: Logistic, Dim: d, FeatureBound: 1, Alpha: 0.1, Radius: 5}
}

// The step objective's minimiser is certified, and agrees with a long run of
// projected gradient descent on the same objective.
func TestProxMatchesGradientDescent(t *testing.T) {
	for _, loss := range []LossKind{Logistic, Hinge, Squared} {
		t.Run(string(loss), func(t *testing.T) {
			cost := Cost{Loss: loss, Dim: 3, FeatureBound: 1, LabelBound: 1, Alpha: 0.5, Radius: 0.7}
			x0 := []float64{0.3, -0.5, 0.2}
			ex := Example{V: []float64{0.6, 0.2, -0.7}, Y: 1}
			if loss == Squared {
				ex.Y = -0.9
			}
			eta := 2.0
			got := make([]float64, 3)
			if e := prox(cost, x0, ex, eta, got); !(e < 1e-9) {
				t.Fatalf("certificate %v", e)
			}
			x := append([]float64(nil), x0...)
			g := make([]float64, 3)
			for k := 1; k <= 200000; k++ {
				cost.Gradient(g, x, ex)
				step := 0.05 / math.Sqrt(float64(k))
				for j := range x {
					x[j] -= step * (x[j] - x0[j] + eta*g[j])
				}
				vec.ProjectBall(x, cost.Radius)
			}
			for j := range x {
				if math.Abs(x[j]-got[j]) > 2e-3 {
					t.Fatalf("prox %v, gradient descent %v", got, x)
				}
			}
		})
	}
}

// POCP never feeds its noise back: the wrapped algorithm's iterates are
// those of the plain algorithm, and at a huge ε the releases are them up
// to the noise β/t.
func TestPOCPNonPrivateLimit(t *testing.T) {
	const d, steps = 4, 300
	data := classify(d, steps, 2)
	for _, name := range []string{"igd", "giga"} {
		t.Run(name, func(t *testing.T) {
			mk := func() Algorithm {
				if name == "igd" {
					a, _ := NewIGD(logisticCost(d), steps)
					return a
				}
				a, _ := NewGIGA(Cost{Loss: Logistic, Dim: d, FeatureBound: 1, Alpha: 1, Radius: 5})
				return a
			}
			alg, plain := mk(), mk()
			p, err := NewPOCP(alg, steps, Calibration{Exact: true, Epsilon: 1e4, Delta: 1e-5}, newLedger(t, 1e9), []string{"g"})
			if err != nil {
				t.Fatal(err)
			}
			r := rng.Seeded(1)
			for i, ex := range data[:steps-1] {
				if err := p.Observe(r, ex); err != nil {
					t.Fatal(err)
				}
				want, err := plain.Update(i+1, ex)
				if err != nil {
					t.Fatal(err)
				}
				tol := 10 * p.Beta() / float64(i+1) * math.Sqrt(d)
				for j := range want {
					if math.Abs(p.Point()[j]-want[j]) > tol+1e-9 {
						t.Fatalf("t=%d: released %v, plain %v (noise scale %v)", i+1, p.Point(), want, tol)
					}
				}
			}
		})
	}
}

// PFTL at a huge ε is QFTL up to the tree noise; QFTL is ridge regression.
func TestPFTLNonPrivateLimit(t *testing.T) {
	const d, steps = 3, 200
	cost := Cost{Loss: Squared, Dim: d, FeatureBound: 1, LabelBound: 1, Alpha: 1, Radius: math.Inf(1)}
	data := synthetic(d, steps, 3)
	plain, err := NewQFTL(cost)
	if err != nil {
		t.Fatal(err)
	}
	for _, batch := range []int{1, 7} {
		cal, err := CalibrateFTL(cost, steps, batch, Calibration{Exact: true, Epsilon: 1e5, Delta: 1e-5})
		if err != nil {
			t.Fatal(err)
		}
		p, err := NewPFTL(cost, cal, newLedger(t, 1e9), []string{"g"})
		if err != nil {
			t.Fatal(err)
		}
		plain, _ = NewQFTL(cost)
		r := rng.Seeded(2)
		for i, ex := range data[:steps-1] {
			if err := p.Observe(r, ex); err != nil {
				t.Fatal(err)
			}
			if err := plain.Observe(ex); err != nil {
				t.Fatal(err)
			}
			if (i+1)%batch != 0 {
				continue
			}
			vt, ut := p.Trees()
			tol := 30 * math.Max(vt.Sigma(), ut.Sigma()) * d / float64(i+1)
			for j := range plain.Point() {
				if math.Abs(p.Point()[j]-plain.Point()[j]) > tol {
					t.Fatalf("batch %d t=%d: private %v, plain %v", batch, i+1, p.Point(), plain.Point())
				}
			}
		}
	}
	// QFTL's last iterate minimises Σ f_t: its gradient vanishes.
	g := make([]float64, d)
	sum := make([]float64, d)
	for _, ex := range data[:steps-1] {
		cost.Gradient(g, plain.Point(), ex)
		for j := range g {
			sum[j] += g[j]
		}
	}
	if n := vec.Norm(sum); n > 1e-9 {
		t.Fatalf("QFTL iterate is not the leader: ‖Σ∇f‖ = %v", n)
	}
}

// The exact calibration spends the target on the ledger: the charged ε is
// at most the target (to 1e-9) and at least 99.9 % of it, for POCP, PFTL
// and POL alike, and the noise is the one its μ implies.
func TestExactCalibrationCharges(t *testing.T) {
	data := classify(2, 200, 3)
	quad := Cost{Loss: Squared, Dim: 2, FeatureBound: 1, LabelBound: 1, Alpha: 1, Radius: math.Inf(1)}
	runs := map[string]func(Calibration) (Privacy, error){
		"pocp": func(cal Calibration) (Privacy, error) {
			a, _ := NewIGD(logisticCost(2), 1000)
			p, err := NewPOCP(a, 1000, cal, newLedger(t, 1e3), []string{"g"})
			if err != nil {
				return Privacy{}, err
			}
			if want := a.Stability() * math.Sqrt(999) / p.Privacy().Mu; math.Abs(p.Beta()/want-1) > 1e-12 {
				t.Errorf("β %v, want λ√(T−1)/μ = %v", p.Beta(), want)
			}
			return p.Privacy(), nil
		},
		"ftl": func(cal Calibration) (Privacy, error) {
			c, err := CalibrateFTL(quad, 1000, 1, cal)
			return c.Privacy, err
		},
		"pol": func(cal Calibration) (Privacy, error) {
			res, err := POL(rng.Seeded(1), logisticCost(2), data, cal, newLedger(t, 1e3), []string{"g"})
			return res.Privacy, err
		},
	}
	for name, run := range runs {
		for _, target := range []struct{ eps, delta float64 }{{0.01, 0.01}, {0.5, 1e-5}, {1, 0.01}, {10, 0.01}} {
			t.Run(fmt.Sprintf("%s/eps=%g/delta=%g", name, target.eps, target.delta), func(t *testing.T) {
				pr, err := run(Calibration{Exact: true, Epsilon: target.eps, Delta: target.delta})
				if err != nil {
					t.Fatal(err)
				}
				if !(pr.ChargedEpsilon <= target.eps*(1+1e-9) && pr.ChargedEpsilon >= 0.999*target.eps) {
					t.Fatalf("charged ε %v, want the target %v", pr.ChargedEpsilon, target.eps)
				}
				if !(pr.ExactEpsilon < pr.ChargedEpsilon) {
					t.Fatalf("exact ε %v not below charged %v", pr.ExactEpsilon, pr.ChargedEpsilon)
				}
				exact, _ := mech.GaussianEpsilon(pr.Mu, pr.Delta)
				if pr.ExactEpsilon != exact || pr.NominalEpsilon != target.eps {
					t.Fatalf("exact ε %v (want %v), nominal %v", pr.ExactEpsilon, exact, pr.NominalEpsilon)
				}
				// The analytic Gaussian accountant inverts it: σ(ε_exact, δ) = 1/μ.
				if sigma, err := mech.AnalyticGaussianSigma(pr.ExactEpsilon, pr.Delta, 1); err != nil || math.Abs(sigma*pr.Mu-1) > 1e-6 {
					t.Fatalf("analytic σ %v at the exact ε, want 1/μ = %v (%v)", sigma, 1/pr.Mu, err)
				}
			})
		}
	}
}

// The paper's calibrations give the spec's exact-ε values.
func TestExactEpsilon(t *testing.T) {
	// Spec §10 N7 (λ = 1, δ = 0.01, ε_true at δ' = 0.02).
	for _, c := range []struct {
		steps     int
		eps, want float64
	}{{100000, 1, 0.061}, {100000, 10, 2.26}, {522910, 20, 5.67}} {
		beta, _ := PaperBeta(1, c.steps, c.eps, 0.01)
		got, _ := mech.GaussianEpsilon(math.Sqrt(float64(c.steps-1))/beta, 0.02)
		if math.Abs(got-c.want) > 0.01*c.want+0.002 {
			t.Errorf("T=%d ε=%v: ε_true %v, spec %v", c.steps, c.eps, got, c.want)
		}
	}
	// Spec §10 N11(b): PFTL with the paper's σ, R = 1, δ = 0.01.
	cost := Cost{Loss: Squared, Dim: 2, FeatureBound: 1, LabelBound: 1, Alpha: 1, Radius: math.Inf(1)}
	for _, c := range []struct{ eps, want float64 }{{1, 0.24}, {10, 5.47}} {
		cal, err := CalibrateFTL(cost, 100001, 1, Calibration{Epsilon: c.eps, Delta: 0.01})
		if err != nil {
			t.Fatal(err)
		}
		if got := cal.Privacy.ExactEpsilon; math.Abs(got-c.want) > 0.02*c.want {
			t.Errorf("PFTL paper σ at ε=%v: ε_true %v, spec %v", c.eps, got, c.want)
		}
	}
}

func TestBadInputsRejected(t *testing.T) {
	const d = 2
	good := Example{V: []float64{0.5, 0.5}, Y: 1}
	cases := []struct {
		name string
		ex   Example
		want string
	}{
		{"norm", Example{V: []float64{1, 1}, Y: 1}, "record 2: ‖v‖ = 1.414"},
		{"nan", Example{V: []float64{math.NaN(), 0}, Y: 1}, "record 2: feature 0 is NaN"},
		{"inf", Example{V: []float64{0, math.Inf(-1)}, Y: 1}, "record 2: feature 1 is -Inf"},
		{"overflow", Example{V: []float64{1e200, 1e200}, Y: 1}, "record 2: ‖v‖ = +Inf"},
		{"label", Example{V: []float64{0, 0}, Y: 0.5}, "record 2: label 0.5 is not ±1"},
		{"dim", Example{V: []float64{0}, Y: 1}, "record 2: dimension 1, want 2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, _ := NewIGD(logisticCost(d), 10)
			p, err := NewPOCP(a, 10, Calibration{Exact: true, Epsilon: 1, Delta: 1e-5}, newLedger(t, 10), []string{"g"})
			if err != nil {
				t.Fatal(err)
			}
			r := rng.Seeded(1)
			if err := p.Observe(r, good); err != nil {
				t.Fatal(err)
			}
			before := append([]float64(nil), p.Point()...)
			err = p.Observe(r, c.ex)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
			if vec.Norm(before) != vec.Norm(p.Point()) {
				t.Fatal("a rejected record changed the release")
			}
			if err := p.Observe(r, good); err != nil {
				t.Fatalf("the run does not go on after a rejected record: %v", err)
			}
		})
	}
	t.Run("T=0", func(t *testing.T) {
		a, _ := NewIGD(logisticCost(d), 10)
		if _, err := NewPOCP(a, 0, Calibration{Exact: true, Epsilon: 1, Delta: 1e-5}, newLedger(t, 10), []string{"g"}); err == nil {
			t.Fatal("T = 0 accepted")
		}
		if _, err := NewIGD(logisticCost(d), 0); err == nil {
			t.Fatal("IGD with T = 0 accepted")
		}
		cost := Cost{Loss: Squared, Dim: d, FeatureBound: 1, LabelBound: 1, Alpha: 1, Radius: 1}
		if _, err := CalibrateFTL(cost, 0, 1, Calibration{Exact: true, Epsilon: 1, Delta: 1e-5}); err == nil {
			t.Fatal("FTL with T = 0 accepted")
		}
	})
	t.Run("budget", func(t *testing.T) {
		a, _ := NewIGD(logisticCost(d), 10)
		l, _ := ledger.New(account.Budget{Epsilon: 0.5, Delta: 1e-5})
		_, err := NewPOCP(a, 10, Calibration{Exact: true, Epsilon: 1, Delta: 1e-5}, l, []string{"g"})
		if !errors.Is(err, account.ErrBudgetExceeded) {
			t.Fatalf("error %v, want the budget exceeded", err)
		}
	})
	t.Run("hinge-giga", func(t *testing.T) {
		if _, err := NewGIGA(Cost{Loss: Hinge, Dim: d, FeatureBound: 1, Alpha: 1, Radius: 1}); err == nil {
			t.Fatal("GIGA on the hinge loss accepted")
		}
	})
}

// GIGA's burn-in releases are data-independent and its sensitivity is the
// corrected 4G/α.
func TestGIGABurnIn(t *testing.T) {
	cost := Cost{Loss: Logistic, Dim: 2, FeatureBound: 1, Alpha: 0.5, Radius: 2}
	a, err := NewGIGA(cost)
	if err != nil {
		t.Fatal(err)
	}
	// L_G = 1/4 + 1/2, t_q = ⌈2·0.75²/0.25⌉ + 1 = 6.
	if a.Warmup() != 5 {
		t.Fatalf("burn-in %d, want 5", a.Warmup())
	}
	if got, want := a.Stability(), 4*(1+0.5*2)/0.5; got != want || a.PaperStability() != want/2 {
		t.Fatalf("λ %v, want 4G/α = %v", got, want)
	}
	p, err := NewPOCP(a, 50, Calibration{Exact: true, Epsilon: 1, Delta: 1e-5}, newLedger(t, 10), []string{"g"})
	if err != nil {
		t.Fatal(err)
	}
	r := rng.Seeded(4)
	for i, ex := range classify(2, 49, 5) {
		if err := p.Observe(r, ex); err != nil {
			t.Fatal(err)
		}
		if i+1 <= 5 && vec.Norm(p.Point()) != 0 {
			t.Fatalf("burn-in round %d released %v", i+1, p.Point())
		}
	}
}

// POL's noise carries the 1/α that eq. (37) drops: at α < 1 the printed σ
// gives a larger ε than the target.
func TestPOLCorrectedNoise(t *testing.T) {
	cost := Cost{Loss: Logistic, Dim: 3, FeatureBound: 1, Alpha: 0.05, Radius: 3}
	data := classify(3, 2000, 6)
	res, err := POL(rng.Seeded(7), cost, data, Calibration{Epsilon: 1, Delta: 1e-5}, newLedger(t, 100), []string{"g"})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(res.Sigma*cost.Alpha/res.PrintedSigma-1) > 1e-12 {
		t.Fatalf("σ %v, want the printed %v divided by α", res.Sigma, res.PrintedSigma)
	}
	if !(res.PrintedEpsilon > 1 && res.Privacy.ExactEpsilon < 1) {
		t.Fatalf("printed σ gives ε %v, corrected σ %v: want above and below the target 1", res.PrintedEpsilon, res.Privacy.ExactEpsilon)
	}
	if vec.Norm(res.Model) > cost.Radius {
		t.Fatal("model outside C")
	}
}

// Run's offline optimum is the ridge objective at the leader, and the plain
// leader's regret is never negative.
func TestRunRegret(t *testing.T) {
	const d, steps = 3, 400
	cost := Cost{Loss: Squared, Dim: d, FeatureBound: 1, LabelBound: 1, Alpha: 1, Radius: math.Inf(1)}
	data := synthetic(d, steps, 8)
	q, _ := NewQFTL(cost)
	cps, err := Run(nil, PlainFTL{q}, cost, data, Checkpoints(steps, 5), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(cps) == 0 || cps[len(cps)-1].T != steps {
		t.Fatalf("checkpoints %v", cps)
	}
	for _, c := range cps {
		leader, _ := NewQFTL(cost)
		var direct float64
		for _, ex := range data[:c.T] {
			_ = leader.Observe(ex)
		}
		for _, ex := range data[:c.T] {
			direct += cost.Value(leader.Point(), ex)
		}
		if math.Abs(c.Best-direct) > 1e-9*(1+direct) {
			t.Fatalf("t=%d: best %v, direct %v", c.T, c.Best, direct)
		}
		if c.Loss < c.Best-1e-9 {
			t.Fatalf("t=%d: FTL paid %v below the optimum %v", c.T, c.Loss, c.Best)
		}
	}
}

// The paper's λ_GIGA = 2G/α is too small (spec N9): two streams that differ
// in the first record after the burn-in move x by 2η·R·B, above 2G/(ατ)
// when r < RB/(R²+α); the corrected 4G/α covers it.
func TestGIGAPaperSensitivityTooSmall(t *testing.T) {
	cost := Cost{Loss: Squared, Dim: 1, FeatureBound: 1, LabelBound: 1, Alpha: 0.5, Radius: 0.5}
	run := func(y float64) float64 {
		a, err := NewGIGA(cost)
		if err != nil {
			t.Fatal(err)
		}
		for s := 1; s <= a.Warmup(); s++ {
			if _, err := a.Update(s, Example{V: []float64{1}, Y: 0}); err != nil {
				t.Fatal(err)
			}
		}
		x, err := a.Update(a.Warmup()+1, Example{V: []float64{1}, Y: y})
		if err != nil {
			t.Fatal(err)
		}
		return x[0]
	}
	a, _ := NewGIGA(cost)
	tau := float64(a.Warmup() + 1)
	moved := math.Abs(run(1) - run(-1))
	if paper := a.PaperStability() / tau; !(moved > paper) {
		t.Fatalf("moved %v, paper's bound %v: expected the paper's bound to fail here", moved, paper)
	}
	if ours := a.Stability() / tau; moved > ours {
		t.Fatalf("moved %v above the corrected bound %v", moved, ours)
	}
}

// A record exactly at the feature bound, as vec.ProjectBall leaves it, is
// accepted (Cost.Check's fast path defers to vec.Norm near the bound).
func TestCheckAtBound(t *testing.T) {
	cost := Cost{Loss: Squared, Dim: 90, FeatureBound: 1, LabelBound: 1, Alpha: 1, Radius: 1}
	r := rng.Seeded(2)
	for i := range 200 {
		v := make([]float64, cost.Dim)
		for j := range v {
			v[j] = r.NormFloat64()
		}
		vec.ProjectBall(v, cost.FeatureBound)
		if err := cost.Check(i+1, Example{V: v, Y: 0.5}); err != nil {
			t.Fatal(err)
		}
	}
}
