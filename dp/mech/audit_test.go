package mech

import (
	"testing"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/audit"
	"github.com/dpal-dev/dpal/dp/rng"
)

// Every mechanism is audited on a pair of neighbouring inputs that is
// (close to) worst case: the audit's lower bound must not exceed the claimed
// ε, and a mutant with half the noise scale must be caught (lower bound above
// the claimed ε). The bound holds with probability ≥ auditConfidence, so a
// correct mechanism fails with probability ≤ 1e-3 under a random seed; the
// mutants' true ε is about twice the claim, far above what the trial counts
// can miss.
const (
	auditTrials     = 200000
	auditConfidence = 0.999
)

type auditCase struct {
	name       string
	eps, delta float64
	genuine    func() (audit.Result, error)
	mutant     func() (audit.Result, error)
	// m is the audited mechanism: what its Loss charges the ledger,
	// converted by the accountant at delta, must cover the audited ε.
	m account.Mechanism
}

func runAudits(t *testing.T, cases []auditCase) {
	t.Helper()
	for _, c := range cases {
		charged, err := c.m.Loss().EpsilonAt(c.delta, account.Balle2020)
		if err != nil || charged < c.eps*(1-1e-12) {
			t.Errorf("%s: the ledger would charge ε=%v (%v) at δ=%v, below the audited ε=%v", c.name, charged, err, c.delta, c.eps)
		}
		res, err := c.genuine()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if res.Epsilon > c.eps {
			t.Errorf("%s: audit lower bound %.3f exceeds claimed ε=%v (event %s, p0=%.4g p1=%.4g)",
				c.name, res.Epsilon, c.eps, res.Event, res.P0, res.P1)
		}
		mut, err := c.mutant()
		if err != nil {
			t.Fatalf("%s mutant: %v", c.name, err)
		}
		if mut.Epsilon <= c.eps {
			t.Errorf("%s: halved-noise mutant not caught: lower bound %.3f ≤ ε=%v (event %s)",
				c.name, mut.Epsilon, c.eps, mut.Event)
		}
		t.Logf("%s: genuine ε_lb=%.3f, mutant ε_lb=%.3f (claimed %v)", c.name, res.Epsilon, mut.Epsilon, c.eps)
	}
}

func cfg(delta float64) audit.Config {
	trials := auditTrials
	if delta > 0 {
		// The Gaussian's distinguishing events sit further in the tail.
		trials *= 3
	}
	return audit.Config{Trials: trials, Confidence: auditConfidence, Delta: delta}
}

func continuousAudit(seed uint64, delta float64, rel func(*rng.Rand, float64) float64, x0, x1 float64) func() (audit.Result, error) {
	return func() (audit.Result, error) {
		return audit.Continuous(rng.Seeded(seed),
			func(r *rng.Rand) float64 { return rel(r, x0) },
			func(r *rng.Rand) float64 { return rel(r, x1) }, cfg(delta))
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
	runAudits(t, []auditCase{
		{"gaussian-vector-bulk", 1, 1e-5, continuousAudit(9, 1e-5, bulkRelease(gvBulk), 0, 1), continuousAudit(10, 1e-5, bulkRelease(&gvBulkMut), 0, 1), gvBulk},
		{"laplace", 1, 0, continuousAudit(1, 0, release(lap), 0, 1), continuousAudit(2, 0, release(&lapMut), 0, 1), lap},
		{"gaussian", 1, 1e-5, continuousAudit(3, 1e-5, release(gau), 0, 1), continuousAudit(4, 1e-5, release(&gauMut), 0, 1), gau},
		{"gaussian-vector", 1, 1e-5, continuousAudit(5, 1e-5, vecRelease(gv), 0, 1), continuousAudit(6, 1e-5, vecRelease(&gvMut), 0, 1), gv},
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
	runAudits(t, []auditCase{
		{"gamma-vector d=2", 1, 0, continuousAudit(7, 0, proj(m), 0, 1), continuousAudit(8, 0, proj(&mut), 0, 1), m},
	})
}

func TestAuditRandomizedResponse(t *testing.T) {
	rr, _ := NewRandomizedResponse(1)
	mut, _ := NewRandomizedResponse(2)
	run := func(seed uint64, m *RandomizedResponse) func() (audit.Result, error) {
		return func() (audit.Result, error) {
			return audit.Bool(rng.Seeded(seed),
				func(r *rng.Rand) bool { return m.Release(r, false) },
				func(r *rng.Rand) bool { return m.Release(r, true) }, cfg(0))
		}
	}
	runAudits(t, []auditCase{{"randomized response", 1, 0, run(9, rr), run(10, mut), rr}})
}

// selectAudit audits a selection on the neighbouring score vectors s0, s1.
func selectAudit(seed uint64, sel func(*rng.Rand, []float64) int, s0, s1 []float64) func() (audit.Result, error) {
	return func() (audit.Result, error) {
		return audit.Discrete(rng.Seeded(seed),
			func(r *rng.Rand) int { return sel(r, s0) },
			func(r *rng.Rand) int { return sel(r, s1) }, cfg(0))
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
	runAudits(t, []auditCase{
		{"exponential", 1, 0, selectAudit(11, expSel(exp), e0, e1), selectAudit(12, expSel(&expMut), e0, e1), exp},
		{"report noisy max", 1, 0, selectAudit(13, rnmSel(rnm), []float64{0, 6}, []float64{1, 5}),
			selectAudit(14, rnmSel(&rnmMut), []float64{0, 6}, []float64{1, 5}), rnm},
		{"report noisy max monotone", 1, 0, selectAudit(15, rnmSel(mono), []float64{0, 3}, []float64{1, 3}),
			selectAudit(16, rnmSel(&monoMut), []float64{0, 3}, []float64{1, 3}), mono},
		// The mutant doubles ε, i.e. halves the per-item noise scale.
		{"noisy top-k", 1, 0, selectAudit(17, top1, []float64{0, 3}, []float64{1, 3}),
			selectAudit(18, top2, []float64{0, 3}, []float64{1, 3}), top1m},
	})
}
