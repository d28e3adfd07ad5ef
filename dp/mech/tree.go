package mech

import (
	"fmt"
	"math"
	"math/bits"

	"gonum.org/v1/gonum/floats"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/vec"
)

// Tree is the binary-tree ("binary counting") mechanism for continual
// release of prefix sums (Dwork, Naor, Pitassi, Rothblum 2010; Chan, Shi,
// Song 2011), over vectors: Algorithm 5 (PrivateSum) of Jain, Kothari and
// Thakurta 2012, with the corrections of the spec's §10 N3 and N11.
//
// Neighbouring relation: two streams w_1..w_T that differ in one atom,
// replaced (Definition 2 of the paper), every atom with ‖w_t‖₂ ≤ R. A
// node's sum then moves by at most 2R (the paper's Lemma 6 uses R, which
// covers add/remove only).
//
// Release: after atom t, the noisy prefix sum Ŵ_t = Σ_q B̂_q over the
// dyadic blocks that tile 1..t (one per 1-bit of t, N11(c)). A node's noise
// is drawn once, when the node completes, and reused at every later time
// (Figure 1). Only nodes that some prefix uses get noise: the node ending
// at t at level tz(t) (t = 2^i·odd), i.e. left children and the root.
// Each noisy node is B̂ = g·(round(B/g) + Y), Y a vector of exact discrete
// Gaussians (GaussianVector with clipping norm 2R and noise multiplier z),
// so no floating-point noise reaches the output. The nodes' Y are
// consecutive vectors of one NoiseStream (for as long as Flush gets the
// same r), which are independent: the law is that of a fresh draw per node.
//
// Guarantee: an atom lies under at most Levels() = ⌈log₂T⌉+1 released
// nodes (one per level), so the whole output is one Gaussian mechanism with
// whitened ℓ2 sensitivity √Levels/z: ρ-zCDP with ρ = Levels/(2z²)
// (Bun & Steinke 2016, Prop. 1.6; CKS 2020, Thm 4 for the discrete
// Gaussian), equivalently μ-GDP with μ = √Levels/z for continuous noise.
// Loss reports the ρ of the whole sequence of T releases: the ledger
// charges it once, before the first release.
//
// A Tree is not safe for concurrent use.
type Tree struct {
	steps, levels, dim int
	bound              float64
	noise              *GaussianVector // nil: exact sums (tests only)
	stream             *NoiseStream    // the nodes' noise, one stream while r stays the same
	bulk               bool            // draw from r.Bulk() at any dimension (DrawInBulk)
	src                *rng.Rand       // the r stream draws from
	t                  int             // leaves closed
	atoms              int             // atoms accumulated since the pending leaf opened
	pending            []float64       // the pending leaf's sum; stale while atoms = 0
	exact              [][]float64     // exact[i]: exact sum of the last node completed at level i
	count              []int           // count[i]: the number of atoms in exact[i]
	noisy              [][]float64     // noisy[i]: its released (noisy) value
	prefix             []float64       // Σ noisy[i] over the 1-bits i of t
	levs               [][]float64     // Flush's scratch: exact[j], noisy[j] for the levels j below the node
}

// TreeLevels is the number of levels of the tree over steps leaves,
// ⌈log₂ steps⌉+1: a leaf and all its ancestors (N11(a)).
func TreeLevels(steps int) int {
	if steps <= 1 {
		return 1
	}
	return bits.Len(uint(steps-1)) + 1
}

// NewTree returns the tree mechanism for up to steps leaves (one atom each,
// or blocks of atoms: Accumulate, Flush) of dimension dim
// with ‖w‖₂ ≤ bound, adding to each node noise of standard deviation
// z·2·bound per coordinate (z = noiseMultiplier).
func NewTree(steps, dim int, bound, noiseMultiplier float64) (*Tree, error) {
	t, err := newTree(steps, dim, bound)
	if err != nil {
		return nil, err
	}
	if t.noise, err = NewGaussianVector(noiseMultiplier, 2*bound, dim); err != nil {
		return nil, fmt.Errorf("tree: %w", err)
	}
	return t, nil
}

