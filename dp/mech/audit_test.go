package mech

import (
	"testing"

	"github.com/dpal-dev/dpal/dp/audit"
	"github.com/dpal-dev/dpal/dp/audit/audittest"
	"github.com/dpal-dev/dpal/dp/rng"
)

// continuousAudit audits a real-valued release rel of the neighbouring
// inputs x0 and x1 (audittest.Run checks the claim and the mutant).
func continuousAudit(seed uint64, delta float64, rel func(*rng.Rand, float64) float64, x0, x1 float64) func() (audit.Result, error) {
	return func() (audit.Result, error) {
		return audit.Continuous(rng.Seeded(seed),
			func(r *rng.Rand) float64 { return rel(r, x0) },
			func(r *rng.Rand) float64 { return rel(r, x1) }, audittest.Config(delta))
	}
}

func TestAuditLaplaceGaussian(t *testing.T) {
	lap, _ := NewLaplace(1, 1)
	lapMut := *lap
	lapMut.s *= 2 // scale t/s halved
	release := func(m interface {
		Release(*rng.Rand, float64) (float64, error)
	}) func(*rng.Rand, float64) float64 {
		return func(r *rng.Rand, x float64) float64 { y, _ := m.Release(r, x); return y }
	}
	gau, _ := NewGaussian(1, 1e-5, 1)
	gauMut := *gau
	gauMut.dg = newDGaussInt((gau.dg.t+1)/2, (gau.dg.m+1)/2) // σ² ≈ tm/4
	gv, _ := NewGaussianVector(gau.sigma, 1, 1)              // σ = z·C with z from the analytic calibration
	gvMut := *gv
	gvMut.dg = newDGaussInt((gv.dg.t+1)/2, (gv.dg.m+1)/2).withTable()
	vecRelease := func(m *GaussianVector) func(*rng.Rand, float64) float64 {
		return func(r *rng.Rand, x float64) float64 {
			v := []float64{x}
			_ = m.AddTo(r, v)
			return v[0]
		}
	}
	// The bulk path (fill, dimension ≥ bulkMinDim): every coordinate of
	// AddTo(x·1) is an independent release of x, handed out one per trial.
	const d = 2 * bulkMinDim
	gvBulk, _ := NewGaussianVector(gau.sigma, 1, d)
	gvBulkMut := *gvBulk
	gvBulkMut.dg = newDGaussInt((gvBulk.dg.t+1)/2, (gvBulk.dg.m+1)/2).withTable()
	bulkRelease := func(m *GaussianVector) func(*rng.Rand, float64) float64 {
		bufs := map[float64][]float64{}
		return func(r *rng.Rand, x float64) float64 {
			v := bufs[x]
			if len(v) == 0 {
				v = make([]float64, d)
				for i := range v {
					v[i] = x
				}
				_ = m.AddTo(r, v)
			}
			bufs[x] = v[1:]
			return v[0]
		}
	}
	audittest.Run(t, []audittest.Case{
		{Name: "gaussian-vector-bulk", Epsilon: 1, Delta: 1e-5, Genuine: continuousAudit(9, 1e-5, bulkRelease(gvBulk), 0, 1), Mutant: continuousAudit(10, 1e-5, bulkRelease(&gvBulkMut), 0, 1), Mechanism: gvBulk},
		{Name: "laplace", Epsilon: 1, Genuine: continuousAudit(1, 0, release(lap), 0, 1), Mutant: continuousAudit(2, 0, release(&lapMut), 0, 1), Mechanism: lap},
		{Name: "gaussian", Epsilon: 1, Delta: 1e-5, Genuine: continuousAudit(3, 1e-5, release(gau), 0, 1), Mutant: continuousAudit(4, 1e-5, release(&gauMut), 0, 1), Mechanism: gau},
		{Name: "gaussian-vector", Epsilon: 1, Delta: 1e-5, Genuine: continuousAudit(5, 1e-5, vecRelease(gv), 0, 1), Mutant: continuousAudit(6, 1e-5, vecRelease(&gvMut), 0, 1), Mechanism: gv},
	})
}

func TestAuditGammaVector(t *testing.T) {
	const d = 2
	m, _ := NewGammaVector(1, 1, d)
	mut := *m
	mut.theta /= 2
	mut.scratch = make([]float64, d)
	proj := func(m *GammaVector) func(*rng.Rand, float64) float64 {
		return func(r *rng.Rand, x float64) float64 {
			v := []float64{x, 0}
			_ = m.AddTo(r, v)
			return v[0]
		}
	}
	audittest.Run(t, []audittest.Case{
		{Name: "gamma-vector d=2", Epsilon: 1, Genuine: continuousAudit(7, 0, proj(m), 0, 1), Mutant: continuousAudit(8, 0, proj(&mut), 0, 1), Mechanism: m},
	})
}

