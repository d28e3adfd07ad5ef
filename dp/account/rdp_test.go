package account

import (
	"fmt"
	"math"
	"testing"
	"time"

	"gonum.org/v1/gonum/integrate/quad"
)

func relErr(got, want float64) float64 { return math.Abs(got-want) / math.Abs(want) }

// TestOpacusReference checks the published Opacus 1.5.4 values for
// q = 256/60000, σ = 1.1, 14062 steps, δ = 1e-5.
func TestOpacusReference(t *testing.T) {
	phases := []Phase{{SampleRate: 256.0 / 60000, NoiseMultiplier: 1.1, Steps: 14062}}
	for _, tc := range []struct {
		conv       Conversion
		eps, order float64
	}{
		{Balle2020, 2.5965558690, 8.1},
		{Classic, 3.0082720825, 8.8},
	} {
		t.Run(tc.conv.String(), func(t *testing.T) {
			res, err := Epsilon(phases, 1e-5, Options{Conversion: tc.conv})
			if err != nil {
				t.Fatal(err)
			}
			if relErr(res.Epsilon, tc.eps) > 1e-9 || res.Order != tc.order || res.EdgeWarning != "" {
				t.Errorf("got %+v, want ε=%.10f at %v (rel err %.3g)", res, tc.eps, tc.order, relErr(res.Epsilon, tc.eps))
			}
			// The pruned search must agree exactly with a full scan.
			curve, err := ScheduleRDP(phases, DefaultOrders())
			if err != nil {
				t.Fatal(err)
			}
			full, err := RDPToEpsilon(DefaultOrders(), curve, 1e-5, tc.conv)
			if err != nil {
				t.Fatal(err)
			}
			if full != res {
				t.Errorf("full scan %+v, pruned search %+v", full, res)
			}
		})
	}
}

// integrate returns ∫f over [a, b] by composite 20-point Gauss–Legendre on
// pieces of width at most h.
func integrate(f func(float64) float64, a, b, h float64) float64 {
	n := int(math.Ceil((b - a) / h))
	w := (b - a) / float64(n)
	var sum float64
	for i := 0; i < n; i++ {
		sum += quad.Fixed(f, a+float64(i)*w, a+float64(i+1)*w, 20, quad.Legendre{}, 0)
	}
	return sum
}

// directRDP is the subsampled-Gaussian RDP by numerical integration:
// (1/(α−1))·log E[(1 − q + q·e^{(2z−1)/(2σ²)})^α], z ~ N(0, σ²), integrating
// E[·] − 1 so that the result keeps its relative precision.
func directRDP(q, sigma, alpha float64) float64 {
	s2 := sigma * sigma
	f := func(z float64) float64 {
		ratio := math.Log1p(q * math.Expm1((2*z-1)/(2*s2)))
		return math.Expm1(alpha*ratio) * math.Exp(-z*z/(2*s2)) / (sigma * math.Sqrt(2*math.Pi))
	}
	// The integrand's mass lies near 0 and, for the (·)^α part, near α.
	lo, hi := -40*sigma, alpha+40*sigma
	return math.Log1p(integrate(f, lo, hi, sigma/4)) / (alpha - 1)
}

func TestSubsampledGaussianAgainstIntegration(t *testing.T) {
	type tc struct{ q, sigma float64 }
	cases := []tc{{0.01, 0.7}, {0.01, 1.1}, {256.0 / 60000, 1.1}, {0.1, 1}, {0.1, 2.5}, {0.5, 0.8}, {0.5, 4}}
	var intOrders, fracOrders []float64
	for a := 2; a <= 10; a++ {
		intOrders = append(intOrders, float64(a))
	}
	fracOrders = []float64{1.1, 1.5, 2.5, 3.3, 4.7, 8.1, 10.9}
	for _, c := range cases {
		for _, set := range []struct {
			name   string
			orders []float64
			tol    float64
		}{{"integer", intOrders, 1e-10}, {"fractional", fracOrders, 1e-10}} {
			got, err := SubsampledGaussianRDP(c.q, c.sigma, set.orders)
			if err != nil {
				t.Fatal(err)
			}
			for i, a := range set.orders {
				want := directRDP(c.q, c.sigma, a)
				if e := relErr(got[i], want); e > set.tol {
					t.Errorf("%s q=%v σ=%v α=%v: series %.15g, integral %.15g (rel err %.2g)", set.name, c.q, c.sigma, a, got[i], want, e)
				}
			}
		}
	}
}

