package online

import (
	"math"

	"gonum.org/v1/gonum/floats"
)

// floorSolver computes y = M_f⁻¹u, M_f the symmetric M with its
// eigenvalues floored at c, without forming M's eigenvectors: the
// eigendecomposition's O(d³) accumulation of rotations (Dsteqr's Dlasr,
// most of gonum's Dsyev at d = 90) is replaced by applying each rotation to
// the one vector it is needed for, O(1) a rotation.
//
// M = Q T Qᵀ by Householder tridiagonalisation (tridiagonalise, on the
// packed triangle: Q = H_0·H_1···H_{d−3}), and T = Z Λ Zᵀ by implicit
// symmetric QR steps with the Wilkinson shift (Golub & Van Loan, Matrix
// Computations, 4th ed., Alg. 8.3.2, deflating on
// |e_i| ≤ 2⁻⁵³(|a_i| + |a_{i+1}|)), so Z = R_1ᵀ·R_2ᵀ···R_Kᵀ for the Givens
// rotations R_k of the steps, in order. Then
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
	a              []float64 // packed upper triangle, unscaled: row i is A[i, i:] from start[i]
	start          []int
	diag, off, tau []float64
	p              []float64 // tridiagonalise's scratch
	rot            []rotation
}

// rotation is a Givens rotation R = [c s; −s c] on coordinates (i, i+1).
type rotation struct {
	i    int
	c, s float64
}

func newFloorSolver(n int) *floorSolver {
	f := &floorSolver{n: n, a: make([]float64, n*(n+1)/2), start: make([]int, n),
		diag: make([]float64, n), off: make([]float64, n), tau: make([]float64, n), p: make([]float64, n)}
	for i := 1; i < n; i++ {
		f.start[i] = f.start[i-1] + n - i + 1
	}
	return f
}

