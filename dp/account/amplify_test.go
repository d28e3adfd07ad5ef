package account

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// intOrders returns the integer orders lo…hi.
func intOrders(lo, hi int) []float64 {
	var out []float64
	for a := lo; a <= hi; a++ {
		out = append(out, float64(a))
	}
	return out
}

// curveLoss is the loss whose RDP curve curve gives at orders.
func curveLoss(t *testing.T, name string, orders []float64, curve func([]float64) ([]float64, error)) Loss {
	t.Helper()
	c, err := curve(orders)
	if err != nil {
		t.Fatal(err)
	}
	l, err := RDPCurve(name, orders, c)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// gaussianLoss is the Gaussian mechanism's RDP curve α/(2σ²) at orders.
func gaussianLoss(t *testing.T, sigma float64, orders []float64) Loss {
	return curveLoss(t, "gaussian", orders, func(o []float64) ([]float64, error) { return GaussianRDP(sigma, o) })
}

// TestAmplifyPoissonRDPGaussian: on the Gaussian curve, whose ε(ℓ) is
// exact, the bound lies between the exact Poisson-subsampled Gaussian
// (Mironov, Talwar & Zhang, ScheduleRDP) and that plus log(3)/(α−1), and
// its excess over the exact curve shrinks in proportion to γ as γ → 0.
func TestAmplifyPoissonRDPGaussian(t *testing.T) {
	for _, sigma := range []float64{0.8, 1, 2, 5} {
		t.Run(fmt.Sprintf("σ=%v", sigma), func(t *testing.T) {
			l := gaussianLoss(t, sigma, intOrders(2, 63))
			prevExcess := map[float64]float64{}
			for _, gamma := range []float64{1, 0.5, 0.1, 0.01, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7} {
				amp, err := AmplifyPoissonRDP(l, gamma)
				if err != nil {
					t.Fatal(err)
				}
				exact, err := ScheduleRDP([]Phase{{SampleRate: gamma, NoiseMultiplier: sigma, Steps: 1}}, amp.Orders)
				if err != nil {
					t.Fatal(err)
				}
				if len(amp.Orders) != 62 {
					t.Fatalf("γ=%v: %d orders, want 62", gamma, len(amp.Orders))
				}
				for i, a := range amp.Orders {
					lo, hi := exact[i]*(1-1e-12), exact[i]+math.Log(3)/(a-1)+1e-12
					if !(amp.RDP[i] >= lo && amp.RDP[i] <= hi && amp.RDP[i] <= l.RDP[i]) {
						t.Errorf("γ=%v α=%v: bound %v outside [exact %v, +log 3/(α−1) = %v] or above the input %v", gamma, a, amp.RDP[i], exact[i], hi, l.RDP[i])
					}
					// γ ≤ 1e-4 is the small-γ regime up to α = 10: (bound −
					// exact)/exact falls tenfold with γ (0.1 % slack).
					if a <= 10 && gamma <= 1e-4 {
						excess := amp.RDP[i]/exact[i] - 1
						if prev, ok := prevExcess[a]; ok && !(excess <= prev/10*1.001) {
							t.Errorf("γ=%v α=%v: relative excess %v, at 10γ %v", gamma, a, excess, prev)
						}
						prevExcess[a] = excess
					}
				}
			}
		})
	}
}

func TestAmplifyPoissonRDPFullRate(t *testing.T) {
	for _, base := range []struct {
		name string
		loss func(t *testing.T) Loss
	}{
		{"gaussian", func(t *testing.T) Loss { return gaussianLoss(t, 1.3, intOrders(2, 40)) }},
		{"laplace", func(t *testing.T) Loss {
			return curveLoss(t, "laplace", intOrders(2, 30), func(o []float64) ([]float64, error) { return LaplaceRDP(0.7, o) })
		}},
	} {
		t.Run(base.name, func(t *testing.T) {
			l := base.loss(t)
			amp, err := AmplifyPoissonRDP(l, 1)
			if err != nil {
				t.Fatal(err)
			}
			for i, a := range amp.Orders {
				if amp.RDP[i] != l.RDP[i] {
					t.Errorf("α=%v: γ = 1 gives %v, the input is %v", a, amp.RDP[i], l.RDP[i])
				}
			}
		})
	}
}

// TestAmplifyPoissonRDPMonotone: the bound grows with γ at every order.
func TestAmplifyPoissonRDPMonotone(t *testing.T) {
	l := curveLoss(t, "randomized-response", intOrders(2, 63), func(o []float64) ([]float64, error) { return PureRDP(1.5, o) })
	var prev []float64
	for _, gamma := range []float64{1e-6, 1e-4, 0.01, 0.05, 0.2, 0.5, 0.9, 0.999, 1} {
		amp, err := AmplifyPoissonRDP(l, gamma)
		if err != nil {
			t.Fatal(err)
		}
		for i := range prev {
			if amp.RDP[i] < prev[i] {
				t.Errorf("γ=%v α=%v: %v below the smaller rate's %v", gamma, amp.Orders[i], amp.RDP[i], prev[i])
			}
		}
		prev = amp.RDP
	}
}

// renyiDiscrete is D_α(p‖q) of two laws on a finite set.
func renyiDiscrete(p, q []float64, alpha float64) float64 {
	var s float64
	for i := range p {
		s += math.Pow(p[i], alpha) * math.Pow(q[i], 1-alpha)
	}
	return math.Log(s) / (alpha - 1)
}

// TestAmplifyPoissonRDPRandomizedResponse checks the bound against the
// exact divergences, both directions, of Poisson-subsampled randomized
// response (PureRDP is its exact curve, the same in both directions).
func TestAmplifyPoissonRDPRandomizedResponse(t *testing.T) {
	for _, eps := range []float64{0.3, 1, 3, 8} {
		l := curveLoss(t, "randomized-response", intOrders(2, 20), func(o []float64) ([]float64, error) { return PureRDP(eps, o) })
		keep := math.Exp(eps) / (1 + math.Exp(eps))
		p, q := []float64{keep, 1 - keep}, []float64{1 - keep, keep}
		for _, gamma := range []float64{0.001, 0.05, 0.3, 0.9} {
			t.Run(fmt.Sprintf("ε=%v/γ=%v", eps, gamma), func(t *testing.T) {
				amp, err := AmplifyPoissonRDP(l, gamma)
				if err != nil {
					t.Fatal(err)
				}
				mix := []float64{(1-gamma)*q[0] + gamma*p[0], (1-gamma)*q[1] + gamma*p[1]}
				for i, a := range amp.Orders {
					exact := math.Max(renyiDiscrete(mix, q, a), renyiDiscrete(q, mix, a))
					if amp.RDP[i] < exact*(1-1e-9) {
						t.Errorf("α=%v: bound %v below the exact %v", a, amp.RDP[i], exact)
					}
				}
			})
		}
	}
}

// TestAmplifyPoissonRDPMissingOrders: DefaultOrders lacks 11, which the
// value at 12 bounds; fractional orders are dropped; ρ joins as ℓ·ρ.
func TestAmplifyPoissonRDPMissingOrders(t *testing.T) {
	l := gaussianLoss(t, 1.1, DefaultOrders())
	amp, err := AmplifyPoissonRDP(l, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	want := append(intOrders(2, 10), intOrders(12, 63)...)
	if fmt.Sprint(amp.Orders) != fmt.Sprint(want) {
		t.Fatalf("orders %v, want %v", amp.Orders, want)
	}
	exact, err := ScheduleRDP([]Phase{{SampleRate: 0.01, NoiseMultiplier: 1.1, Steps: 1}}, amp.Orders)
	if err != nil {
		t.Fatal(err)
	}
	full, err := AmplifyPoissonRDP(gaussianLoss(t, 1.1, intOrders(2, 63)), 0.01)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range amp.Orders {
		j := int(a) - 2 // full has every integer order
		if amp.RDP[i] < exact[i] || amp.RDP[i] < full.RDP[j] || a < 11 && amp.RDP[i] != full.RDP[j] {
			t.Errorf("α=%v: %v, exact %v, with order 11 present %v", a, amp.RDP[i], exact[i], full.RDP[j])
		}
	}
	// A curve plus ρ amplifies like the curve α/(2σ²) + α·ρ.
	withRho := gaussianLoss(t, 2, intOrders(2, 20))
	withRho.Rho = 0.1
	sum := gaussianLoss(t, 1/math.Sqrt(1/4.0+0.2), intOrders(2, 20))
	a1, err1 := AmplifyPoissonRDP(withRho, 0.05)
	a2, err2 := AmplifyPoissonRDP(sum, 0.05)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	for i := range a1.RDP {
		if relErr(a1.RDP[i], a2.RDP[i]) > 1e-12 {
			t.Errorf("α=%v: with ρ %v, folded into the curve %v", a1.Orders[i], a1.RDP[i], a2.RDP[i])
		}
	}
	if a1.Rho != 0 || !strings.Contains(a1.Mechanism, "Poisson sample") {
		t.Errorf("amplified loss %+v", a1)
	}
}

func TestAmplifyPoissonRDPErrors(t *testing.T) {
	curve := gaussianLoss(t, 1, intOrders(2, 5))
	frac, err := RDPCurve("fractional", []float64{1.5, 2.5}, []float64{0.1, 0.2})
	if err != nil {
		t.Fatal(err)
	}
	low, err := RDPCurve("low", []float64{1.2, 1.8}, []float64{0.1, 0.2})
	if err != nil {
		t.Fatal(err)
	}
	pld, err := PLDLoss("pld", gaussTerm(1, 1))
	if err != nil {
		t.Fatal(err)
	}
	mixed := curve
	mixed.Epsilon = 0.5
	for _, tc := range []struct {
		name  string
		loss  Loss
		gamma float64
		want  string
	}{
		{"pure", Pure("laplace", 1), 0.1, "no RDP curve"},
		{"zcdp alone", ZCDP("gaussian", 0.5), 0.1, "no RDP curve"},
		{"approximate part", mixed, 0.1, "approximate-DP part"},
		{"pld", pld, 0.1, "no RDP curve"},
		{"no integer order", frac, 0.1, "no integer order"},
		{"no order ≥ 2", low, 0.1, "no order >= 2"},
		{"rate 0", curve, 0, "0 < gamma <= 1"},
		{"rate above 1", curve, 1.5, "0 < gamma <= 1"},
		{"rate NaN", curve, math.NaN(), "0 < gamma <= 1"},
		{"invalid loss", Loss{Mechanism: "bad", Orders: []float64{2}, RDP: []float64{-1}}, 0.1, "bad"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := AmplifyPoissonRDP(tc.loss, tc.gamma)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	// Orders past 4096 only bound the ones below (no panic at 1e300).
	big, err := RDPCurve("big", []float64{2, 3, 5000, 1e300}, []float64{0.1, 0.2, 0.3, 0.4})
	if err != nil {
		t.Fatal(err)
	}
	if amp, err := AmplifyPoissonRDP(big, 0.1); err != nil || fmt.Sprint(amp.Orders) != "[2 3]" {
		t.Errorf("curve up to 1e300: %+v (%v)", amp, err)
	}
	// A PLD part beside a curve is refused for the PLD.
	both := curve
	both.PLD = pld.PLD
	if _, err := AmplifyPoissonRDP(both, 0.1); err == nil || !strings.Contains(err.Error(), "PLD part") {
		t.Errorf("curve with a PLD part: %v", err)
	}
}

func TestAmplifyRate(t *testing.T) {
	l := Approx("m", 1, 1e-6)
	got, err := AmplifyRate(l, 0.5, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	wantEps := math.Log(1 + 0.2*(math.E-1))
	if math.Abs(got.Epsilon-wantEps) > 1e-15 || math.Abs(got.Delta-2e-7) > 1e-21 {
		t.Fatalf("got (%v, %v), want (%v, 2e-7)", got.Epsilon, got.Delta, wantEps)
	}
	for _, r := range [][2]float64{{0.1, 0.5}, {0, 0}, {1.5, 0.1}, {0.5, -1}} {
		if _, err := AmplifyRate(l, r[0], r[1]); err == nil {
			t.Errorf("rates %v accepted", r)
		}
	}
}
