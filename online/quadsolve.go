package online

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/dpal-dev/dpal/dp/mech"
	"github.com/dpal-dev/dpal/vec"
)

// The conjugate-gradient tolerances: a solve stops when
// ‖My − u‖ ≤ tol·(tα/2)·‖y‖, which, with λ_min(M) ≥ tα/2 certified, bounds
// the error ‖y − M⁻¹u‖ ≤ tol·‖y‖.
//
// privateTol (PFTL): the iterate is post-processing of the trees' noisy
// sums, whose own effect on it is two orders of magnitude larger than this
// tolerance's: at the least noise of docs/repro-ocp.md (Fig. 2(a) and (b)
// settings, ε = 10, exact calibration), ‖x̂_t − x_t‖ ≥ 1.0·10⁻³‖x_t‖
// (synthetic; Beijing 1.3·10⁻³) for every t ≥ 1000, x_t non-private FTL's
// iterate. Against the previous tolerance 10⁻⁶, PFTL's iterates moved by
// at most 7.2·10⁻⁶ relative and its average regret at T by at most
// 9.3·10⁻⁸ relative, over ε ∈ {10, 1, 0.1, 0.01}, both calibrations, both
// data sets (Benchmark in docs/repro-ocp.md): ≥ 140× below the noise's
// effect. It takes 2.31 iterations a solve at d = 90, T = 5·10⁵, against
// 2.83 at 10⁻⁶ and 4.24 at 10⁻⁹.
//
// exactTol (QFTL): the non-private baseline stays the minimiser to 10⁻⁹.
const (
	privateTol = 1e-5
	exactTol   = 1e-9
)

// quadSolver computes FTL's iterate x = Π(M_f⁻¹u) for M = tαI + V, V a
// packed symmetric matrix (mech.PackOuter): M_f is M with its eigenvalues
// floored at tα/2, since a noisy V̂ may be indefinite (spec N11(f)), and Π
// projects onto the ball of radius R·B/α (N6). For PFTL every step is
// post-processing of the trees' outputs, so the solver's tolerance costs no
// privacy.
//
// An eigendecomposition per round (O(d³), the paper's (tαI + V̂)⁻¹ taken
// literally) is avoided where a cheap certificate shows the floor is
// inactive, i.e. λ_min(V) ≥ −tα/2:
//  1. Weyl: λ_min(V) ≥ low − ‖V − ref‖_F, where ref is the V of the last
//     factorisation and low a lower bound on λ_min(ref); the packed form is
//     isometric, so ‖V − ref‖_F is a Euclidean distance, O(d²). It is
//     summed in the pass of conjugate gradients' first product, which
//     loads V anyway (symPackedMulDist: ref is the only extra read; at
//     d = 90, T = 5·10⁵ the 5·10⁵ fused products took 0.51–0.62 s of CPU,
//     where the distance's own pass took 0.27–0.30 s and as many plain
//     products ≈ 0.37 s).
//  2. Else a Cholesky factorisation of M − (3tα/4)I, or failing that of
//     M − (tα/2)I: success shows λ_min(V) ≥ −tα/4 (or −tα/2), and V
//     becomes ref with that low (certify; the first attempt is skipped
//     when Weyl's upper side says it would fail). The factorisation runs
//     on the packed triangle, two pivots a pass (floorSolver.cholesky:
//     the 7,726 certificates at d = 90, T = 5·10⁵ took 0.18–0.19 s of
//     CPU, against 0.39–0.47 s with lapack64.Potrf on a d×d copy).
//  3. Else the floor may be active: an eigendecomposition of M gives the
//     floored solution exactly, and V becomes ref with low = λ_min(V).
//     While the ref is an eigendecomposition's whose λ_min(V) is below
//     −tα/2, the solver goes to it directly, without the Cholesky
//     attempts that would likely fail (certainly, when Weyl's inequality
//     shows it; at d = 90, T = 5·10⁵ this saved about 3,100 failing
//     factorisations for 96 eigendecompositions whose floor did not
//     bind). This only picks the path: the eigendecomposition is exact
//     whether the floor binds or not. It never forms M's eigenvectors
//     (floorSolver: tridiagonalisation on the packed triangle, then QR
//     steps whose rotations are applied to the one vector u: at d = 90
//     0.33 ms a solve, against 1.7–2.1 ms for gonum's Dsyev with vectors,
//     whose Dsteqr accumulates every rotation into a d×d matrix; a
//     micro-benchmark, not kept); gonum's Dsyev (denseFloorSolve) is the
//     fallback should the QR steps not converge, and the tests' reference.
//
// With the floor certified inactive, Mx = u is solved by conjugate
// gradients warm-started at the previous solution (M's condition number is
// at most (tα + λ_max(V))/(tα/2), so few iterations are needed), to s.tol
// (privateTol, exactTol), stopping on the recursively updated residual:
// recomputing the true residual at the end cost one more product a solve
// (6.24 products for 4.24 iterations at d = 90, T = 5·10⁵), and the two
// differ by rounding, O(k·ε_mach·‖M‖·‖y‖) after k iterations, far below
// the tolerance (the true residual is recomputed on a restart, after 4d
// iterations without convergence). An iteration's vector updates are one
// pass (cgUpdate: y, r, ‖r‖² and ‖y‖², the last of which also spares the
// projection its own norm). Products multiply by M straight from V's
// packed form (mulPacked: measured at d = 90, 0.70 µs a product with
// the AVX2 kernel, 2.2 µs with gonum's kernels; a dense copy of M would
// multiply in 1.0 µs by gonum's Gemv but costs 3.5 µs a round to rebuild
// from the packed form). A Cholesky factor of a recent M as
// preconditioner does not pay here: the tree noise that changes every
// round moves M too much (measured at d = 90, T = 5000: a factor refreshed
// every 16 rounds still needed 8.0 iterations per solve over the last 80 %
// of the rounds, where plain CG averages 10.8 over the run; at T = 10⁵
// with a factor every 64 rounds, 4.5 against 5.4; docs/repro-ocp.md,
// Benchmark), and each iteration would add two triangular solves to the
// multiplication.
type quadSolver struct {
	cost    Cost
	d       int
	tol     float64   // privateTol or exactTol
	work    []float64 // scratch d×d: M for denseFloorSolve
	y       []float64 // M_f⁻¹u unprojected: the warm start
	x       []float64 // released: y projected onto the ball
	r, p, q []float64 // conjugate-gradient vectors
	ref     []float64 // packed V of the last factorisation; nil before it
	low     float64   // a lower bound on λ_min(ref)
	high    float64   // an upper bound on λ_min(ref) (+Inf when unknown)
	guess   float64   // an estimate of λ_min(ref) from above (certify)
	floor   *floorSolver
	eig     mat.EigenSym // denseFloorSolve's
	stats   SolverStats
}

