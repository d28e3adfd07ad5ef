package online

import (
	"fmt"
	"math"
	"testing"

	"github.com/dpal-dev/dpal/dp/mech"
	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/vec"
)

// The fast solver (certificates, warm conjugate gradients) agrees with the
// exact one (an eigendecomposition with the floor at tα/2 every round) to
// its stated tolerance, on a noisy stream that is indefinite early on, so
// that every path of the solver is taken.
func TestQuadSolverMatchesExact(t *testing.T) {
	for _, c := range []struct {
		name  string
		d     int
		noise float64
	}{{"d=8/noisy", 8, 20}, {"d=30/noisy", 30, 15}, {"d=8/exact", 8, 0}} {
		t.Run(c.name, func(t *testing.T) {
			cost := Cost{Loss: Squared, Dim: c.d, FeatureBound: 1, LabelBound: 1, Alpha: 1, Radius: math.Inf(1)}
			fast, exact := newQuadSolver(cost), newQuadSolver(cost)
			r := rng.Seeded(5)
			data := synthetic(c.d, 800, 9)
			v, u := make([]float64, mech.SymDim(c.d)), make([]float64, c.d)
			noise, atom := make([]float64, len(v)), make([]float64, len(v))
			vhat := make([]float64, len(v))
			for step, ex := range data {
				tt := step + 1
				mech.PackOuter(atom, ex.V, 1)
				for k := range v {
					v[k] += atom[k]
					if tt%16 == 1 { // the tree's noise changes in jumps
						noise[k] = c.noise * r.NormFloat64()
					}
					vhat[k] = v[k] + noise[k]
				}
				for j, x := range ex.V {
					u[j] += ex.Y * x
				}
				if err := fast.solve(tt, vhat, u); err != nil {
					t.Fatal(err)
				}
				if err := exact.eigenSolve(float64(tt)*cost.Alpha, vhat, u); err != nil {
					t.Fatal(err)
				}
				diff := make([]float64, c.d)
				for j := range diff {
					diff[j] = fast.x[j] - exact.x[j]
				}
				if e := vec.Norm(diff); e > 1e-8*vec.Norm(exact.y)+1e-300 {
					t.Fatalf("t=%d: ‖x − x_exact‖ = %v, ‖x_exact‖ = %v", tt, e, vec.Norm(exact.y))
				}
			}
			st := fast.stats
			if st.Solves != len(data) || st.Certified == 0 || st.CGIterations == 0 {
				t.Fatalf("stats %+v", st)
			}
			if c.noise > 0 && (st.Floors == 0 || st.Cholesky == 0) {
				t.Fatalf("a noisy stream should take every path: %+v", st)
			}
			t.Logf("%+v", st)
		})
	}
}

// The packed product's assembly route agrees with the Go one to rounding,
// for sizes that exercise every tail of its loop.
func TestSymPackedRoutes(t *testing.T) {
	r := rng.Seeded(3)
	for _, d := range []int{1, 2, 3, 4, 5, 8, 9, 12, 13, 17, 90} {
		t.Run(fmt.Sprintf("d=%d", d), func(t *testing.T) {
			packed, w := make([]float64, mech.SymDim(d)), make([]float64, d)
			for k := range packed {
				packed[k] = r.NormFloat64()
			}
			for k := range w {
				w[k] = r.NormFloat64()
			}
			got, want := make([]float64, d), make([]float64, d)
			symPacked(got, packed, w)
			symPackedGo(want, packed, w)
			for j := range got {
				if math.Abs(got[j]-want[j]) > 1e-13*float64(d)*(1+math.Abs(want[j])) {
					t.Fatalf("entry %d: %v, want %v", j, got[j], want[j])
				}
			}
		})
	}
}

// The squared distance's assembly route agrees with the Go one to rounding.
func TestSqDistRoutes(t *testing.T) {
	r := rng.Seeded(4)
	for _, n := range []int{0, 1, 3, 15, 16, 17, 33, 4095} {
		a, b := make([]float64, n), make([]float64, n)
		for k := range a {
			a[k], b[k] = r.NormFloat64(), r.NormFloat64()
		}
		got, want := sqDist(a, b), sqDistGo(a, b)
		if math.Abs(got-want) > 1e-13*(1+want) {
			t.Fatalf("n=%d: %v, want %v", n, got, want)
		}
	}
}
