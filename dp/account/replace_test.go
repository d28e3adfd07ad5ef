package account

import (
	"fmt"
	"math"
	"sync"
	"testing"
)

// replaceDensities returns P(x) and Q(x) of the replace-one pair in plain
// float64, straight from the definition (no log space, no folding).
func replaceDensities(q, sigma, x float64) (p, qq float64) {
	s2 := sigma * sigma
	norm := 1 / (sigma * math.Sqrt(2*math.Pi))
	zero := math.Exp(-x * x / (2 * s2))
	p = norm * ((1-q)*zero + q*math.Exp(-(x-1)*(x-1)/(2*s2)))
	qq = norm * ((1-q)*zero + q*math.Exp(-(x+1)*(x+1)/(2*s2)))
	return p, qq
}

// bruteReplaceRDP is D_α(P‖Q) by composite 20-point Gauss–Legendre of
// P^α Q^{1−α} over [−1−36σ, 1+36σ] (beyond it the densities underflow),
// independent of the folded quadrature under test.
func bruteReplaceRDP(q, sigma, alpha float64) float64 {
	f := func(x float64) float64 {
		p, qq := replaceDensities(q, sigma, x)
		if p == 0 || qq == 0 {
			return 0
		}
		return math.Exp(alpha*math.Log(p) + (1-alpha)*math.Log(qq))
	}
	return math.Log(integrate(f, -1-36*sigma, 1+36*sigma, sigma/8)) / (alpha - 1)
}

func TestReplaceRDPAgainstQuadrature(t *testing.T) {
	for _, c := range []struct{ q, sigma float64 }{
		{0.01, 1}, {0.1, 1}, {0.4, 2}, {0.5, 0.8}, {0.9, 1.5}, {0.05, 3}, {0.999, 2},
	} {
		t.Run(fmt.Sprintf("q=%v/σ=%v", c.q, c.sigma), func(t *testing.T) {
			// Orders the plain-float integral can hold (the tilted mass sits
			// near α..2α−1, inside its range).
			orders := []float64{1.1, 1.5, 2, 3.3, 5, 8, 12}
			if c.q > 0.5 {
				orders = append(orders, 20) // needs a refined step at q = 0.999
			}
			got, err := ScheduleRDPReplace([]Phase{{SampleRate: c.q, NoiseMultiplier: c.sigma, Steps: 1}}, orders)
			if err != nil {
				t.Fatal(err)
			}
			for i, a := range orders {
				want := bruteReplaceRDP(c.q, c.sigma, a)
				// The brute force integrates A ≈ 1 + small: its own error is
				// about 1e-16/(A − 1) relative, up to 1e-11 here.
				if e := relErr(got[i], want); e > 1e-8 {
					t.Errorf("α=%v: quadrature %.15g, brute force %.15g (rel err %.2g)", a, got[i], want, e)
				}
			}
		})
	}
}