// SolverStats counts how FTL's solves went (see quadSolver).
type SolverStats struct {
	// Solves is the number of solves; Certified of them passed the Weyl
	// certificate, Cholesky needed a factorisation to certify, and Eigen an
	// eigendecomposition, Floors of which floored an eigenvalue.
	Solves, Certified, Cholesky, Eigen, Floors int
	// CGIterations is the total number of conjugate-gradient iterations.
	CGIterations int
}

func newQuadSolver(cost Cost, tol float64) *quadSolver {
	d := cost.Dim
	return &quadSolver{cost: cost, d: d, tol: tol, work: make([]float64, d*d),
		y: make([]float64, d), x: make([]float64, d),
		r: make([]float64, d), p: make([]float64, d), q: make([]float64, d),
		floor: newFloorSolver(d)}
}

// solve sets x to the iterate for M = tαI + V (V packed) and u.
func (s *quadSolver) solve(t int, packed, u []float64) error {
	ta := float64(t) * s.cost.Alpha
	s.stats.Solves++
	// Weyl: |λ_min(V) − λ_min(ref)| ≤ ‖V − ref‖_F, in the same pass as
	// conjugate gradients' first product M·y (wasted only on the rare
	// eigendecomposition path).
	dist := math.Inf(1)
	if s.ref != nil {
		dist = math.Sqrt(symPackedMulDist(s.zero(s.q), packed, s.ref, s.y, 1/math.Sqrt2, ta)) * (1 + 1e-12)
	} else {
		s.mulPacked(s.q, ta, packed, s.y)
	}
	switch {
	case s.low-dist >= -ta/2:
		s.stats.Certified++
	case s.high < -ta/2:
		return s.eigenSolve(ta, packed, u) // the floor is likely active
	case s.certify(ta, packed, dist):
		s.stats.Cholesky++
	default:
		return s.eigenSolve(ta, packed, u)
	}
	ny, ok := s.conjugateGradients(ta, packed, u)
	if !ok {
		return s.eigenSolve(ta, packed, u) // not reached for a certified M; kept as a guard
	}
	s.release(ny)
	return nil
}

// release sets x = Π(y), given ny, ‖y‖ as the caller computed it (+Inf if
// unknown): a y clearly inside the ball (ny below the bound by a relative
// 10⁻¹², far more than the rounding of a sum of d squares) is copied
// without another pass; otherwise vec.ProjectBall decides.
func (s *quadSolver) release(ny float64) {
	copy(s.x, s.y)
	if ny <= s.bound()*(1-1e-12) {
		return
	}
	vec.ProjectBall(s.x, s.bound())
}