func TestAuditRandomizedResponse(t *testing.T) {
	rr, _ := NewRandomizedResponse(1)
	mut, _ := NewRandomizedResponse(2)
	run := func(seed uint64, m *RandomizedResponse) func() (audit.Result, error) {
		return func() (audit.Result, error) {
			return audit.Bool(rng.Seeded(seed),
				func(r *rng.Rand) bool { return m.Release(r, false) },
				func(r *rng.Rand) bool { return m.Release(r, true) }, audittest.Config(0))
		}
	}
	audittest.Run(t, []audittest.Case{{Name: "randomized response", Epsilon: 1, Genuine: run(9, rr), Mutant: run(10, mut), Mechanism: rr}})
}

// selectAudit audits a selection on the neighbouring score vectors s0, s1.
func selectAudit(seed uint64, sel func(*rng.Rand, []float64) int, s0, s1 []float64) func() (audit.Result, error) {
	return func() (audit.Result, error) {
		return audit.Discrete(rng.Seeded(seed),
			func(r *rng.Rand) int { return sel(r, s0) },
			func(r *rng.Rand) int { return sel(r, s1) }, audittest.Config(0))
	}
}

func TestAuditSelection(t *testing.T) {
	// Exponential mechanism: candidate 0 gains Δ while 49 others lose Δ,
	// which makes the ratio for "select 0" approach e^ε.
	n := 50
	e0, e1 := make([]float64, n), make([]float64, n)
	for i := 1; i < n; i++ {
		e0[i] = 1
	}
	e1[0] = 1
	exp, _ := NewExponential(1, 1, false)
	expMut := *exp
	expMut.sg.s *= 2
	expSel := func(m *Exponential) func(*rng.Rand, []float64) int {
		return func(r *rng.Rand, s []float64) int { i, _ := m.Select(r, s); return i }
	}
	// Report noisy max: candidate 0 wins only in its noise's upper tail,
	// where the Laplace ratio is exactly e^ε. Non-monotone: 0 gains Δ and
	// the rival loses Δ; monotone and top-k: only 0 gains Δ.
	rnm, _ := NewReportNoisyMax(1, 1, false)
	rnmMut := *rnm
	rnmMut.sg.s *= 2
	mono, _ := NewReportNoisyMax(1, 1, true)
	monoMut := *mono
	monoMut.sg.s *= 2
	rnmSel := func(m *ReportNoisyMax) func(*rng.Rand, []float64) int {
		return func(r *rng.Rand, s []float64) int { i, _ := m.Select(r, s); return i }
	}
	topk := func(eps float64) (func(*rng.Rand, []float64) int, *NoisyTopK) {
		m, err := NewNoisyTopK(eps, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		return func(r *rng.Rand, s []float64) int { i, _ := m.Select(r, s); return i[0] }, m
	}
	top1, top1m := topk(1)
	top2, _ := topk(2)
	audittest.Run(t, []audittest.Case{
		{Name: "exponential", Epsilon: 1, Genuine: selectAudit(11, expSel(exp), e0, e1), Mutant: selectAudit(12, expSel(&expMut), e0, e1), Mechanism: exp},
		{Name: "report noisy max", Epsilon: 1, Genuine: selectAudit(13, rnmSel(rnm), []float64{0, 6}, []float64{1, 5}),
			Mutant: selectAudit(14, rnmSel(&rnmMut), []float64{0, 6}, []float64{1, 5}), Mechanism: rnm},
		{Name: "report noisy max monotone", Epsilon: 1, Genuine: selectAudit(15, rnmSel(mono), []float64{0, 3}, []float64{1, 3}),
			Mutant: selectAudit(16, rnmSel(&monoMut), []float64{0, 3}, []float64{1, 3}), Mechanism: mono},
		// The mutant doubles ε, i.e. halves the per-item noise scale.
		{Name: "noisy top-k", Epsilon: 1, Genuine: selectAudit(17, top1, []float64{0, 3}, []float64{1, 3}),
			Mutant: selectAudit(18, top2, []float64{0, 3}, []float64{1, 3}), Mechanism: top1m},
	})
}