// TestFractionalContinuity checks that fractional orders join the integer
// ones smoothly and monotonically.
func TestFractionalContinuity(t *testing.T) {
	for _, c := range []struct{ q, sigma float64 }{{0.01, 1}, {0.2, 0.9}, {0.001, 2}} {
		for n := 2; n <= 9; n++ {
			orders := []float64{float64(n) - 1e-7, float64(n), float64(n) + 1e-7, float64(n) + 0.5, float64(n + 1)}
			r, err := SubsampledGaussianRDP(c.q, c.sigma, orders)
			if err != nil {
				t.Fatal(err)
			}
			if relErr(r[0], r[1]) > 1e-5 || relErr(r[2], r[1]) > 1e-5 {
				t.Errorf("q=%v σ=%v: RDP jumps at α=%d: %v %v %v", c.q, c.sigma, n, r[0], r[1], r[2])
			}
			if !(r[1] <= r[2] && r[2] <= r[3] && r[3] <= r[4]) {
				t.Errorf("q=%v σ=%v: RDP not monotone in α near %d: %v", c.q, c.sigma, n, r)
			}
		}
	}
}

func TestGaussianAndFullSampling(t *testing.T) {
	orders := []float64{1.5, 2, 7.3, 32}
	g, err := GaussianRDP(1.3, orders)
	if err != nil {
		t.Fatal(err)
	}
	s, err := SubsampledGaussianRDP(1, 1.3, orders)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range orders {
		if want := a / (2 * 1.3 * 1.3); relErr(g[i], want) > 1e-15 || relErr(s[i], want) > 1e-15 {
			t.Errorf("α=%v: Gaussian %v, q=1 %v, want %v", a, g[i], s[i], want)
		}
	}
	z, _ := SubsampledGaussianRDP(0, 1.3, orders)
	for i := range z {
		if z[i] != 0 {
			t.Errorf("q=0 gives RDP %v", z[i])
		}
	}
}

// TestLaplaceRDP compares the closed form with D_α(Lap(0,b) ‖ Lap(1,b)) by
// numerical integration, and checks the α → ∞ limit 1/b.
func TestLaplaceRDP(t *testing.T) {
	for _, b := range []float64{0.5, 1, 3} {
		orders := []float64{1.5, 2, 3.7, 10}
		got, err := LaplaceRDP(b, orders)
		if err != nil {
			t.Fatal(err)
		}
		for i, a := range orders {
			f := func(x float64) float64 {
				return math.Exp(-(a*math.Abs(x)+(1-a)*math.Abs(x-1))/b) / (2 * b)
			}
			in := integrate(f, -60*b, 0, b/4) + integrate(f, 0, 1, 0.05) + integrate(f, 1, 1+60*b*a, b/4)
			want := math.Log(in) / (a - 1)
			if relErr(got[i], want) > 1e-10 {
				t.Errorf("b=%v α=%v: closed form %.15g, integral %.15g", b, a, got[i], want)
			}
		}
		big, _ := LaplaceRDP(b, []float64{1e6})
		if relErr(big[0], 1/b) > 1e-5 {
			t.Errorf("b=%v: RDP at α=1e6 is %v, want → 1/b = %v", b, big[0], 1/b)
		}
	}
}

