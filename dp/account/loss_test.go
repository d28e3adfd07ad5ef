package account

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"
)

func TestLossComposeMatchesAccountant(t *testing.T) {
	phases := []Phase{{SampleRate: 256.0 / 60000, NoiseMultiplier: 1.1, Steps: 14062}}
	dpsgd, err := SubsampledGaussian(phases)
	if err != nil {
		t.Fatal(err)
	}
	total, err := Compose(Pure("laplace", 0.1), Approx("gaussian", 0.5, 1e-6), dpsgd)
	if err != nil {
		t.Fatal(err)
	}
	got, err := total.EpsilonAt(1e-5, Balle2020)
	if err != nil {
		t.Fatal(err)
	}
	// Independently: the accountant at the δ the (ε, δ) part leaves.
	res, err := Epsilon(phases, 1e-5-1e-6, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want := 0.6 + res.Epsilon; relErr(got, want) > 1e-12 {
		t.Errorf("EpsilonAt = %v, want %v", got, want)
	}
	if k := total.Kind(); k != "mixed" {
		t.Errorf("Kind = %q", k)
	}
}

// TestZCDPConversion checks ρ-zCDP against the closed form of the classic
// conversion, min_α αρ + log(1/δ)/(α−1) = ρ + 2√(ρ log(1/δ)) (Bun & Steinke
// 2016, Prop. 1.3), and the Balle2020 one against a brute-force scan.
func TestZCDPConversion(t *testing.T) {
	for _, tc := range []struct{ rho, delta float64 }{
		{0.5, 1e-5}, {1e-4, 1e-6}, {8, 1e-3}, {0.0125, 1e-10}, {50, 0.1},
	} {
		l := ZCDP("gaussian", tc.rho)
		got, err := l.EpsilonAt(tc.delta, Classic)
		if err != nil {
			t.Fatal(err)
		}
		want := tc.rho + 2*math.Sqrt(tc.rho*math.Log(1/tc.delta))
		if relErr(got, want) > 1e-9 {
			t.Errorf("ρ=%v δ=%v classic: got %v, want %v", tc.rho, tc.delta, got, want)
		}
		got, _ = l.EpsilonAt(tc.delta, Balle2020)
		brute := math.Inf(1)
		for a := 1.0001; a < 1e7; a *= 1.0001 {
			brute = math.Min(brute, Balle2020.epsilonAt(a, a*tc.rho, math.Log(tc.delta)))
		}
		if got > brute*(1+1e-7) || got < brute*(1-1e-4) {
			t.Errorf("ρ=%v δ=%v balle2020: got %v, brute force %v", tc.rho, tc.delta, got, brute)
		}
	}
}

func TestLossAlgebra(t *testing.T) {
	orders := []float64{2, 4, 8}
	c1, _ := RDPCurve("a", orders, []float64{0.1, 0.2, 0.4})
	c2, err := RDPCurve("b", []float64{8, 3, 4, 16}, []float64{0.5, 0.1, 0.3, math.Inf(1)})
	if err != nil || !reflect.DeepEqual(c2.Orders, []float64{3, 4, 8}) {
		t.Fatalf("RDPCurve = %v, %v", c2, err)
	}
	seq, err := Compose(c1, c2)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(seq.Orders, []float64{4, 8}) || !reflect.DeepEqual(seq.RDP, []float64{0.5, 0.9}) {
		t.Errorf("Compose curve = %v %v", seq.Orders, seq.RDP)
	}
	par, _ := Parallel(c1, c2)
	if !reflect.DeepEqual(par.RDP, []float64{0.3, 0.5}) {
		t.Errorf("Parallel curve = %v %v", par.Orders, par.RDP)
	}
	three, _ := Compose(Approx("g", 0.3, 1e-7), Approx("g", 0.3, 1e-7), Approx("g", 0.3, 1e-7))
	times, err := Approx("g", 0.3, 1e-7).Times(3)
	if err != nil || relErr(times.Epsilon, three.Epsilon) > 1e-15 || relErr(times.Delta, three.Delta) > 1e-15 {
		t.Errorf("Times(3) = %+v, Compose = %+v (%v)", times, three, err)
	}
	ct, _ := c1.Times(2)
	if !reflect.DeepEqual(ct.RDP, []float64{0.2, 0.4, 0.8}) || !reflect.DeepEqual(c1.RDP, []float64{0.1, 0.2, 0.4}) {
		t.Errorf("Times aliased or wrong: %v, original %v", ct.RDP, c1.RDP)
	}
	if _, err := AmplifyPoisson(c1, 0.1); err == nil {
		t.Error("AmplifyPoisson of an RDP curve: want an error")
	}
	z := ZCDP("z", 0.5)
	withCurve, _ := Compose(z, c1)
	eps, _ := withCurve.EpsilonAt(1e-5, Classic)
	want := math.Inf(1)
	for i, a := range orders {
		want = math.Min(want, c1.RDP[i]+a*0.5+math.Log(1e5)/(a-1))
	}
	if relErr(eps, want) > 1e-14 {
		t.Errorf("ρ + curve: %v, want %v", eps, want)
	}
}

func TestLossValidate(t *testing.T) {
	for name, l := range map[string]Loss{
		"negative eps":     Pure("x", -1),
		"NaN eps":          Pure("x", math.NaN()),
		"inf eps":          Pure("x", math.Inf(1)),
		"delta 1":          Approx("x", 1, 1),
		"negative rho":     ZCDP("x", -0.1),
		"curve mismatch":   {Orders: []float64{2}, RDP: []float64{0.1, 0.2}},
		"order <= 1":       {Orders: []float64{1}, RDP: []float64{0.1}},
		"orders unsorted":  {Orders: []float64{3, 2}, RDP: []float64{0.1, 0.2}},
		"infinite curve":   {Orders: []float64{2}, RDP: []float64{math.Inf(1)}},
		"NaN parameter":    {Params: map[string]float64{"sigma": math.NaN()}, Epsilon: 1},
		"negative rdp val": {Orders: []float64{2}, RDP: []float64{-1}},
	} {
		t.Run(name, func(t *testing.T) {
			if err := l.Validate(); err == nil {
				t.Error("want an error")
			}
			if _, err := Compose(l, Pure("ok", 1)); err == nil {
				t.Error("Compose: want an error")
			}
		})
	}
	if _, err := ZCDP("z", 1).EpsilonAt(0, Balle2020); err == nil {
		t.Error("zCDP at δ = 0: want an error")
	}
	if _, err := Approx("a", 1, 1e-5).EpsilonAt(1e-6, Balle2020); err == nil {
		t.Error("δ below the loss's own: want an error")
	}
	if _, err := RDPCurve("c", []float64{2}, []float64{math.Inf(1)}); err == nil {
		t.Error("all-infinite curve: want an error")
	}
}

func TestLossJSONRoundTrip(t *testing.T) {
	c, _ := RDPCurve("c", []float64{2, 3}, []float64{0.25, 0.5})
	in, _ := Compose(Approx("a", 0.5, 1e-7), ZCDP("z", 0.125), c)
	in.Params = map[string]float64{"sigma": 2}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out Loss
	if err := json.Unmarshal(b, &out); err != nil || !reflect.DeepEqual(in, out) {
		t.Errorf("round trip: %+v, %v\n%s", out, err, b)
	}
}