func newTree(steps, dim int, bound float64) (*Tree, error) {
	if steps < 1 {
		return nil, fmt.Errorf("tree: the number of steps T must be >= 1, got %d", steps)
	}
	if err := validateDim(dim); err != nil {
		return nil, fmt.Errorf("tree: %w", err)
	}
	if err := validateSensitivity("atom norm bound", bound); err != nil {
		return nil, fmt.Errorf("tree: %w", err)
	}
	levels := TreeLevels(steps)
	t := &Tree{steps: steps, levels: levels, dim: dim, bound: bound, prefix: make([]float64, dim),
		pending: make([]float64, dim), count: make([]int, levels)}
	t.exact, t.noisy, t.levs = make([][]float64, levels), make([][]float64, levels), make([][]float64, 0, 2*levels)
	for i := range levels {
		t.exact[i], t.noisy[i] = make([]float64, dim), make([]float64, dim)
	}
	return t, nil
}

// TreeNoiseMultiplier is the noise multiplier z for which a tree over steps
// leaves is ρ-zCDP with the given ρ: z = √(Levels/(2ρ)).
func TreeNoiseMultiplier(steps int, rho float64) (float64, error) {
	if !(rho > 0) || math.IsInf(rho, 0) {
		return 0, fmt.Errorf("tree: rho must be finite and > 0, got %v", rho)
	}
	return math.Sqrt(float64(TreeLevels(steps)) / (2 * rho)), nil
}

// Add appends atom w (‖w‖₂ ≤ bound) as leaf t and returns the noisy prefix
// sum Ŵ_t: Accumulate then Flush.
func (t *Tree) Add(r *rng.Rand, w []float64) ([]float64, error) {
	if err := t.Accumulate(w); err != nil {
		return nil, err
	}
	return t.Flush(r)
}

// Accumulate adds atom w (‖w‖₂ ≤ bound) to the pending leaf, which Flush
// closes: a leaf may hold several atoms (a block of records), and the
// guarantee is unchanged since replacing one atom still moves one node
// per level by at most 2R. It errors, changing nothing, on a wrong length,
// a coordinate that is not finite, a norm above the bound, or an atom
// beyond the declared T leaves.
func (t *Tree) Accumulate(w []float64) error {
	if err := t.check(w); err != nil {
		return err
	}
	if t.atoms == 0 {
		copy(t.pending, w)
	} else {
		addTo(t.pending, w)
	}
	t.atoms++
	return nil
}

// AccumulateOuter adds the atom c·v vᵀ, in the packed form of PackOuter,
// to the pending leaf of a tree of dimension SymDim(len(v)), in one pass
// and without forming the atom. Its norm |c|·‖v‖² must be ≤ bound (the
// packed entries' rounding, a relative 1e-16, is covered by the relative
// 1e-12 by which the sampler's variance is rounded up). It errors, changing
// nothing, like Accumulate.
func (t *Tree) AccumulateOuter(v []float64, c float64) error {
	step := t.t + 1
	switch {
	case step > t.steps:
		return fmt.Errorf("tree: atom %d is beyond the declared T = %d", step, t.steps)
	case SymDim(len(v)) != t.dim:
		return fmt.Errorf("tree: atom %d: a %d-vector's outer product has packed dimension %d, want %d", step, len(v), SymDim(len(v)), t.dim)
	}
	// ‖v‖·‖v‖ rather than ⟨v, v⟩: rounding is monotone, so a v that passed
	// ‖v‖ ≤ R passes |c|·‖v‖² ≤ |c|·R·R here. The messages come in this
	// order: the first coordinate that is not finite, the scale, the norm.
	nv, bad := vec.FiniteNorm(v)
	switch {
	case bad >= 0:
		return fmt.Errorf("tree: atom %d: coordinate %d is %v", step, bad, v[bad])
	case isInfOrNaN(c):
		return fmt.Errorf("tree: atom %d: scale %v", step, c)
	}
	if n := math.Abs(c) * nv * nv; n > t.bound {
		return fmt.Errorf("tree: atom %d has norm %v above the bound %v", step, n, t.bound)
	}
	if t.atoms == 0 {
		PackOuter(t.pending, v, c)
	} else {
		addOuter(t.pending, v, c)
	}
	t.atoms++
	return nil
}

// isInfOrNaN says whether x is not finite.
func isInfOrNaN(x float64) bool { return math.IsNaN(x) || math.IsInf(x, 0) }