// solve sets y = M_f⁻¹u for M = V + shift·I, V packed isometrically
// (mech.PackOuter: off-diagonal entries times √2), and floor c, and
// returns λ_min(M) and how many eigenvalues were floored; ok is false if
// the QR steps did not converge (then y is unset).
func (f *floorSolver) solve(packed []float64, shift, c float64, u, y []float64) (lmin float64, floored int, ok bool) {
	n := f.n
	if n == 0 {
		return math.Inf(1), 0, true
	}
	f.load(packed, shift)
	f.tridiagonalise()
	copy(y, u)
	for i := range n - 2 { // y = Qᵀu
		f.reflect(i, y)
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
	for i := n - 3; i >= 0; i-- { // y = Q·y
		f.reflect(i, y)
	}
	return lmin, floored, true
}

// load sets f.a to V + shift·I for V packed isometrically (off-diagonal
// entries divided by √2).
func (f *floorSolver) load(packed []float64, shift float64) {
	for i, k := range f.start {
		row, src := f.a[k:k+f.n-i], packed[k:k+f.n-i]
		row[0] = src[0] + shift
		floats.ScaleTo(row[1:], 1/math.Sqrt2, src[1:])
	}
}

// cholesky reports whether V + shift·I (V packed isometrically) is
// numerically positive definite: whether its Cholesky factorisation
// A = UᵀU runs to the end with positive pivots. It is right-looking on the
// packed triangle, two pivots a step: rows k and k+1 of U (row k+1 first
// less its outer product with row k), then the trailing triangle less both
// outer products in one pass (symRank2); Dpotf2's arithmetic in another
// order, so with the same backward error bound. At d = 90 it takes less
// than half of lapack64.Potrf's time on a d×d copy (quadSolver).
func (f *floorSolver) cholesky(packed []float64, shift float64) bool {
	f.load(packed, shift)
	n := f.n
	for k := 0; k < n; k += 2 {
		u := f.pivot(k)
		if u == nil {
			return false
		}
		if k+1 == n {
			break
		}
		next := f.a[f.start[k+1] : f.start[k+1]+n-k-1]
		floats.AddScaled(next, -u[0], u)
		w := f.pivot(k + 1)
		if w == nil {
			return false
		}
		if k+2 < n {
			symRank2(f.a[f.start[k+2]:], u[1:], u[1:], w, w, -1)
		}
	}
	return true
}

// pivot turns row k of f.a into row k of U (÷ √pivot) and returns its
// entries right of the diagonal, or nil if the pivot is not positive.
func (f *floorSolver) pivot(k int) []float64 {
	row := f.a[f.start[k] : f.start[k]+f.n-k]
	if !(row[0] > 0) { // NaN too
		return nil
	}
	r := math.Sqrt(row[0])
	row[0] = r
	floats.Scale(1/r, row[1:])
	return row[1:]
}

// tridiagonalise reduces f.a to the tridiagonal (f.diag, f.off) by
// Householder reflectors H_i = I − τ_i·v·vᵀ on coordinates i+1.., which
// zero row i beyond its first off-diagonal entry (as LAPACK's dlarfg and
// dsytd2, unblocked): v is kept in row i from its entry (i, i+1), which
// becomes v's leading 1. The two-sided update of the trailing triangle B,
// B − v·wᵀ − w·vᵀ with w = τBv − (τ²/2)(vᵀBv)·v, runs on the packed rows
// with the product kernel of mulPacked (symPackedMul) for Bv and one
// rank-2 pass (symRank2) for the update.
func (f *floorSolver) tridiagonalise() {
	n := f.n
	for i := range n {
		row := f.a[f.start[i] : f.start[i]+n-i]
		f.diag[i], f.tau[i] = row[0], 0
		if i == n-1 {
			f.off[i] = 0
			continue
		}
		x := row[1:]
		f.off[i] = x[0]
		if i == n-2 {
			continue
		}
		alpha, xnorm := x[0], floats.Norm(x[1:], 2)
		if xnorm == 0 {
			continue // already reduced: H_i = I
		}
		beta := -math.Copysign(math.Hypot(alpha, xnorm), alpha)
		f.tau[i], f.off[i] = (beta-alpha)/beta, beta
		floats.Scale(1/(alpha-beta), x[1:])
		x[0] = 1
		f.update(f.a[f.start[i+1]:], x, f.tau[i])
	}
}

// update sets the packed m×m triangle b to H·B·H for H = I − τ·v·vᵀ.
func (f *floorSolver) update(b, v []float64, tau float64) {
	m := len(v)
	w := f.p[:m]
	clear(w)
	symPackedMul(w, b, v, 1, 0)
	floats.Scale(tau, w)
	floats.AddScaled(w, -tau/2*floats.Dot(w, v), v)
	symRank2(b, v, w, w, v, -1)
}

// symRank2Go adds α·(p·qᵀ + r·sᵀ) to the upper triangle of the packed
// m×m b (m = len(p); row j holds the entries (j, j..m−1)).
func symRank2Go(b, p, q, r, s []float64, alpha float64) {
	k, m := 0, len(p)
	for j := range m {
		row := b[k : k+m-j]
		floats.AddScaled(row, alpha*p[j], q[j:])
		floats.AddScaled(row, alpha*r[j], s[j:])
		k += m - j
	}
}

// reflect applies H_i to y.
func (f *floorSolver) reflect(i int, y []float64) {
	if f.tau[i] == 0 {
		return
	}
	n := f.n
	v := f.a[f.start[i]+1 : f.start[i]+n-i]
	floats.AddScaled(y[i+1:], -f.tau[i]*floats.Dot(v, y[i+1:]), v)
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
		lo := hi // the unreduced block ending at hi starts at lo
		for ; lo > 0; lo-- {
			if math.Abs(e[lo-1]) <= eps*(math.Abs(a[lo-1])+math.Abs(a[lo])) {
				e[lo-1] = 0
				break
			}
		}
		if lo == hi {
			hi--
			continue
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
			inv := 1 / r
			c, s = x*inv, z*inv
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
