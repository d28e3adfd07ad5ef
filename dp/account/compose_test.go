package account

import (
	"math"
	"math/bits"
	"testing"
)

func TestComposeParallelAmplify(t *testing.T) {
	a := Approx("a", 0.5, 1e-6)
	b := Pure("b", 1.25)
	seq, err := Compose(a, b, a)
	if err != nil || seq.Epsilon != 2.25 || seq.Delta != 2e-6 {
		t.Errorf("Compose = %+v, %v", seq, err)
	}
	par, err := Parallel(a, b, a)
	if err != nil || par.Epsilon != 1.25 || par.Delta != 1e-6 {
		t.Errorf("Parallel = %+v, %v", par, err)
	}
	amp, err := AmplifyPoisson(Approx("c", 1, 1e-5), 0.01)
	if err != nil || relErr(amp.Epsilon, math.Log(1+0.01*(math.E-1))) > 1e-14 || relErr(amp.Delta, 1e-7) > 1e-15 {
		t.Errorf("AmplifyPoisson = %+v, %v", amp, err)
	}
	if full, _ := AmplifyPoisson(a, 1); relErr(full.Epsilon, a.Epsilon) > 1e-15 {
		t.Errorf("q=1 changes ε: %v", full.Epsilon)
	}
	for name, f := range map[string]func() error{
		"empty compose":      func() error { _, err := Compose(); return err },
		"invalid in compose": func() error { _, err := Compose(a, Pure("bad", -1)); return err },
		"delta sum >= 1": func() error {
			_, err := Compose(Approx("d", 1, 0.6), Approx("d", 1, 0.6))
			return err
		},
		"empty parallel": func() error { _, err := Parallel(); return err },
		"q=0":            func() error { _, err := AmplifyPoisson(a, 0); return err },
		"q>1":            func() error { _, err := AmplifyPoisson(a, 1.5); return err },
		"q NaN":          func() error { _, err := AmplifyPoisson(a, math.NaN()); return err },
	} {
		if f() == nil {
			t.Errorf("%s: want an error", name)
		}
	}
}

// bruteKOVDelta is the hockey-stick divergence of k-fold randomized
// response with parameter eps, summed over all 2^k outcomes.
func bruteKOVDelta(eps float64, k int, epsTotal float64) float64 {
	var d float64
	z := 1 + math.Exp(eps)
	for x := 0; x < 1<<k; x++ {
		ones := bits.OnesCount(uint(x))
		p := math.Exp(float64(k-ones)*eps) / math.Pow(z, float64(k))
		q := math.Exp(float64(ones)*eps) / math.Pow(z, float64(k))
		d += math.Max(0, p-math.Exp(epsTotal)*q)
	}
	return d
}

func TestKOVAgainstBruteForce(t *testing.T) {
	for _, k := range []int{1, 2, 3, 5, 8, 11} {
		for _, eps := range []float64{0.1, 0.5, 1.3} {
			for _, eg := range []float64{0, 0.05, 0.4, 1, float64(k) * eps / 2, float64(k)*eps - 0.01} {
				if eg < 0 {
					continue
				}
				want := bruteKOVDelta(eps, k, eg)
				got, err := KOVDelta(eps, 0, k, eg)
				if err != nil {
					t.Fatal(err)
				}
				if math.Abs(got-want) > 1e-13*math.Max(want, 1e-3) {
					t.Errorf("k=%d ε=%v ε_g=%v: KOVDelta %.15g, brute force %.15g", k, eps, eg, got, want)
				}
			}
			// KOV Thm 3.3's corners: δ_i at ε_g = (k−2i)ε.
			for i := 0; 2*i <= k; i++ {
				var di float64
				for l := 0; l < i; l++ {
					di += math.Exp(LogBinomial(k, l)) * (math.Exp(float64(k-l)*eps) - math.Exp(float64(k-2*i+l)*eps))
				}
				di /= math.Pow(1+math.Exp(eps), float64(k))
				got, _ := KOVDelta(eps, 0, k, float64(k-2*i)*eps)
				if math.Abs(got-di) > 1e-13*math.Max(di, 1e-3) {
					t.Errorf("k=%d ε=%v corner i=%d: %v, KOV formula %v", k, eps, i, got, di)
				}
			}
		}
	}
}

func TestKOVCompositionInverts(t *testing.T) {
	for _, c := range []struct {
		eps, delta float64
		k          int
		dt         float64
	}{
		{0.1, 0, 10, 1e-5}, {0.5, 0, 7, 1e-3}, {0.05, 1e-8, 1000, 1e-5}, {0.01, 0, 10000, 1e-6}, {1, 0, 1, 0.01}, {0.3, 1e-4, 20, 0.01},
	} {
		e, err := KOVComposition(c.eps, c.delta, c.k, c.dt)
		if err != nil {
			t.Fatal(err)
		}
		if e > float64(c.k)*c.eps*(1+1e-12) {
			t.Errorf("%+v: KOV ε %v exceeds basic composition %v", c, e, float64(c.k)*c.eps)
		}
		drv, err := DRVComposition(c.eps, c.delta, c.k, c.dt-float64(c.k)*c.delta)
		if err == nil && e > drv.Epsilon {
			t.Errorf("%+v: KOV ε %v exceeds DRV %v", c, e, drv.Epsilon)
		}
		if e > 0 {
			d, _ := KOVDelta(c.eps, c.delta, c.k, e)
			if relErr(d, c.dt) > 1e-8 {
				t.Errorf("%+v: ε=%v gives δ=%v, want %v", c, e, d, c.dt)
			}
		}
	}
	// One step: e^ε_g = e^ε − δ(1 + e^ε).
	e, _ := KOVComposition(1, 0, 1, 0.01)
	if want := math.Log(math.E - 0.01*(1+math.E)); relErr(e, want) > 1e-13 {
		t.Errorf("k=1: %v, want %v", e, want)
	}
	if _, err := KOVComposition(0.1, 1e-3, 10, 1e-3); err == nil {
		t.Error("total δ below the steps' own δ should fail")
	}
}

func TestDRVComposition(t *testing.T) {
	c, err := DRVComposition(0.1, 1e-7, 100, 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	want := math.Sqrt(200*math.Log(1e6))*0.1 + 100*0.1*math.Expm1(0.1)
	if relErr(c.Epsilon, want) > 1e-15 || relErr(c.Delta, 100*1e-7+1e-6) > 1e-15 {
		t.Errorf("DRV = %+v, want ε=%v", c, want)
	}
	if _, err := DRVComposition(0.1, 0, 0, 1e-6); err == nil {
		t.Error("k=0 should fail")
	}
	if _, err := DRVComposition(0.1, 0, 5, 0); err == nil {
		t.Error("δ'=0 should fail")
	}
}

// TestKOVDeltaEdge: where δ_total is 1 up to rounding (ε = 1, k = 500, no
// ε_total to spare) the log of δ_RR rounds above 0; KOVDelta must say 1,
// not NaN.
func TestKOVDeltaEdge(t *testing.T) {
	for _, epsTotal := range []float64{0, 1e-9, 0.01} {
		d, err := KOVDelta(1, 0, 500, epsTotal)
		if err != nil || !(d >= 0 && d <= 1) || math.Abs(d-1) > 1e-9 {
			t.Errorf("KOVDelta(1, 0, 500, %v) = %v, %v; want 1", epsTotal, d, err)
		}
	}
}