// Flush closes the pending leaf as leaf t and returns the noisy prefix sum
// Ŵ_t. The returned slice is the tree's own and changes at the next Flush.
func (t *Tree) Flush(r *rng.Rand) ([]float64, error) {
	if t.t >= t.steps {
		return nil, fmt.Errorf("tree: leaf %d is beyond the declared T = %d", t.t+1, t.steps)
	}
	i := bits.TrailingZeros(uint(t.t + 1))
	if t.noise != nil {
		if err := t.checkRange(i); err != nil {
			return nil, fmt.Errorf("tree leaf %d: %w", t.t+1, err)
		}
		if t.stream == nil || t.src != r {
			st := t.noise.streamFrom(r, t.bulk || t.dim >= bulkMinDim)
			t.stream, t.src = &st, r
		}
	}
	t.t++
	if t.atoms == 0 {
		clear(t.pending)
	}
	// The node ending at t at level i is the union of the nodes completed
	// at levels < i (which no prefix needs any more) and the leaf: the
	// leaf's buffer becomes the node's, and the old one the next leaf's.
	node := t.pending
	t.pending, t.exact[i] = t.exact[i], node
	t.count[i] = t.atoms
	for j := range i {
		t.count[i] += t.count[j]
	}
	t.atoms = 0
	// The node's sum, its noisy value g·(round(B/g) + Y) and the prefix
	// update, Ŵ_t = Ŵ_{t−1} − Σ_{j<i} B̂_j + B̂_i (the 1-bits below i of t−1
	// are cleared in t): where the fill rounds (roundsInFill), one pass of
	// it over the whole node (roundAddTree); otherwise separate passes in
	// chunks that stay in cache. The values are the same.
	out := t.noisy[i]
	if t.noise != nil && t.stream.roundsInFill() {
		levs := t.levs[:0]
		for j := range i {
			levs = append(levs, t.exact[j], t.noisy[j])
		}
		t.stream.roundAddTree(out, node, t.prefix, levs)
		return t.prefix, nil
	}
	for lo := 0; lo < t.dim; lo += treeChunk {
		hi := min(lo+treeChunk, t.dim)
		b, o, p := node[lo:hi], out[lo:hi], t.prefix[lo:hi]
		for j := range i {
			addTo(b, t.exact[j][lo:hi])
			subFrom(p, t.noisy[j][lo:hi])
		}
		copy(o, b)
		if t.noise != nil {
			t.stream.roundAdd(o)
		}
		addTo(p, o)
	}
	return t.prefix, nil
}

// treeChunk is the number of coordinates the separate passes of Flush
// treat at a time: their four vectors' chunks (4 KB each) stay in the L1
// cache.
const treeChunk = 512

// checkRange checks that the node Flush is about to release at level i
// lies within the grid's range, the check AddTo makes, by a bound instead
// of a pass: each coordinate is at most the node's norm, at most
// n·bound for its n atoms, up to a relative n·2⁻⁵² of float64 summation
// (below the 10⁻⁶ allowed for n < 2^30). The pass runs only beyond that
// count, or when n·bound reaches the range (about 2^40 atoms).
func (t *Tree) checkRange(i int) error {
	n := t.atoms
	for j := range i {
		n += t.count[j]
	}
	if float64(n)*t.bound*(1+1e-6) <= maxGridIndex*t.noise.g && n < 1<<30 {
		return nil
	}
	node := make([]float64, t.dim)
	if t.atoms > 0 {
		copy(node, t.pending) // stale while no atom is pending
	}
	for j := range i {
		addTo(node, t.exact[j])
	}
	return checkVector(node, t.dim, t.noise.g)
}

// check validates an atom against the declared bounds.
func (t *Tree) check(w []float64) error {
	step := t.t + 1
	if step > t.steps {
		return fmt.Errorf("tree: atom %d is beyond the declared T = %d", step, t.steps)
	}
	if err := t.checkAtom(w); err != nil {
		if t.atoms > 0 {
			return fmt.Errorf("tree: leaf %d atom %d%w", step, t.atoms+1, err)
		}
		return fmt.Errorf("tree: atom %d%w", step, err)
	}
	return nil
}

// checkAtom validates w; its error continues a sentence that names the
// atom (formatted only on failure: Accumulate runs once per record).
func (t *Tree) checkAtom(w []float64) error {
	if len(w) != t.dim {
		return fmt.Errorf(" has dimension %d, want %d", len(w), t.dim)
	}
	n, bad := vec.FiniteNorm(w)
	if bad >= 0 {
		return fmt.Errorf(": coordinate %d is %v", bad, w[bad])
	}
	if n > t.bound {
		return fmt.Errorf(" has norm %v above the bound %v", n, t.bound)
	}
	return nil
}

