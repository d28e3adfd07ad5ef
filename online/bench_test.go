package online

import (
	"fmt"
	"testing"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/rng"
)

// BenchmarkPFTL runs private FTL at the paper's Year-Prediction size,
// d = 90 (one op = the whole run of T rounds): go test -run x -bench
// 'PFTL/T=500000' -benchtime 1x ./online/. batch=1 is Algorithm 4 (a
// d×d solve and a node's d(d+1)/2 exact discrete Gaussians per round);
// batch=32 closes a tree leaf and solves once per 32 records.
func BenchmarkPFTL(b *testing.B) {
	const d = 90
	cost := Cost{Loss: Squared, Dim: d, FeatureBound: 1, LabelBound: 1, Alpha: 1, Radius: 1e9}
	data := synthetic(d, 4096, 1)
	for _, c := range []struct{ steps, batch int }{{500000, 32}, {500000, 1}, {20000, 1}} {
		b.Run(fmt.Sprintf("T=%d/batch=%d", c.steps, c.batch), func(b *testing.B) {
			for b.Loop() {
				cal, err := CalibrateFTL(cost, c.steps, c.batch, Calibration{Exact: true, Epsilon: 1, Delta: 0.01})
				if err != nil {
					b.Fatal(err)
				}
				l, _ := ledger.New(account.Budget{Epsilon: 10, Delta: 0.01})
				a, err := NewPFTL(cost, cal, l, []string{"bench"})
				if err != nil {
					b.Fatal(err)
				}
				r := rng.Seeded(1)
				for t := range c.steps - 1 {
					if err := a.Observe(r, data[t%len(data)]); err != nil {
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