// certify tries the Cholesky certificates: margin tα/4 first, whose
// reference lets Weyl certify the following rounds, then margin 0. The
// first is skipped when it would likely fail, guess + dist < −tα/4 for
// guess an estimate of λ_min(ref) from above (Weyl: λ_min(V) ≤
// λ_min(ref) + dist): ref's exact λ_min after an eigendecomposition, −tα/4
// after a failed first attempt (at d = 90, T = 5·10⁵ this saved most of
// 1,822 failing factorisations, each run to pivot 59 of 90 on average).
// It only picks the path: any success certifies.
func (s *quadSolver) certify(ta float64, packed []float64, dist float64) bool {
	guess := s.guess + dist
	if !(guess < -ta/4) && s.cholesky(ta, packed, ta/4) {
		s.guess = math.Inf(1)
		return true
	}
	if !s.cholesky(ta, packed, 0) {
		return false
	}
	s.guess = min(guess, -ta/4+s.safety(ta, packed))
	return true
}

// cholesky reports whether M − (tα/2 + margin)I = V + (tα/2 − margin)I is
// numerically positive definite, and if so makes V the reference with
// λ_min(V) ≥ margin − tα/2.
func (s *quadSolver) cholesky(ta float64, packed []float64, margin float64) bool {
	if !s.floor.cholesky(packed, ta/2-margin) {
		return false
	}
	s.setRef(packed, margin-ta/2-s.safety(ta, packed), math.Inf(1))
	return true
}

// eigenSolve solves with the eigenvalues of M floored at tα/2
// (floorSolver, or denseFloorSolve should its QR steps not converge) and
// makes V the reference with its smallest eigenvalue.
func (s *quadSolver) eigenSolve(ta float64, packed, u []float64) error {
	s.stats.Eigen++
	lmin, floored, ok := s.floor.solve(packed, ta, ta/2, u, s.y)
	if !ok {
		var err error
		s.unpack(s.work, packed, ta)
		if lmin, floored, err = s.denseFloorSolve(ta, u); err != nil {
			return err
		}
	}
	safety := s.safety(ta, packed)
	s.setRef(packed, lmin-ta-safety, lmin-ta+safety)
	s.guess = s.high
	if floored > 0 {
		s.stats.Floors++
	}
	s.release(math.Inf(1))
	return nil
}

// denseFloorSolve sets y = M_f⁻¹u for M in s.work from M's explicit
// eigendecomposition (gonum's Dsyev), and returns λ_min(M) and how many
// eigenvalues were floored: the reference route, O(d³) with a large
// constant.
func (s *quadSolver) denseFloorSolve(ta float64, u []float64) (lmin float64, floored int, err error) {
	if !s.eig.Factorize(mat.NewSymDense(s.d, s.work), true) {
		return 0, 0, fmt.Errorf("ftl: eigendecomposition failed at t = %v", ta/s.cost.Alpha)
	}
	vals := s.eig.Values(nil)
	var q mat.Dense
	s.eig.VectorsTo(&q)
	var c mat.VecDense
	c.MulVec(q.T(), mat.NewVecDense(s.d, append([]float64(nil), u...)))
	for i, l := range vals {
		if l < ta/2 {
			floored++
		}
		c.SetVec(i, c.AtVec(i)/math.Max(l, ta/2))
	}
	mat.NewVecDense(s.d, s.y).MulVec(&q, &c)
	return vals[0], floored, nil
}

// safety covers the rounding of a factorisation of M: a backward error of
// a relative 1e-10 of ‖M‖_F, far above the O(d·2⁻⁵³) relative that a
// Cholesky factorisation or a tridiagonal eigensolver incurs at these d.
func (s *quadSolver) safety(ta float64, packed []float64) float64 {
	return 1e-10 * (ta*math.Sqrt(float64(s.d)) + norm(packed))
}

// setRef makes packed the reference, with low ≤ λ_min(ref) ≤ high.
func (s *quadSolver) setRef(packed []float64, low, high float64) {
	if s.ref == nil {
		s.ref = make([]float64, len(packed))
	}
	copy(s.ref, packed)
	s.low, s.high = low, high
}

// unpack writes V + shift·I into dst (d×d, row-major).
func (s *quadSolver) unpack(dst, packed []float64, shift float64) {
	mech.UnpackSym(dst, packed, s.d)
	for i := range s.d {
		dst[i*s.d+i] += shift
	}
}