func TestReplaceRDPEndpoints(t *testing.T) {
	orders := DefaultOrders()
	for _, tc := range []struct {
		name  string
		q     float64
		sigma float64
		want  func(a float64) float64
		tol   float64
	}{
		{"q=0 spends nothing", 0, 1.3, func(float64) float64 { return 0 }, 0},
		{"q=1 is the sensitivity-2 Gaussian", 1, 1.3, func(a float64) float64 { return 2 * a / (1.3 * 1.3) }, 1e-15},
		// Up to α = 10: the shared weight 1 − q = 1e-12 weighs more as the
		// order grows (from α ≈ 23 on N(0) dominates Q where P^α Q^{1−α}
		// has its mass), 1.2e-8 relative at α = 10.
		{"q→1 joins it", 1 - 1e-12, 1.3, func(a float64) float64 {
			if a > 10 {
				return math.NaN()
			}
			return 2 * a / (1.3 * 1.3)
		}, 2e-8},
		{"huge σ is the negligible Gaussian bound", 0.5, 1e60, func(a float64) float64 { return 2 * a / 1e120 }, 1e-15},
		// Small q: D_α ≈ (α/2)·χ²(P‖Q) = 2α·q²·sinh(1/σ²), as
		// ∫φ(x−a)φ(x−b)/φ(x) dx = e^{ab/σ²}; the next term is O(q³).
		// Up to α = 10: from α ≈ 53 on the term q^α e^{α(α−1)/(2σ²)} of
		// the tilted mode near x = α dominates instead.
		{"tiny q is α/2 times the χ² divergence", 1e-8, 1.2, func(a float64) float64 {
			if a > 10 {
				return math.NaN()
			}
			return 2 * a * 1e-16 * math.Sinh(1/1.44)
		}, 1e-6},
		{"q at the edge of underflow", 1e-300, 1.2, func(float64) float64 { return 0 }, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ScheduleRDPReplace([]Phase{{SampleRate: tc.q, NoiseMultiplier: tc.sigma, Steps: 1}}, orders)
			if err != nil {
				t.Fatal(err)
			}
			for i, a := range orders {
				want := tc.want(a)
				if math.IsNaN(want) {
					continue
				}
				if want == 0 && got[i] != 0 || want != 0 && relErr(got[i], want) > tc.tol {
					t.Errorf("α=%v: RDP %v, want %v", a, got[i], want)
				}
			}
		})
	}
}

// TestReplaceRDPBounds: replace-one never costs less than add/remove (the
// remove pair is one of the substitutions, u = e₁, v = 0, which the worst
// case covers) and never more than the sensitivity-2 Gaussian mixed in
// with weight q (joint convexity of e^{(α−1)D_α}):
// (1/(α−1))·log(1 − q + q·e^{(α−1)·2α/σ²}) ≤ 2α/σ²; and it grows with α.
func TestReplaceRDPBounds(t *testing.T) {
	orders := DefaultOrders()
	for _, q := range []float64{1e-4, 0.01, 0.1, 0.5, 0.9} {
		for _, sigma := range []float64{0.6, 1, 2, 5} {
			t.Run(fmt.Sprintf("q=%v/σ=%v", q, sigma), func(t *testing.T) {
				ph := []Phase{{SampleRate: q, NoiseMultiplier: sigma, Steps: 1}}
				rep, err := ScheduleRDPReplace(ph, orders)
				if err != nil {
					t.Fatal(err)
				}
				ar, err := ScheduleRDP(ph, orders)
				if err != nil {
					t.Fatal(err)
				}
				for i, a := range orders {
					g := 2 * a / (sigma * sigma)
					mix := logAdd(math.Log1p(-q), math.Log(q)+(a-1)*g) / (a - 1)
					if !(rep[i] >= ar[i]*(1-1e-12) && rep[i] <= mix*(1+1e-12) && mix <= g*(1+1e-15)) {
						t.Errorf("α=%v: add/remove %v ≤ replace %v ≤ mixture bound %v ≤ Gaussian %v fails", a, ar[i], rep[i], mix, g)
					}
					if i > 0 && rep[i] < rep[i-1] {
						t.Errorf("RDP falls from %v at α=%v to %v at α=%v", rep[i-1], orders[i-1], rep[i], a)
					}
				}
			})
		}
	}
}

