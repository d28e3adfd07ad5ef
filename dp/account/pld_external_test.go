package account_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/mech"
)

// balleWangEpsilon inverts the exact δ(ε) of the Gaussian mechanism
// (mech.AnalyticGaussianDelta, Balle & Wang 2018 Thm 8) by bisection.
func balleWangEpsilon(sigma, delta float64) float64 {
	lo, hi := 0.0, 1.0
	for mech.AnalyticGaussianDelta(hi, sigma) > delta {
		hi *= 2
	}
	for range 200 {
		mid := (lo + hi) / 2
		if mech.AnalyticGaussianDelta(mid, sigma) > delta {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// TestPLDGaussianBalleWang: one Gaussian mechanism's PLD ε(δ) equals the
// analytic Balle–Wang value to 1e-6 relative, between its bounds.
func TestPLDGaussianBalleWang(t *testing.T) {
	for _, sigma := range []float64{0.3, 0.5, 1, 2, 10} {
		for _, delta := range []float64{1e-3, 1e-5, 1e-10} {
			t.Run(fmt.Sprintf("σ=%v δ=%v", sigma, delta), func(t *testing.T) {
				want := balleWangEpsilon(sigma, delta)
				res, err := account.PLDEpsilon([]account.PLDTerm{{Kind: account.PLDGaussian, NoiseMultiplier: sigma, Count: 1}}, delta, account.PLDOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if e := math.Abs(res.Epsilon-want) / want; e > 1e-6 || res.EpsilonLower > want || res.Epsilon < want*(1-1e-12) {
					t.Errorf("PLD ε in [%v, %v], Balle–Wang %v (rel err %.2g)", res.EpsilonLower, res.Epsilon, want, e)
				}
			})
		}
	}
}

// The PLD accountant on the README's DP-SGD run: a certified ε and a lower
// bound on the exact one, both below the RDP accountant's ε.
func ExamplePLDEpsilon() {
	terms, err := account.PhaseTerms([]account.Phase{{SampleRate: 256.0 / 60000, NoiseMultiplier: 1.1, Steps: 14062}})
	if err != nil {
		panic(err)
	}
	res, err := account.PLDEpsilon(terms, 1e-5, account.PLDOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Printf("ε ≤ %.3f (and ≥ %.3f) at δ = %g\n", res.Epsilon, res.EpsilonLower, res.Delta)
	// Output: ε ≤ 2.382 (and ≥ 2.347) at δ = 1e-05
}

// TestPLDLowerBoundIsSound: k Gaussian mechanisms with noise σ are one with
// σ/√k, whose ε is exact (Balle–Wang). At q = 1, σ = 0.6, 14 062 steps,
// where dp_accounting's optimistic estimate lies above the exact ε, both
// bounds must hold.
func TestPLDLowerBoundIsSound(t *testing.T) {
	for _, tc := range []struct {
		sigma float64
		k     int
		step  float64
		delta float64
	}{{0.6, 14062, 0.05, 1e-5}, {1, 100, 1e-3, 1e-5}, {2, 1000, 1e-3, 1e-5}, {20, 1000, 1e-4, 1e-15}, {5, 300, 1e-4, 1e-12}} {
		want := balleWangEpsilon(tc.sigma/math.Sqrt(float64(tc.k)), tc.delta)
		res, err := account.PLDEpsilon([]account.PLDTerm{{Kind: account.PLDGaussian, NoiseMultiplier: tc.sigma, Count: tc.k}}, tc.delta, account.PLDOptions{Step: tc.step})
		if err != nil {
			t.Fatal(err)
		}
		if !(res.EpsilonLower <= want && want <= res.Epsilon) {
			t.Errorf("σ=%v k=%d: exact ε %v not in [%v, %v]", tc.sigma, tc.k, want, res.EpsilonLower, res.Epsilon)
		}
		if tc.delta < 1e-10 && (res.Warning != "" || res.Epsilon-res.EpsilonLower > 0.02*want) {
			t.Errorf("σ=%v k=%d δ=%v: bounds [%v, %v] too far apart (%s)", tc.sigma, tc.k, tc.delta, res.EpsilonLower, res.Epsilon, res.Warning)
		}
		t.Logf("σ=%v k=%d Δ=%v δ=%v: [%v, %v], exact %v", tc.sigma, tc.k, tc.step, tc.delta, res.EpsilonLower, res.Epsilon, want)
	}
}