// addTo and subFrom use gonum's vector kernels (SSE2 assembly on amd64,
// the same sums as a scalar loop).
func addTo(dst, src []float64) { floats.Add(dst, src) }

func subFrom(dst, src []float64) { floats.Sub(dst, src) }

// DrawInBulk makes the tree draw its nodes' noise from r.Bulk() (AES-CTR,
// through the table sampler's fill) at any dimension, as it does anyway
// from dimension 1024: the stream is keyed once per run, so a small tree
// over many leaves gains the bulk source's speed without the per-release
// keying that makes GaussianVector use it only for large vectors. The law
// of the noise and the guarantee are the same; a seeded run draws
// different values. Call it before the first Flush.
func (t *Tree) DrawInBulk() { t.bulk = true }

// Steps is the declared number of leaves T.
func (t *Tree) Steps() int { return t.steps }

// Len is the number of leaves closed so far.
func (t *Tree) Len() int { return t.t }

// Levels is ⌈log₂T⌉+1, the number of released nodes an atom can touch.
func (t *Tree) Levels() int { return t.levels }

// Bound is the declared atom norm bound R.
func (t *Tree) Bound() float64 { return t.bound }

// Sigma is the per-coordinate noise standard deviation of one node.
func (t *Tree) Sigma() float64 {
	if t.noise == nil {
		return 0
	}
	return t.noise.Sigma()
}

// NoiseMultiplier is z: Sigma ≈ z·2R.
func (t *Tree) NoiseMultiplier() float64 {
	if t.noise == nil {
		return 0
	}
	return t.noise.z
}

// Mu is the μ of the whole release under μ-GDP for continuous noise,
// √Levels/z: the tight (ε, δ) figure is GaussianEpsilon(Mu, δ).
func (t *Tree) Mu() float64 { return math.Sqrt(float64(t.levels)) / t.NoiseMultiplier() }

// Loss is the ledger entry of the whole sequence of T releases:
// ρ-zCDP with ρ = Levels/(2z²), one GaussianVector release per level.
func (t *Tree) Loss() account.Loss {
	z := t.noise.z
	l := account.ZCDP("tree-aggregation", float64(t.levels)/(2*z*z))
	l.Params = map[string]float64{"steps": float64(t.steps), "levels": float64(t.levels), "dim": float64(t.dim),
		"atom_bound": t.bound, "node_sensitivity": 2 * t.bound, "noise_multiplier": z, "sigma": t.noise.sigma,
		"granularity": t.noise.g}
	return l
}

// SymDim is the packed dimension d(d+1)/2 of a symmetric d×d matrix.
func SymDim(d int) int { return d * (d + 1) / 2 }

// PackOuter writes c·v vᵀ into dst in the isometric packed form of a
// symmetric matrix: the upper triangle row by row, off-diagonal entries
// times √2, so that ‖dst‖₂ = ‖c·v vᵀ‖_F = |c|·‖v‖². Noise N(0, σ²) on the
// packed coordinates is, unpacked, the paper's i.i.d. matrix noise
// symmetrised by (A+Aᵀ)/2 (N11(e)): variance σ² on the diagonal and σ²/2
// off it, at half the draws.
func PackOuter(dst, v []float64, c float64) {
	if fillAVX { // the same products, eight at a time
		packOuterAVX512(dst[:SymDim(len(v))], v, c, c*math.Sqrt2)
		return
	}
	k := 0
	for i, a := range v {
		dst[k] = c * a * a
		k++
		row := dst[k : k+len(v)-i-1]
		floats.ScaleTo(row, c*math.Sqrt2*a, v[i+1:])
		k += len(row)
	}
}

// addOuter adds c·v vᵀ, packed as by PackOuter, to dst.
func addOuter(dst, v []float64, c float64) {
	k := 0
	for i, a := range v {
		dst[k] += c * a * a
		k++
		row := dst[k : k+len(v)-i-1]
		floats.AddScaled(row, c*math.Sqrt2*a, v[i+1:])
		k += len(row)
	}
}

// UnpackSym writes the symmetric d×d matrix (row-major) packed by
// PackOuter into dst (len d²).
func UnpackSym(dst, packed []float64, d int) {
	k := 0
	for i := range d {
		dst[i*d+i] = packed[k]
		k++
		for j := i + 1; j < d; j++ {
			x := packed[k] / math.Sqrt2
			dst[i*d+j], dst[j*d+i] = x, x
			k++
		}
	}
}
