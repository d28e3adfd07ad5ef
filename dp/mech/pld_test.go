package mech

import (
	"math"
	"testing"

	"github.com/dpal-dev/dpal/dp/account"
)

// pldEpsilon is the certified and lower ε of a PLD loss at delta.
func pldEpsilon(t *testing.T, l account.Loss, delta float64) account.PLDResult {
	t.Helper()
	if err := l.Validate(); err != nil {
		t.Fatal(err)
	}
	res, err := account.PLDEpsilon(l.PLD, delta, account.PLDOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestPLDLossMatchesCharge: each mechanism's PLD describes what it
// samples, so its ε is at most the charged ε (plus the grid width) and,
// for the pure mechanisms, the sampled ε' exactly.
func TestPLDLossMatchesCharge(t *testing.T) {
	const grid = account.DefaultPLDStep
	t.Run("laplace", func(t *testing.T) {
		for _, c := range []struct{ eps, sens float64 }{{1, 1}, {0.1, 3}, {2.5, 0.01}} {
			m, err := NewLaplace(c.eps, c.sens)
			if err != nil {
				t.Fatal(err)
			}
			l, err := m.PLDLoss()
			if err != nil {
				t.Fatal(err)
			}
			// The sampled ε' = K·s/t ≤ ε is the exact ε at δ = 0.
			k, _ := gridSensitivity(c.sens, m.g)
			exact := float64(k) * float64(m.s) / float64(m.t)
			res := pldEpsilon(t, l, 0)
			if !(exact <= c.eps) || res.EpsilonLower > exact+1e-12 || res.Epsilon < exact-1e-12 || res.Epsilon > c.eps+grid {
				t.Errorf("ε=%v: PLD ε(δ=0) in [%v, %v], sampled %v, charged %v", c.eps, res.EpsilonLower, res.Epsilon, exact, c.eps)
			}
		}
	})
	t.Run("gaussian", func(t *testing.T) {
		for _, c := range []struct{ eps, delta, sens float64 }{{1, 1e-5, 1}, {0.5, 1e-6, 2}, {3, 1e-3, 0.1}} {
			m, err := NewGaussian(c.eps, c.delta, c.sens)
			if err != nil {
				t.Fatal(err)
			}
			l, err := m.PLDLoss()
			if err != nil {
				t.Fatal(err)
			}
			res := pldEpsilon(t, l, c.delta)
			t.Logf("(%v, %v)-DP Gaussian, sensitivity %v: sampled law's ε in [%.6f, %.6f]", c.eps, c.delta, c.sens, res.EpsilonLower, res.Epsilon)
			// The sampler meets (ε, δ) with its variance rounded up: its
			// exact ε is at most ε and close to it.
			if res.Epsilon > c.eps+grid || res.EpsilonLower > c.eps || res.Epsilon < 0.99*c.eps {
				t.Errorf("(%v, %v): PLD ε in [%v, %v]", c.eps, c.delta, res.EpsilonLower, res.Epsilon)
			}
		}
	})
	t.Run("randomized response", func(t *testing.T) {
		m, err := NewRandomizedResponse(0.7)
		if err != nil {
			t.Fatal(err)
		}
		l, err := m.PLDLoss()
		if err != nil {
			t.Fatal(err)
		}
		if res := pldEpsilon(t, l, 0); math.Abs(res.Epsilon-0.7) > grid || res.EpsilonLower > 0.7 {
			t.Errorf("PLD ε(δ=0) in [%v, %v], want 0.7", res.EpsilonLower, res.Epsilon)
		}
	})
}

// TestPLDLossComposes: 200 Laplace releases composed by the PLD accountant
// cost far less than the 200·ε basic composition charges at δ = 1e-6, and
// a mechanism without a PLD description passes its Loss on.
func TestPLDLossComposes(t *testing.T) {
	m, err := NewLaplace(0.1, 1)
	if err != nil {
		t.Fatal(err)
	}
	one, err := PLDLoss(m)
	if err != nil {
		t.Fatal(err)
	}
	all, err := one.Times(200)
	if err != nil {
		t.Fatal(err)
	}
	eps, err := all.EpsilonAt(1e-6, account.Balle2020)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("200 × Laplace(ε = 0.1) by PLD at δ = 1e-6: ε = %.4f (basic composition 20)", eps)
	if !(eps < 0.5*200*0.1) {
		t.Errorf("200 × Laplace(0.1) by PLD: ε = %v, want well below %v", eps, 200*0.1)
	}
	v, err := NewGaussianVector(1, 1, 10)
	if err != nil {
		t.Fatal(err)
	}
	if l, err := PLDLoss(v); err != nil || l.HasPLD() || l.Rho != v.Loss().Rho {
		t.Errorf("vector Gaussian: PLDLoss = %+v, %v; want its zCDP Loss", l, err)
	}
}
