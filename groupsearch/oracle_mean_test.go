package groupsearch

import (
	"testing"

	"github.com/dpal-dev/dpal/dp/mech"
	"github.com/dpal-dev/dpal/dp/rng"
)

// TestMeanOracleSensitivity checks each mean answer against its stated
// sensitivity on anomaly-restricted neighbours that differ in one member of
// Q. With the same seed both oracles draw the same noise, so the complement's
// answer must be bit-identical and Q's must move by at most the grid
// sensitivity ⌊Δ/g⌋+1 steps, Δ = t_ℓ/|Q|. An anomaly just below 2^40 in
// the small complement puts the float total just above 2^40, so a complement
// sum computed as total − sum_Q carries Q's rounding (the bug this guards
// against); a score of 1e300 exercises the cap.
func TestMeanOracleSensitivity(t *testing.T) {
	p := Params{TLow: 1, THigh: 2, Epsilon: 1}
	const nq = 40
	for _, c := range []struct {
		name    string
		anomaly float64
		from    float64
		to      float64
	}{
		{"huge anomaly", 1<<40 - 10, 0.3, 0.7},
		{"moderate anomaly", 1234.5678, 0.1, 0.9},
		{"whole range", 3, 0, 1},
		{"at the anomaly cap", 1e300, 1, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := rng.Seeded(5)
			base := make([]float64, nq+3)
			for i := range nq {
				base[i] = r.Float64()
			}
			base[nq], base[nq+1], base[nq+2] = c.anomaly, 0.5, 0.25 // the complement
			q := make([]int32, nq)
			for i := range q {
				q[i] = int32(i)
			}
			for trial := range 50 {
				var resp [2]Response
				for k, x := range []float64{c.from, c.to} {
					xs := append([]float64(nil), base...)
					xs[trial%nq] = x
					o, err := NewOracle(Mean, xs, p, newLedger(t, 1e9), "mean", rng.Seeded(uint64(trial)))
					if err != nil {
						t.Fatal(err)
					}
					if resp[k], err = o.Ask(q); err != nil {
						t.Fatal(err)
					}
				}
				if resp[0].YBar != resp[1].YBar {
					t.Fatalf("trial %d: complement's answer moved from %v to %v; it holds no changed score", trial, resp[0].YBar, resp[1].YBar)
				}
				lap, err := mech.NewLaplace(p.Epsilon, p.TLow/nq)
				if err != nil {
					t.Fatal(err)
				}
				g := lap.Granularity()
				steps := (resp[0].Y - resp[1].Y) / g
				if limit := float64(int(p.TLow/nq/g) + 1); steps > limit || steps < -limit {
					t.Fatalf("trial %d: Q's answer moved %v grid steps, sensitivity allows %v", trial, steps, limit)
				}
			}
		})
	}
}