func TestRDPToEpsilonEdgeWarning(t *testing.T) {
	orders := []float64{2, 3, 4}
	res, err := RDPToEpsilon(orders, []float64{0.001, 0.0015, 0.002}, 1e-5, Balle2020)
	if err != nil {
		t.Fatal(err)
	}
	if res.Order != 4 || res.EdgeWarning == "" {
		t.Errorf("optimum at the largest order should warn: %+v", res)
	}
	res, err = RDPToEpsilon(orders, []float64{1, 8, 20}, 1e-5, Classic)
	if err != nil {
		t.Fatal(err)
	}
	want := 1 + math.Log(1e5)/1
	if res.Order != 2 || res.EdgeWarning == "" || relErr(res.Epsilon, want) > 1e-15 {
		t.Errorf("classic at α=2: %+v, want ε=%v", res, want)
	}
	for _, bad := range []struct {
		orders, rdp []float64
		delta       float64
	}{
		{[]float64{2}, []float64{1, 2}, 1e-5},
		{[]float64{1}, []float64{1}, 1e-5},
		{[]float64{2}, []float64{-1}, 1e-5},
		{[]float64{2}, []float64{math.NaN()}, 1e-5},
		{[]float64{2}, []float64{1}, 0},
		{[]float64{2}, []float64{1}, 1},
		{[]float64{2}, []float64{math.Inf(1)}, 1e-5},
	} {
		if _, err := RDPToEpsilon(bad.orders, bad.rdp, bad.delta, Balle2020); err == nil {
			t.Errorf("RDPToEpsilon(%v, %v, %v) should fail", bad.orders, bad.rdp, bad.delta)
		}
	}
}

