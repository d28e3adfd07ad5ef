package online

import (
	"fmt"
	"testing"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/vec"
)

// BenchmarkPFTL runs private FTL at the paper's Year-Prediction size,
// d = 90 (one op = the whole run of T rounds): go test -run x -bench
// 'PFTL/T=500000/batch=1' -benchtime 1x -cpu 1 ./online/. batch=1 is
// Algorithm 4 (a solve and a tree node of d(d+1)/2 exact discrete
// Gaussians per round); batch=32 closes a tree leaf and solves once per 32
// records; trees-only runs the two trees of batch=1 without the solves, the
// noise floor of Algorithm 4. The metrics count the solver's paths
// (SolverStats).
func BenchmarkPFTL(b *testing.B) {
	const d = 90
	cost := Cost{Loss: Squared, Dim: d, FeatureBound: 1, LabelBound: 1, Alpha: 1, Radius: 1e9}
	data := synthetic(d, 4096, 1)
	for _, c := range []struct {
		steps, batch int
		treesOnly    bool
	}{{500000, 32, false}, {500000, 1, false}, {500000, 1, true}, {20000, 1, false}, {20000, 1, true}} {
		name := fmt.Sprintf("T=%d/batch=%d", c.steps, c.batch)
		if c.treesOnly {
			name = fmt.Sprintf("T=%d/trees-only", c.steps)
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				a := benchPFTL(b, cost, c.steps, c.batch)
				r := rng.Seeded(1)
				for t := range c.steps - 1 {
					ex := data[t%len(data)]
					if c.treesOnly {
						benchTrees(b, a, r, ex)
					} else if err := a.Observe(r, ex); err != nil {
						b.Fatal(err)
					}
				}
				st := a.SolverStats()
				b.ReportMetric(float64(st.Eigen), "eigen")
				b.ReportMetric(float64(st.Cholesky), "cholesky")
				b.ReportMetric(float64(st.Certified), "certified")
				b.ReportMetric(float64(st.CGIterations)/float64(max(1, st.Solves-st.Eigen)), "cg-iter/solve")
			}
		})
	}
}

// benchPFTL is PFTL at ε = 1, δ = 0.01, exact calibration.
func benchPFTL(b *testing.B, cost Cost, steps, batch int) *PFTL {
	cal, err := CalibrateFTL(cost, steps, batch, Calibration{Exact: true, Epsilon: 1, Delta: 0.01})
	if err != nil {
		b.Fatal(err)
	}
	l, _ := ledger.New(account.Budget{Epsilon: 10, Delta: 0.01})
	a, err := NewPFTL(cost, cal, l, []string{"bench"})
	if err != nil {
		b.Fatal(err)
	}
	return a
}

// benchTrees feeds ex to a's two trees and closes their leaves, as
// Observe does at batch 1, without the solve.
func benchTrees(b *testing.B, a *PFTL, r *rng.Rand, ex Example) {
	for j, x := range ex.V {
		a.yv[j] = ex.Y * x
	}
	vec.ProjectBall(a.yv, a.ut.Bound())
	if err := a.vt.AccumulateOuter(ex.V, 1); err != nil {
		b.Fatal(err)
	}
	if err := a.ut.Accumulate(a.yv); err != nil {
		b.Fatal(err)
	}
	if _, err := a.vt.Flush(r); err != nil {
		b.Fatal(err)
	}
	if _, err := a.ut.Flush(r); err != nil {
		b.Fatal(err)
	}
}
