package account

import (
	"math"
	"testing"
)

func TestCalibrateNoiseRoundTrip(t *testing.T) {
	for _, c := range []struct {
		eps, delta, q float64
		steps         int
	}{
		{8, 1e-5, 0.01, 1000},
		{1, 1e-5, 256.0 / 60000, 14062},
		{0.5, 1e-6, 0.001, 100},
		{3, 1e-5, 1, 10},
	} {
		target := Budget{Epsilon: c.eps, Delta: c.delta}
		sigma, res, err := CalibrateNoise(target, c.q, c.steps, Options{})
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		at := func(s float64) float64 {
			r, err := Epsilon([]Phase{{SampleRate: c.q, NoiseMultiplier: s, Steps: c.steps}}, c.delta, Options{})
			if err != nil {
				t.Fatal(err)
			}
			return r.Epsilon
		}
		got := at(sigma)
		if got > c.eps || res.Epsilon != got {
			t.Errorf("%+v: σ=%v gives ε=%v (reported %v), above the target", c, sigma, got, res.Epsilon)
		}
		// σ is minimal to 1e-9: a slightly smaller σ misses the target.
		if below := at(sigma * (1 - 2e-9)); below <= c.eps {
			t.Errorf("%+v: σ·(1−2e-9) still meets the target (ε=%v)", c, below)
		}
	}
}

func TestCalibrateNoiseMatchesOpacusReference(t *testing.T) {
	// Inverting the reference point recovers σ = 1.1.
	sigma, _, err := CalibrateNoise(Budget{Epsilon: 2.5965558690, Delta: 1e-5}, 256.0/60000, 14062, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if relErr(sigma, 1.1) > 1e-8 {
		t.Errorf("σ = %.12g, want 1.1", sigma)
	}
}

func TestCalibrateSampleRateRoundTrip(t *testing.T) {
	for _, c := range []struct {
		eps, delta, sigma float64
		steps             int
	}{
		{8, 1e-5, 1, 1000},
		{1, 1e-5, 1.1, 14062},
		{2, 1e-6, 0.8, 50},
	} {
		target := Budget{Epsilon: c.eps, Delta: c.delta}
		q, res, err := CalibrateSampleRate(target, c.sigma, c.steps, Options{})
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		at := func(q float64) float64 {
			r, err := Epsilon([]Phase{{SampleRate: q, NoiseMultiplier: c.sigma, Steps: c.steps}}, c.delta, Options{})
			if err != nil {
				t.Fatal(err)
			}
			return r.Epsilon
		}
		if got := at(q); got > c.eps || got != res.Epsilon {
			t.Errorf("%+v: q=%v gives ε=%v (reported %v)", c, q, got, res.Epsilon)
		}
		if above := at(q * (1 + 2e-9)); q < 1 && above <= c.eps {
			t.Errorf("%+v: q·(1+2e-9) still meets the target (ε=%v)", c, above)
		}
	}
	// Enough noise makes full-batch training fit.
	q, _, err := CalibrateSampleRate(Budget{Epsilon: 10, Delta: 1e-5}, 50, 10, Options{})
	if err != nil || q != 1 {
		t.Errorf("q = %v, %v; want 1", q, err)
	}
}

func TestCalibrateSchedule(t *testing.T) {
	phases := []Phase{{SampleRate: 0.01, Steps: 500}, {SampleRate: 0.04, Steps: 100}}
	sigma, res, err := CalibrateNoiseSchedule(Budget{Epsilon: 2, Delta: 1e-5}, phases, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range phases {
		phases[i].NoiseMultiplier = sigma
	}
	got, err := Epsilon(phases, 1e-5, Options{})
	if err != nil || got != res || got.Epsilon > 2 || got.Epsilon < 2*(1-1e-6) {
		t.Errorf("schedule σ=%v: %+v (calibration said %+v), %v", sigma, got, res, err)
	}
}

func TestCalibrateErrors(t *testing.T) {
	for name, f := range map[string]func() error{
		"unreachable ε": func() error {
			_, _, err := CalibrateNoise(Budget{Epsilon: 0.1, Delta: 1e-10}, 0.01, 100, Options{})
			return err
		},
		"bad target": func() error {
			_, _, err := CalibrateNoise(Budget{Epsilon: -1, Delta: 1e-5}, 0.01, 100, Options{})
			return err
		},
		"zero delta": func() error {
			_, _, err := CalibrateNoise(Budget{Epsilon: 1, Delta: 0}, 0.01, 100, Options{})
			return err
		},
		"bad q": func() error {
			_, _, err := CalibrateNoise(Budget{Epsilon: 1, Delta: 1e-5}, 2, 100, Options{})
			return err
		},
		"no spending": func() error {
			_, _, err := CalibrateNoise(Budget{Epsilon: 1, Delta: 1e-5}, 0, 100, Options{})
			return err
		},
		"bad σ": func() error {
			_, _, err := CalibrateSampleRate(Budget{Epsilon: 1, Delta: 1e-5}, math.Inf(1), 100, Options{})
			return err
		},
		"tiny ε for q": func() error {
			_, _, err := CalibrateSampleRate(Budget{Epsilon: 0.2, Delta: 1e-5}, 1, 100, Options{Orders: []float64{2, 3}})
			return err
		},
	} {
		if f() == nil {
			t.Errorf("%s: want an error", name)
		}
	}
}

func TestCalibrateZCDP(t *testing.T) {
	for _, tc := range []struct {
		name       string
		eps, delta float64
	}{{"eps1", 1, 1e-5}, {"eps0.25", 0.25, 1e-6}, {"eps4", 4, 1e-5}, {"eps10", 10, 1e-3}} {
		t.Run(tc.name, func(t *testing.T) {
			// Classic conversion: min over α of αρ + ln(1/δ)/(α−1) is
			// ρ + 2√(ρL), L = ln(1/δ), so ρ = (√(L+ε) − √L)².
			l := math.Log(1 / tc.delta)
			want := math.Pow(math.Sqrt(l+tc.eps)-math.Sqrt(l), 2)
			got, err := CalibrateZCDP(Budget{Epsilon: tc.eps, Delta: tc.delta}, Classic)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(got-want) > 1e-6*want || got > want*(1+1e-9) {
				t.Errorf("classic: ρ = %v, want %v", got, want)
			}
			// The tighter conversion allows a larger ρ, which still meets ε.
			rho, err := CalibrateZCDP(Budget{Epsilon: tc.eps, Delta: tc.delta}, Balle2020)
			if err != nil {
				t.Fatal(err)
			}
			e, _ := ZCDP("g", rho).EpsilonAt(tc.delta, Balle2020)
			if rho < got || e > tc.eps || e < tc.eps*(1-1e-6) {
				t.Errorf("balle2020: ρ = %v gives ε = %v, want ≤ %v and ρ ≥ %v", rho, e, tc.eps, got)
			}
		})
	}
	if _, err := CalibrateZCDP(Budget{Epsilon: 1}, Balle2020); err == nil {
		t.Error("delta 0 accepted")
	}
}
