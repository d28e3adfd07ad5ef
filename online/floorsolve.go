package online

import (
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/lapack/gonum"
)

// floorSolver computes y = M_f⁻¹u, M_f the symmetric M with its
// eigenvalues floored at c, without forming M's eigenvectors: the
// eigendecomposition's O(d³) accumulation of rotations (Dsteqr's Dlasr,
// most of gonum's Dsyev at d = 90) is replaced by applying each rotation to
// the one vector it is needed for, O(1) a rotation.
//
// M = Q T Qᵀ by Householder tridiagonalisation (gonum's Dsytrd, lower
// triangle: Q = H_0·H_1···H_{d−2}), and T = Z Λ Zᵀ by implicit symmetric QR
// steps with the Wilkinson shift (Golub & Van Loan, Matrix Computations,
// 4th ed., Alg. 8.3.2, deflating on |e_i| ≤ ε(|a_i| + |a_{i+1}|)), so
// Z = R_1ᵀ·R_2ᵀ···R_Kᵀ for the Givens rotations R_k of the steps, in
// order. Then
//
//	y = Q·Z·diag(1/max(λ_i, c))·Zᵀ·Qᵀu,
//
// where Qᵀu applies H_0 first, Zᵀ applies R_1 first (as the steps run) and
// Z, Q apply the same factors in reverse (the rotations are kept). Both
// reductions are backward stable, as Dsyev is (they are its first and last
// stages), so y is M_f⁻¹u to the same rounding as with explicit
// eigenvectors.
type floorSolver struct {
	n              int
	diag, off, tau []float64
	work           []float64
	rot            []rotation
}

// rotation is a Givens rotation R = [c s; −s c] on coordinates (i, i+1).
type rotation struct {
	i    int
	c, s float64
}

func newFloorSolver(n int) *floorSolver {
	f := &floorSolver{n: n, diag: make([]float64, n), off: make([]float64, n), tau: make([]float64, max(1, n-1))}
	query := []float64{0}
	gonum.Implementation{}.Dsytrd(blas.Lower, n, nil, max(1, n), nil, nil, nil, query, -1)
	f.work = make([]float64, max(1, int(query[0])))
	return f
}

// solve sets y = M_f⁻¹u for the d×d row-major symmetric a (overwritten)
// and floor c, and returns λ_min(M) and how many eigenvalues were floored;
// ok is false if the QR steps did not converge (then y is unset).
func (f *floorSolver) solve(a []float64, c float64, u, y []float64) (lmin float64, floored int, ok bool) {
	n := f.n
	if n == 0 {
		return math.Inf(1), 0, true
	}
	gonum.Implementation{}.Dsytrd(blas.Lower, n, a, n, f.diag, f.off[:n-1], f.tau, f.work, len(f.work))
	f.off[n-1] = 0
	copy(y, u)
	for i := range n - 1 { // y = Qᵀu
		f.reflect(a, i, y)
	}
	if !f.eigen(y) { // y = ZᵀQᵀu, f.diag = Λ
		return 0, 0, false
	}
	lmin = math.Inf(1)
	for i, l := range f.diag {
		lmin = min(lmin, l)
		if l < c {
			floored++
		}
		y[i] /= max(l, c)
	}
	for k := len(f.rot) - 1; k >= 0; k-- { // y = Z·y
		r := f.rot[k]
		yi, yj := y[r.i], y[r.i+1]
		y[r.i], y[r.i+1] = r.c*yi-r.s*yj, r.s*yi+r.c*yj
	}
	for i := n - 2; i >= 0; i-- { // y = Q·y
		f.reflect(a, i, y)
	}
	return lmin, floored, true
}

// reflect applies H_i = I − τ_i·v·vᵀ to y, with v_{0..i} = 0, v_{i+1} = 1
// and v_{i+2..} in column i of a below the subdiagonal (Dsytrd, lower).
func (f *floorSolver) reflect(a []float64, i int, y []float64) {
	n := f.n
	dot := y[i+1]
	for k := i + 2; k < n; k++ {
		dot += a[k*n+i] * y[k]
	}
	dot *= f.tau[i]
	y[i+1] -= dot
	for k := i + 2; k < n; k++ {
		y[k] -= dot * a[k*n+i]
	}
}

// eigen diagonalises the tridiagonal (f.diag, f.off) in place by implicit
// QR steps, applying each rotation to y as it is made (y ← Zᵀy) and
// keeping it in f.rot; false if it takes more than 30 steps an eigenvalue.
func (f *floorSolver) eigen(y []float64) bool {
	a, e := f.diag, f.off
	f.rot = f.rot[:0]
	scale := 0.0 // the steps run on T/scale, so that squares neither overflow nor underflow
	for i := range a {
		scale = max(scale, math.Abs(a[i]), math.Abs(e[i]))
	}
	if scale == 0 {
		return true
	}
	for i := range a {
		a[i] /= scale
		e[i] /= scale
	}
	const eps = 0x1p-53
	steps := 0
	for hi := f.n - 1; hi > 0; {
		for i := range hi {
			if math.Abs(e[i]) <= eps*(math.Abs(a[i])+math.Abs(a[i+1])) {
				e[i] = 0
			}
		}
		if e[hi-1] == 0 {
			hi--
			continue
		}
		lo := hi - 1
		for lo > 0 && e[lo-1] != 0 {
			lo--
		}
		if steps++; steps > 30*f.n {
			return false
		}
		f.qrStep(lo, hi, y)
	}
	for i := range a {
		a[i] *= scale
	}
	return true
}

// qrStep is one implicit symmetric QR step with the Wilkinson shift on the
// unreduced block lo..hi of the tridiagonal (Golub & Van Loan, Alg. 8.3.2):
// a rotation of rows lo, lo+1 introduces a bulge that the following
// rotations chase down and out of the block.
func (f *floorSolver) qrStep(lo, hi int, y []float64) {
	a, e := f.diag, f.off
	h := (a[hi-1] - a[hi]) / 2
	b := e[hi-1]
	mu := a[hi] - b*b/(h+math.Copysign(math.Sqrt(h*h+b*b), h))
	x, z := a[lo]-mu, e[lo]
	for k := lo; k < hi; k++ {
		r := math.Sqrt(x*x + z*z)
		c, s := 1.0, 0.0
		if r != 0 {
			c, s = x/r, z/r
		}
		if k > lo {
			e[k-1] = r // the bulge z at (k−1, k+1) is rotated into (k−1, k)
		}
		ak, ak1, bk := a[k], a[k+1], e[k]
		a[k] = c*c*ak + 2*c*s*bk + s*s*ak1
		a[k+1] = s*s*ak - 2*c*s*bk + c*c*ak1
		e[k] = c*s*(ak1-ak) + (c*c-s*s)*bk
		if k+1 < hi {
			x, z = e[k], s*e[k+1]
			e[k+1] *= c
		}
		yk, yk1 := y[k], y[k+1]
		y[k], y[k+1] = c*yk+s*yk1, c*yk1-s*yk
		f.rot = append(f.rot, rotation{k, c, s})
	}
}