func TestSchedule(t *testing.T) {
	// Two phases compose additively; a schedule of one phase split in two
	// equals the single phase.
	one := []Phase{{SampleRate: 0.02, NoiseMultiplier: 1.2, Steps: 300}}
	two := []Phase{{SampleRate: 0.02, NoiseMultiplier: 1.2, Steps: 100}, {SampleRate: 0.02, NoiseMultiplier: 1.2, Steps: 200}}
	a, err := Epsilon(one, 1e-6, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Epsilon(two, 1e-6, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if relErr(a.Epsilon, b.Epsilon) > 1e-12 || a.Order != b.Order {
		t.Errorf("split schedule %+v != single phase %+v", b, a)
	}
	mixed := []Phase{{SampleRate: 0.01, NoiseMultiplier: 1, Steps: 500}, {SampleRate: 0.05, NoiseMultiplier: 2, Steps: 100}}
	c1, _ := ScheduleRDP(mixed[:1], DefaultOrders())
	c2, _ := ScheduleRDP(mixed[1:], DefaultOrders())
	c, _ := ScheduleRDP(mixed, DefaultOrders())
	for i := range c {
		if relErr(c[i], c1[i]+c2[i]) > 1e-14 {
			t.Fatalf("order %v: %v != %v + %v", DefaultOrders()[i], c[i], c1[i], c2[i])
		}
	}
	if _, err := Epsilon(nil, 1e-5, Options{}); err == nil {
		t.Error("empty schedule should fail")
	}
	if _, err := Epsilon(one, 1e-5, Options{Orders: []float64{0.5}}); err == nil {
		t.Error("order 0.5 should fail")
	}
}

func TestDefaultAndExtendedOrders(t *testing.T) {
	d := DefaultOrders()
	if len(d) != 151 || d[0] != 1.1 || d[98] != 10.9 || d[99] != 12 || d[150] != 63 {
		t.Fatalf("default orders: len %d, %v … %v", len(d), d[:3], d[len(d)-3:])
	}
	e, err := ExtendOrders(128, 256, 12, 1.05)
	if err != nil {
		t.Fatal(err)
	}
	if len(e) != 154 || e[0] != 1.05 || e[len(e)-1] != 256 {
		t.Errorf("extended orders: len %d, first %v, last %v", len(e), e[0], e[len(e)-1])
	}
	if _, err := ExtendOrders(1); err == nil {
		t.Error("order 1 should be rejected")
	}
}

// TestPrunedSearchEqualsFullScan checks that skipping orders by their
// convexity lower bounds never changes the result of Epsilon.
func TestPrunedSearchEqualsFullScan(t *testing.T) {
	orders, _ := ExtendOrders(80, 128, 256)
	for _, q := range []float64{1e-4, 0.003, 0.05, 0.3, 0.9, 1} {
		for _, sigma := range []float64{0.4, 0.8, 1.5, 5, 30} {
			for _, steps := range []int{1, 100, 10000} {
				for _, conv := range []Conversion{Balle2020, Classic} {
					phases := []Phase{{SampleRate: q, NoiseMultiplier: sigma, Steps: steps}}
					opt := Options{Orders: orders, Conversion: conv}
					got, err := Epsilon(phases, 1e-6, opt)
					if err != nil {
						t.Fatal(err)
					}
					curve, _ := ScheduleRDP(phases, orders)
					want := bestOrder(orders, curve, 1e-6, conv)
					if got.Epsilon != want.Epsilon || got.Order != want.Order {
						t.Errorf("q=%v σ=%v steps=%d %v: pruned %+v, full %+v", q, sigma, steps, conv, got, want)
					}
				}
			}
		}
	}
}

// TestPureRDP checks the randomized-response curve against its limits: it
// is at most ε and αε²/2 (Bun & Steinke 2016, Prop. 3.3), at least the
// continuous Laplace curve, and equals the divergence of the two
// randomized-response laws computed directly.
func TestPureRDP(t *testing.T) {
	orders := []float64{1.1, 1.5, 2, 4.5, 8, 32, 63, 1e4}
	for _, eps := range []float64{0.05, 0.5, 2, 8} {
		t.Run(fmt.Sprint(eps), func(t *testing.T) {
			got, err := PureRDP(eps, orders)
			if err != nil {
				t.Fatal(err)
			}
			lap, _ := LaplaceRDP(1/eps, orders)
			p := math.Exp(eps) / (1 + math.Exp(eps))
			for i, a := range orders {
				direct := math.Log(math.Pow(p, a)*math.Pow(1-p, 1-a)+math.Pow(1-p, a)*math.Pow(p, 1-a)) / (a - 1)
				if a < 100 && math.Abs(got[i]-direct) > 1e-12*math.Max(1, direct) {
					t.Errorf("α=%v: %v, direct %v", a, got[i], direct)
				}
				if got[i] > eps*(1+1e-12) || got[i] > a*eps*eps/2*(1+1e-12) {
					t.Errorf("α=%v: %v above min(ε, αε²/2)", a, got[i])
				}
				if got[i] < lap[i]*(1-1e-12) {
					t.Errorf("α=%v: %v below the Laplace curve %v", a, got[i], lap[i])
				}
			}
		})
	}
	if _, err := PureRDP(0, orders); err == nil {
		t.Error("ε = 0 accepted")
	}
}

// TestRDPBudget checks that RDPBudget inverts the conversion.
func TestRDPBudget(t *testing.T) {
	for _, conv := range []Conversion{Balle2020, Classic} {
		for _, a := range []float64{1.5, 4, 63} {
			b := conv.RDPBudget(a, 3, 1e-5)
			got := conv.epsilonAt(a, b, math.Log(1e-5))
			if math.Abs(got-3) > 1e-12 {
				t.Errorf("%v α=%v: conversion of the budget %v gives ε=%v, want 3", conv, a, b, got)
			}
		}
	}
}

// TestHugeNoiseAndNoSpend: σ so large that σ² overflows is fast and gives
// the same ε as σ = 1e100 (the conversion's floor at the largest order);
// a run that samples nothing has ε = 0 and no edge warning.
func TestHugeNoiseAndNoSpend(t *testing.T) {
	ref, err := Epsilon([]Phase{{SampleRate: 0.01, NoiseMultiplier: 1e100, Steps: 100}}, 1e-5, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, sigma := range []float64{1e60, 1e155, 1e200, math.MaxFloat64} {
		start := time.Now()
		res, err := Epsilon([]Phase{{SampleRate: 0.01, NoiseMultiplier: sigma, Steps: 100}}, 1e-5, Options{})
		if err != nil || res.Epsilon != ref.Epsilon || time.Since(start) > 2*time.Second {
			t.Errorf("σ=%v: %+v, %v in %v; σ=1e100 gives %v", sigma, res, err, time.Since(start), ref.Epsilon)
		}
	}
	for _, p := range []Phase{{SampleRate: 0, NoiseMultiplier: 1.1, Steps: 100}, {SampleRate: 0.01, NoiseMultiplier: 1.1, Steps: 0}} {
		res, err := Epsilon([]Phase{p}, 1e-5, Options{})
		if err != nil || res.Epsilon != 0 || res.Order != 0 || res.EdgeWarning != "" {
			t.Errorf("%+v: %+v, %v; want ε = 0", p, res, err)
		}
	}
}
