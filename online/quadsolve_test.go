package online

import (
	"fmt"
	"math"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
	"gonum.org/v1/gonum/mat"

	"github.com/dpal-dev/dpal/dp/mech"
	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/vec"
)

// The fast solver (certificates, warm conjugate gradients, floorSolver)
// agrees with the dense reference (gonum's eigendecomposition with the
// floor at tα/2, every round) to its stated tolerance, on a noisy stream
// that is indefinite early on, so that every path of the solver is taken.
func TestQuadSolverMatchesExact(t *testing.T) {
	for _, c := range []struct {
		name  string
		d     int
		noise float64
		tol   float64
	}{
		{"d=8/noisy", 8, 20, privateTol}, {"d=30/noisy", 30, 15, privateTol},
		{"d=8/noisy/exactTol", 8, 20, exactTol}, {"d=30/noisy/exactTol", 30, 15, exactTol},
		{"d=8/exact", 8, 0, exactTol},
	} {
		t.Run(c.name, func(t *testing.T) {
			cost := Cost{Loss: Squared, Dim: c.d, FeatureBound: 1, LabelBound: 1, Alpha: 1, Radius: math.Inf(1)}
			fast, exact := newQuadSolver(cost, c.tol), newQuadSolver(cost, c.tol)
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
				ta := float64(tt) * cost.Alpha
				exact.unpack(exact.work, vhat, ta)
				if _, _, err := exact.denseFloorSolve(ta, u); err != nil {
					t.Fatal(err)
				}
				copy(exact.x, exact.y)
				vec.ProjectBall(exact.x, exact.bound())
				diff := make([]float64, c.d)
				for j := range diff {
					diff[j] = fast.x[j] - exact.x[j]
				}
				if e := vec.Norm(diff); e > 10*c.tol*vec.Norm(exact.y)+1e-300 {
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

// floorSolver agrees with the dense eigendecomposition on matrices that
// stress the QR steps: clustered, repeated and zero eigenvalues, a
// diagonal (already deflated) matrix, widely spread scales, and floors
// that bind none, some or all of the eigenvalues.
func TestFloorSolverMatchesDense(t *testing.T) {
	r := rng.Seeded(6)
	gauss := func(n int, scale float64) []float64 {
		a := make([]float64, n*n)
		for i := range n {
			for j := i; j < n; j++ {
				a[i*n+j] = scale * r.NormFloat64()
				a[j*n+i] = a[i*n+j]
			}
		}
		return a
	}
	// spectrum returns Q·diag(vals)·Qᵀ for a random orthogonal Q.
	spectrum := func(vals []float64) []float64 {
		n := len(vals)
		var qr mat.QR
		qr.Factorize(mat.NewDense(n, n, gauss(n, 1)))
		var q mat.Dense
		qr.QTo(&q)
		var m mat.Dense
		m.Mul(&q, mat.NewDiagDense(n, vals))
		m.Mul(&m, q.T())
		a := make([]float64, n*n)
		for i := range n {
			for j := range n {
				a[i*n+j] = (m.At(i, j) + m.At(j, i)) / 2
			}
		}
		return a
	}
	repeated := func(n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(i%3) - 1 // −1, 0, 1, each n/3 times
		}
		return v
	}
	diag := func(n int) []float64 {
		a := make([]float64, n*n)
		for i := range n {
			a[i*n+i] = float64(n/2 - i)
		}
		return a
	}
	for _, c := range []struct {
		name  string
		a     []float64
		floor float64
	}{
		{"d=1", []float64{-3}, 0.5},
		{"d=2", []float64{1, 2, 2, 1}, 0.5},
		{"d=90/gauss/some", gauss(90, 1), 2},
		{"d=31/gauss/some", gauss(31, 1), 1},
		{"d=90/gauss/none", gauss(90, 1), -100},
		{"d=90/gauss/all", gauss(90, 1), 100},
		{"d=90/spread", gauss(90, 1e6), 1},
		{"d=30/repeated", spectrum(repeated(30)), 0.5},
		{"d=30/cluster", spectrum(append(make([]float64, 25), 1e-12, 2e-12, 1, 1+1e-14, 5)), 1e-3},
		{"d=12/diagonal", diag(12), 0.5},
		{"d=5/zero", make([]float64, 25), 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := int(math.Sqrt(float64(len(c.a))))
			cost := Cost{Loss: Squared, Dim: n, FeatureBound: 1, LabelBound: 1, Alpha: 1, Radius: math.Inf(1)}
			s := newQuadSolver(cost, exactTol)
			u := make([]float64, n)
			for i := range u {
				u[i] = r.NormFloat64()
			}
			got := make([]float64, n)
			lmin, floored, ok := s.floor.solve(packSym(c.a, n), 0, c.floor, u, got)
			if !ok {
				t.Fatal("no convergence")
			}
			copy(s.work, c.a)
			wantMin, wantFloored, err := s.denseFloorSolve(2*c.floor, u)
			if err != nil {
				t.Fatal(err)
			}
			diff := make([]float64, n)
			for i := range diff {
				diff[i] = got[i] - s.y[i]
			}
			scale := math.Max(math.Abs(wantMin), mat.Norm(mat.NewDense(n, n, c.a), 2))
			if e := vec.Norm(diff); e > 1e-12*vec.Norm(s.y) {
				t.Fatalf("‖y − y_dense‖ = %v, ‖y_dense‖ = %v", e, vec.Norm(s.y))
			}
			if math.Abs(lmin-wantMin) > 1e-13*math.Max(1, scale) || floored != wantFloored {
				t.Fatalf("λ_min %v, %d floored; want %v, %d", lmin, floored, wantMin, wantFloored)
			}
			checkCholesky(t, s.floor, c.a, -wantMin, math.Max(1, scale))
		})
	}
}

// checkCholesky checks floorSolver.cholesky against lapack64.Potrf on
// a + shift·I for shifts just above and below −λ_min(a) (to a relative 10⁻⁶
// of scale ≥ ‖a‖₂) and zero: the same verdict, and the same factor to
// rounding where it succeeds.
func checkCholesky(t *testing.T, f *floorSolver, a []float64, shift, scale float64) {
	t.Helper()
	n := f.n
	for _, sh := range []float64{shift + 1e-6*scale, shift - 1e-6*scale, 0} {
		got := f.cholesky(packSym(a, n), sh)
		dense := append([]float64(nil), a...)
		for i := range n {
			dense[i*n+i] += sh
		}
		_, want := lapack64.Potrf(blas64.Symmetric{N: n, Stride: n, Data: dense, Uplo: blas.Upper})
		if got != want {
			t.Fatalf("shift %v: Cholesky %v, Potrf %v", sh, got, want)
		}
		for i := range n * btoi(want) {
			for j := i; j < n; j++ {
				if e := f.a[f.start[i]+j-i] - dense[i*n+j]; math.Abs(e) > 1e-10*math.Sqrt(scale+math.Abs(sh)) {
					t.Fatalf("shift %v: U[%d, %d] = %v, Potrf %v", sh, i, j, f.a[f.start[i]+j-i], dense[i*n+j])
				}
			}
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// packSym is the packed form of the n×n row-major symmetric a
// (mech.PackOuter's layout: off-diagonal entries times √2).
func packSym(a []float64, n int) []float64 {
	p := make([]float64, 0, mech.SymDim(n))
	for i := range n {
		p = append(p, a[i*n+i])
		for j := i + 1; j < n; j++ {
			p = append(p, math.Sqrt2*a[i*n+j])
		}
	}
	return p
}

// The packed product's assembly route agrees with the Go one to rounding,
// and the Go one with a dense product (the fused product, symPackedMulDist,
// too, and its distance with a plain sum), for sizes that exercise every tail
// of the loop (odd d: the last single row).
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
			for j := range got {
				got[j] = float64(j)
				want[j] = got[j]
			}
			symPackedMul(got, packed, w, 0.7, 1.3)
			symPackedMulGo(want, packed, w, 0.7, 1.3)
			dense := make([]float64, d*d)
			mech.UnpackSym(dense, packed, d) // off-diagonal entries /√2
			for i := range d {
				ref := float64(i) + (1.3+dense[i*d+i])*w[i]
				for j := range d {
					if j != i {
						ref += 0.7 * math.Sqrt2 * dense[i*d+j] * w[j]
					}
				}
				if math.Abs(want[i]-ref) > 1e-12*float64(d)*(1+math.Abs(ref)) {
					t.Fatalf("Go route, entry %d: %v, want %v", i, want[i], ref)
				}
			}
			ref, fused := make([]float64, len(packed)), make([]float64, d)
			var sq float64
			for k := range ref {
				ref[k] = r.NormFloat64()
				sq += (packed[k] - ref[k]) * (packed[k] - ref[k])
			}
			for j := range fused {
				fused[j] = float64(j)
			}
			dist := symPackedMulDist(fused, packed, ref, w, 0.7, 1.3)
			if math.Abs(dist-sq) > 1e-13*(1+sq) {
				t.Fatalf("distance %v, want %v", dist, sq)
			}
			for j := range got {
				if math.Abs(got[j]-want[j]) > 1e-13*float64(d)*(1+math.Abs(want[j])) {
					t.Fatalf("entry %d: %v, want %v", j, got[j], want[j])
				}
				if math.Abs(fused[j]-want[j]) > 1e-13*float64(d)*(1+math.Abs(want[j])) {
					t.Fatalf("fused, entry %d: %v, want %v", j, fused[j], want[j])
				}
			}
		})
	}
}

// Conjugate gradients' vector step: the assembly route agrees with the Go
// one to rounding, in y, r and both sums, for sizes that exercise the tail.
func TestCGUpdateRoutes(t *testing.T) {
	r := rng.Seeded(5)
	for _, n := range []int{0, 1, 7, 8, 9, 17, 90} {
		vecs := make([][]float64, 6) // y, r, p, q; then copies of y, r
		for i := range vecs {
			vecs[i] = make([]float64, n)
		}
		for i := range 4 {
			for k := range vecs[i] {
				vecs[i][k] = r.NormFloat64()
			}
		}
		copy(vecs[4], vecs[0])
		copy(vecs[5], vecs[1])
		rr, yy := cgUpdate(vecs[0], vecs[1], vecs[2], vecs[3], 0.3)
		wantRR, wantYY := cgUpdateGo(vecs[4], vecs[5], vecs[2], vecs[3], 0.3)
		close := func(a, b float64) bool { return math.Abs(a-b) <= 1e-13*(1+math.Abs(b)) }
		if !close(rr, wantRR) || !close(yy, wantYY) {
			t.Fatalf("n=%d: sums %v, %v, want %v, %v", n, rr, yy, wantRR, wantYY)
		}
		for k := range n {
			if !close(vecs[0][k], vecs[4][k]) || !close(vecs[1][k], vecs[5][k]) {
				t.Fatalf("n=%d, entry %d: y %v r %v, want %v, %v", n, k, vecs[0][k], vecs[1][k], vecs[4][k], vecs[5][k])
			}
		}
	}
}

// The packed rank-2 update's assembly route agrees with the Go one to
// rounding, for sizes that exercise every tail of the loop.
func TestSymRank2Routes(t *testing.T) {
	r := rng.Seeded(7)
	for _, m := range []int{1, 2, 3, 4, 5, 8, 9, 12, 13, 17, 89} {
		b := make([]float64, mech.SymDim(m))
		vs := make([][]float64, 4)
		for i := range vs {
			vs[i] = make([]float64, m)
		}
		for _, x := range append(vs, b) {
			for k := range x {
				x[k] = r.NormFloat64()
			}
		}
		want := append([]float64(nil), b...)
		symRank2(b, vs[0], vs[1], vs[2], vs[3], -0.7)
		symRank2Go(want, vs[0], vs[1], vs[2], vs[3], -0.7)
		for k := range b {
			if math.Abs(b[k]-want[k]) > 1e-13*(1+math.Abs(want[k])) {
				t.Fatalf("m=%d, entry %d: %v, want %v", m, k, b[k], want[k])
			}
		}
	}
}