// symPackedMulDistGo is symPackedMulGo that also returns Σ (packed_k −
// ref_k)², summed in four lanes (one would wait on the latency of each
// addition).
func symPackedMulDistGo(dst, packed, ref, x []float64, scale, shift float64) float64 {
	symPackedMulGo(dst, packed, x, scale, shift)
	ref = ref[:len(packed)]
	var s0, s1, s2, s3 float64
	k := 0
	for ; k+4 <= len(packed); k += 4 {
		e0, e1, e2, e3 := packed[k]-ref[k], packed[k+1]-ref[k+1], packed[k+2]-ref[k+2], packed[k+3]-ref[k+3]
		s0 += e0 * e0
		s1 += e1 * e1
		s2 += e2 * e2
		s3 += e3 * e3
	}
	for ; k < len(packed); k++ {
		e := packed[k] - ref[k]
		s0 += e * e
	}
	return (s0 + s1) + (s2 + s3)
}

// symPackedMulGo adds (shift·I + D + scale·U)·x to dst (len d), for the
// packed upper triangle D + U (D its diagonal): row i of the triangle,
// against x, gives both its contribution to dst_i and, transposed, to
// dst_j, j > i.
func symPackedMulGo(dst, packed, x []float64, scale, shift float64) {
	d, k := len(dst), 0
	for i := range d {
		row := packed[k+1 : k+d-i]
		dst[i] += (shift+packed[k])*x[i] + scale*floats.Dot(row, x[i+1:])
		floats.AddScaled(dst[i+1:], scale*x[i], row)
		k += d - i
	}
}

// mulPacked sets dst = M·x for M = tαI + V, straight from V's packed form
// (its off-diagonal entries are √2 times V's).
func (s *quadSolver) mulPacked(dst []float64, ta float64, packed, x []float64) {
	symPackedMul(s.zero(dst), packed, x, 1/math.Sqrt2, ta)
}

// zero clears and returns dst.
func (s *quadSolver) zero(dst []float64) []float64 {
	clear(dst)
	return dst
}

// conjugateGradients solves M y = u (M = tαI + V, V packed) from the
// current y, with s.q = M·y on entry, to s.tol, stopping on the recursively updated residual (no
// product to recompute it: see quadSolver), and returns ‖y‖; it restarts
// from the true residual should 4d iterations not reach the tolerance, and
// reports false if three such rounds do not. An iteration is the product,
// ⟨p, q⟩, one pass for y, r, ‖r‖² and ‖y‖² (cgUpdate) and one for p.
func (s *quadSolver) conjugateGradients(ta float64, packed, u []float64) (float64, bool) {
	tol := s.tol * ta / 2
	for round := range 3 {
		if round > 0 {
			s.mulPacked(s.q, ta, packed, s.y)
		}
		floats.SubTo(s.r, u, s.q)
		rr := floats.Dot(s.r, s.r)
		if ny := norm(s.y); math.Sqrt(rr) <= tol*ny {
			return ny, true
		}
		copy(s.p, s.r)
		for range 4 * s.d {
			s.stats.CGIterations++
			s.mulPacked(s.q, ta, packed, s.p)
			next, yy := cgUpdate(s.y, s.r, s.p, s.q, rr/floats.Dot(s.p, s.q))
			ny := math.Sqrt(yy)
			if math.IsInf(ny, 0) {
				ny = floats.Norm(s.y, 2) // ⟨y, y⟩ overflowed
			}
			if math.Sqrt(next) <= tol*ny {
				return ny, true
			}
			floats.AddScaledTo(s.p, s.r, next/rr, s.p)
			rr = next
		}
	}
	return 0, false
}

// cgUpdateGo sets y += step·p and r −= step·q and returns ⟨r, r⟩ and
// ⟨y, y⟩ of the new vectors, in one pass.
func cgUpdateGo(y, r, p, q []float64, step float64) (rr, yy float64) {
	r, p, q = r[:len(y)], p[:len(y)], q[:len(y)]
	for k := range y {
		y[k] += step * p[k]
		r[k] -= step * q[k]
		rr += r[k] * r[k]
		yy += y[k] * y[k]
	}
	return rr, yy
}

// norm is ‖x‖₂ as √⟨x, x⟩ (gonum's Norm rescales every entry against
// overflow, which costs a division each), falling back to floats.Norm
// should ⟨x, x⟩ overflow; an underflow only makes the stopping test
// stricter.
func norm(x []float64) float64 {
	if n := math.Sqrt(floats.Dot(x, x)); !math.IsInf(n, 0) {
		return n
	}
	return floats.Norm(x, 2)
}

// bound is R·B/α ≥ ‖u_t‖/(tα), the norm of every exact iterate.
func (s *quadSolver) bound() float64 {
	return s.cost.FeatureBound * s.cost.LabelBound / s.cost.Alpha
}

// SolverStats reports how the run's solves went.
func (a *PFTL) SolverStats() SolverStats { return a.solver.stats }