// TestReplaceLoss: L is odd and increasing, matches log P/Q computed from
// the densities, and outcome inverts it.
func TestReplaceLoss(t *testing.T) {
	for _, c := range []struct{ q, sigma float64 }{{1e-6, 1}, {0.01, 0.5}, {0.3, 2}, {0.999, 1.2}, {1, 0.8}} {
		t.Run(fmt.Sprintf("q=%v/σ=%v", c.q, c.sigma), func(t *testing.T) {
			r := replacePair{q: c.q, sigma: c.sigma}
			prev := math.Inf(-1)
			for _, x := range []float64{-30, -5, -1, -0.3, -1e-3, -1e-9, 0, 1e-9, 1e-3, 0.3, 1, 5, 30} {
				l := r.loss(x)
				if l != -r.loss(-x) || !(l > prev || l == 0 && x == 0) {
					t.Errorf("L(%v) = %v: not odd and increasing (previous %v)", x, l, prev)
				}
				prev = l
				if p, qq := replaceDensities(c.q, c.sigma, x); math.Abs(x) <= 5 && p > 0 && qq > 0 {
					// Plain log P − log Q has absolute error ~1e-16·|log P|.
					if want := math.Log(p) - math.Log(qq); math.Abs(l-want) > 1e-13*(1+math.Abs(want)) && relErr(l, want) > 1e-6 {
						t.Errorf("L(%v) = %.15g, log P/Q = %.15g", x, l, want)
					}
				}
				if x != 0 {
					if back := r.outcome(l); relErr(back, x) > 1e-9 && math.Abs(back-x) > 1e-12 {
						t.Errorf("outcome(L(%v)) = %v", x, back)
					}
				}
			}
			if r.outcome(math.Inf(1)) != math.Inf(1) || r.outcome(math.Inf(-1)) != math.Inf(-1) || r.outcome(0) != 0 {
				t.Error("outcome at ±∞ or 0")
			}
		})
	}
}

// replaceDeltaClosedForm is one step's δ(ε) = P(X > x*) − e^ε·Q(X > x*),
// L(x*) = ε, with x* found by bisection on log P/Q from the densities
// (the loss is increasing).
func replaceDeltaClosedForm(q, sigma, eps float64) float64 {
	lo, hi := -40*sigma-1, 40*sigma+1
	for range 200 {
		m := (lo + hi) / 2
		p, qq := replaceDensities(q, sigma, m)
		if math.Log(p)-math.Log(qq) > eps {
			hi = m
		} else {
			lo = m
		}
	}
	x := (lo + hi) / 2
	tail := func(mu float64) float64 { return 0.5 * math.Erfc((x-mu)/(sigma*math.Sqrt2)) }
	pt := (1-q)*tail(0) + q*tail(1)
	qt := (1-q)*tail(0) + q*tail(-1)
	return pt - math.Exp(eps)*qt
}

func TestReplacePLDClosedForm(t *testing.T) {
	for _, c := range []struct{ q, sigma float64 }{{0.01, 0.8}, {0.1, 1}, {0.4, 2}, {1, 1.5}} {
		t.Run(fmt.Sprintf("q=%v/σ=%v", c.q, c.sigma), func(t *testing.T) {
			pp := mustPair(t, PLDOptions{}, PLDTerm{Kind: PLDSubsampledGaussianReplace, SampleRate: c.q, NoiseMultiplier: c.sigma, Count: 1})
			if pp.Add != pp.Remove {
				t.Error("the replace-one pair is symmetric: one law should serve both directions")
			}
			for _, eps := range []float64{0, 0.1, 0.5, 1, 2.5} {
				want := replaceDeltaClosedForm(c.q, c.sigma, eps)
				lo, up, err := pp.Delta(eps)
				if err != nil {
					t.Fatal(err)
				}
				if !(lo <= want*(1+1e-9)+1e-15 && want <= up*(1+1e-9)+1e-15) {
					t.Errorf("ε=%v: closed form δ=%v not in [%v, %v]", eps, want, lo, up)
				}
				// ε on the grid: connect-the-dots is exact there.
				if want > 1e-12 && relErr(up, want) > 1e-6 {
					t.Errorf("ε=%v: upper δ %v, closed form %v (rel err %.2g)", eps, up, want, relErr(up, want))
				}
			}
		})
	}
}

// scheduleEpsilon is the ε at delta (Balle2020) of the loss that loss
// gives the phases.
func scheduleEpsilon(t *testing.T, loss func([]Phase) (Loss, error), phases []Phase, delta float64) float64 {
	t.Helper()
	l, err := loss(phases)
	if err != nil {
		t.Fatal(err)
	}
	e, err := l.EpsilonAt(delta, Balle2020)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// replaceEpsilons returns the replace-one ε of phases at delta by the RDP
// route (SubsampledGaussianReplace) and by the PLD accountant at step.
func replaceEpsilons(t *testing.T, phases []Phase, delta, step float64) (float64, PLDResult) {
	t.Helper()
	er := scheduleEpsilon(t, SubsampledGaussianReplace, phases, delta)
	terms, err := PhaseTermsReplace(phases)
	if err != nil {
		t.Fatal(err)
	}
	pld, err := PLDEpsilon(terms, delta, PLDOptions{Step: step})
	if err != nil {
		t.Fatal(err)
	}
	return er, pld
}

// TestReplacePLDBelowRDP: the PLD accountant's certified ε is at most the
// RDP route's, and not implausibly far below it; and both exceed
// add/remove's. Loss.EpsilonAt reads the same PLD.
func TestReplacePLDBelowRDP(t *testing.T) {
	const delta = 1e-5
	for _, phases := range [][]Phase{
		{{SampleRate: 0.05, NoiseMultiplier: 1.2, Steps: 200}},
		{{SampleRate: 0.01, NoiseMultiplier: 0.9, Steps: 500}, {SampleRate: 0.2, NoiseMultiplier: 2, Steps: 20}},
	} {
		t.Run(fmt.Sprint(phases), func(t *testing.T) {
			er, pld := replaceEpsilons(t, phases, delta, 1e-3)
			arTerms, _ := PhaseTerms(phases)
			ar, err := PLDEpsilon(arTerms, delta, PLDOptions{Step: 1e-3})
			if err != nil {
				t.Fatal(err)
			}
			if !(pld.Epsilon <= er && er < 1.5*pld.Epsilon && pld.EpsilonLower > ar.Epsilon) {
				t.Errorf("RDP ε %v, PLD ε %+v, add/remove PLD ε %v", er, pld, ar.Epsilon)
			}
			terms, _ := PhaseTermsReplace(phases)
			l, err := PLDLoss("dp-sgd", terms...)
			if err != nil {
				t.Fatal(err)
			}
			if e, err := l.EpsilonAt(delta, Balle2020); err != nil || e < pld.EpsilonLower || e > er {
				t.Errorf("EpsilonAt %v (%v), PLD %+v, RDP %v", e, err, pld, er)
			}
		})
	}
}

// anchorPhases is the initial group's schedule of
//
//	dpal pool plan --epsilon 8 --epsilon-select 2 --delta 0.000333333 --batch 400 \
//	  --epochs 10 --initial 1000 --queries 500,500,500,500 --json
//
// (steps, σ and the initial group's sample rate per phase), planned for
// ε = 8 under add/remove.
var anchorPhases = []Phase{
	{SampleRate: 0.4000000000000001, NoiseMultiplier: 2.02977910976341, Steps: 25},
	{SampleRate: 0.23116256028962162, NoiseMultiplier: 2.0222339397869935, Steps: 49},
	{SampleRate: 0.16736668702302565, NoiseMultiplier: 2.0218906641016514, Steps: 71},
	{SampleRate: 0.13279228202653454, NoiseMultiplier: 2.0278727309765348, Steps: 90},
	{SampleRate: 0.11123338594583689, NoiseMultiplier: 2.022513620997576, Steps: 107},
}

// TestReplaceAnchorPoolPlan: an independent numerical integration put the
// plan's initial group at about ε = 17 under replace-one against 8.0
// under add/remove. The RDP route gives 17.3347 (order 2.2) and the PLD
// accountant, tighter, 15.93 at its default grid.
func TestReplaceAnchorPoolPlan(t *testing.T) {
	const delta = 0.000333333
	ea := scheduleEpsilon(t, SubsampledGaussian, anchorPhases, delta)
	er, pld := replaceEpsilons(t, anchorPhases, delta, 1e-3)
	t.Logf("add/remove RDP ε = %.6f; replace-one RDP ε = %.6f, PLD ε ∈ [%.4f, %.4f]", ea, er, pld.EpsilonLower, pld.Epsilon)
	if math.Abs(ea-8) > 1e-9 {
		t.Errorf("the plan was calibrated to ε = 8 under add/remove, got %v", ea)
	}
	if math.Abs(er-17.3347) > 1e-3 {
		t.Errorf("replace-one RDP ε = %v, want 17.3347", er)
	}
	if !(pld.EpsilonLower > 15.8 && pld.Epsilon < 16.1 && pld.Epsilon <= er) {
		t.Errorf("replace-one PLD ε %+v, want about 15.93 and below the RDP ε %v", pld, er)
	}
}

func TestSubsampledGaussianReplaceLoss(t *testing.T) {
	one := []Phase{{SampleRate: 0.01, NoiseMultiplier: 1.1, Steps: 100}}
	l, err := SubsampledGaussianReplace(one)
	if err != nil {
		t.Fatal(err)
	}
	if l.Mechanism != "subsampled-gaussian-replace" || l.Params["sample_rate"] != 0.01 || l.Params["steps"] != 100 || len(l.Orders) != len(DefaultOrders()) {
		t.Errorf("loss %+v", l)
	}
	two, err := SubsampledGaussianReplace(append(one, one...))
	if err != nil {
		t.Fatal(err)
	}
	if two.Params["phases"] != 2 {
		t.Errorf("params %v", two.Params)
	}
	for i := range two.RDP {
		if relErr(two.RDP[i], 2*l.RDP[i]) > 1e-14 {
			t.Errorf("α=%v: two equal phases %v, one %v", two.Orders[i], two.RDP[i], l.RDP[i])
		}
	}
	for _, bad := range [][]Phase{nil, {{SampleRate: 1.5, NoiseMultiplier: 1, Steps: 1}}, {{SampleRate: 0.1, NoiseMultiplier: 0, Steps: 1}}, {{SampleRate: 0.1, NoiseMultiplier: 1, Steps: -1}}} {
		if _, err := SubsampledGaussianReplace(bad); err == nil {
			t.Errorf("phases %+v accepted", bad)
		}
	}
	if _, err := ScheduleRDPReplace(one, []float64{0.5}); err == nil {
		t.Error("order 0.5 accepted")
	}
	// Orders whose grid would exceed its bound carry no bound (+Inf),
	// which RDPCurve drops; nothing panics.
	huge, err := ScheduleRDPReplace(one, []float64{2, 1e7, 1e300})
	if err != nil || math.IsInf(huge[0], 0) || !math.IsInf(huge[1], 1) || !math.IsInf(huge[2], 1) {
		t.Errorf("curve at 2, 1e7, 1e300: %v (%v)", huge, err)
	}
}

func TestPhaseTermsReplace(t *testing.T) {
	if _, err := PhaseTermsReplace([]Phase{{SampleRate: -1, NoiseMultiplier: 1, Steps: 1}}); err == nil {
		t.Error("negative rate accepted")
	}
	terms, err := PhaseTermsReplace([]Phase{{SampleRate: 0, NoiseMultiplier: 1, Steps: 3}, {SampleRate: 0.2, NoiseMultiplier: 1, Steps: 0}, {SampleRate: 0.2, NoiseMultiplier: 1, Steps: 4}})
	if err != nil || len(terms) != 1 || terms[0].Kind != PLDSubsampledGaussianReplace || terms[0].Count != 4 {
		t.Errorf("terms %+v (%v)", terms, err)
	}
	for _, bad := range []PLDTerm{
		{Kind: PLDSubsampledGaussianReplace, SampleRate: 0, NoiseMultiplier: 1, Count: 1},
		{Kind: PLDSubsampledGaussianReplace, SampleRate: 0.1, NoiseMultiplier: 0, Count: 1},
		{Kind: PLDSubsampledGaussianReplace, SampleRate: 0.1, NoiseMultiplier: 2e6, Count: 1},
	} {
		if err := bad.Validate(); err == nil {
			t.Errorf("term %+v accepted", bad)
		}
	}
}

// TestReplaceConcurrent: the per-(q, σ) cache serves concurrent callers the
// values a fresh computation gives.
func TestReplaceConcurrent(t *testing.T) {
	phases := []Phase{{SampleRate: 0.07, NoiseMultiplier: 1.37, Steps: 10}, {SampleRate: 0.3, NoiseMultiplier: 2.71, Steps: 5}}
	orders := DefaultOrders()
	want, err := ScheduleRDPReplace(phases, orders)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for w := range 8 {
		wg.Go(func() {
			if w%2 == 0 {
				replaceCache.mu.Lock()
				replaceCache.entries = nil // a cold cache for half of them
				replaceCache.mu.Unlock()
			}
			got, err := ScheduleRDPReplace(phases, orders)
			if err != nil {
				errs <- err.Error()
				return
			}
			for i := range got {
				if got[i] != want[i] {
					errs <- fmt.Sprintf("α=%v: %v, want %v", orders[i], got[i], want[i])
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestCalibrateNoiseScheduleReplace(t *testing.T) {
	for _, c := range []struct {
		eps, delta float64
		phases     []Phase
	}{
		{8, 1e-5, []Phase{{SampleRate: 0.01, Steps: 1000}}},
		{2, 1e-5, []Phase{{SampleRate: 0.01, Steps: 300}, {SampleRate: 0.05, Steps: 50}}},
		{17.3347, 0.000333333, anchorPhases},
	} {
		t.Run(fmt.Sprintf("ε=%v", c.eps), func(t *testing.T) {
			target := Budget{Epsilon: c.eps, Delta: c.delta}
			sigma, res, err := CalibrateNoiseScheduleReplace(target, c.phases, Options{})
			if err != nil {
				t.Fatal(err)
			}
			at := func(s float64) float64 {
				return scheduleEpsilon(t, SubsampledGaussianReplace, withNoise(c.phases, s), c.delta)
			}
			if got := at(sigma); got > c.eps || got != res.Epsilon {
				t.Errorf("σ=%v gives ε=%v (reported %+v), target %v", sigma, got, res, c.eps)
			}
			if below := at(sigma * (1 - 2e-9)); below <= c.eps {
				t.Errorf("σ·(1−2e-9) still meets the target (ε=%v)", below)
			}
			arSigma, _, err := CalibrateNoiseSchedule(target, c.phases, Options{})
			if err != nil || !(sigma > arSigma) {
				t.Errorf("replace-one σ %v should exceed add/remove's %v (%v)", sigma, arSigma, err)
			}
		})
	}
}

func TestCalibrateNoisePLDReplace(t *testing.T) {
	target := Budget{Epsilon: 2, Delta: 1e-5}
	phases := []Phase{{SampleRate: 0.02, Steps: 200}}
	sigma, res, err := CalibrateNoisePLDReplace(target, phases, PLDOptions{Step: 1e-3})
	if err != nil {
		t.Fatal(err)
	}
	rdpSigma, _, err := CalibrateNoiseScheduleReplace(target, phases, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !(res.Epsilon <= 2 && res.Epsilon > 2*(1-1e-3) && sigma < rdpSigma) {
		t.Errorf("σ=%v gives %+v (RDP σ %v)", sigma, res, rdpSigma)
	}
	terms, _ := PhaseTermsReplace(withNoise(phases, sigma*(1-1e-3)))
	if r, err := PLDEpsilon(terms, target.Delta, PLDOptions{Step: 1e-3}); err != nil || r.Epsilon <= 2 {
		t.Errorf("σ below the calibrated one still meets the target: %+v, %v", r, err)
	}
	if _, _, err := CalibrateNoisePLDReplace(target, []Phase{{SampleRate: 0, Steps: 10}}, PLDOptions{}); err == nil {
		t.Error("calibrating noise for a run that samples nothing should fail")
	}
}
