package mech

import (
	"fmt"
	"math"
	"math/bits"

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
// so no floating-point noise reaches the output.
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
	t                  int             // leaves closed
	atoms              int             // atoms accumulated since the pending leaf opened
	pending            []float64
	exact              [][]float64 // exact[i]: exact sum of the last node completed at level i
	noisy              [][]float64 // noisy[i]: its released (noisy) value
	prefix             []float64   // Σ noisy[i] over the 1-bits i of t
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
	t := &Tree{steps: steps, levels: levels, dim: dim, bound: bound, prefix: make([]float64, dim)}
	t.exact, t.noisy = make([][]float64, levels), make([][]float64, levels)
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
	if t.pending == nil {
		t.pending = make([]float64, t.dim)
	}
	addTo(t.pending, w)
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
	for k, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("tree: atom %d: coordinate %d is %v", step, k, x)
		}
	}
	if math.IsNaN(c) || math.IsInf(c, 0) {
		return fmt.Errorf("tree: atom %d: scale %v", step, c)
	}
	// ‖v‖·‖v‖ rather than ⟨v, v⟩: rounding is monotone, so a v that passed
	// ‖v‖ ≤ R passes |c|·‖v‖² ≤ |c|·R·R here.
	nv := vec.Norm(v)
	if n := math.Abs(c) * nv * nv; n > t.bound {
		return fmt.Errorf("tree: atom %d has norm %v above the bound %v", step, n, t.bound)
	}
	if t.pending == nil {
		t.pending = make([]float64, t.dim)
	}
	p := t.pending
	k := 0
	for i, a := range v {
		p[k] += c * a * a
		k++
		ca := c * math.Sqrt2 * a
		row := p[k : k+len(v)-i-1]
		for j, b := range v[i+1:] {
			row[j] += ca * b
		}
		k += len(row)
	}
	t.atoms++
	return nil
}

// Flush closes the pending leaf as leaf t and returns the noisy prefix sum
// Ŵ_t. The returned slice is the tree's own and changes at the next Flush.
func (t *Tree) Flush(r *rng.Rand) ([]float64, error) {
	if t.t >= t.steps {
		return nil, fmt.Errorf("tree: leaf %d is beyond the declared T = %d", t.t+1, t.steps)
	}
	t.t++
	i := bits.TrailingZeros(uint(t.t))
	// The node ending at t at level i is the union of the nodes completed
	// at levels < i (which no prefix needs any more) and the leaf.
	node := t.exact[i]
	if t.pending == nil {
		clear(node)
	} else {
		copy(node, t.pending)
		clear(t.pending)
	}
	for j := range i {
		addTo(node, t.exact[j])
		subFrom(t.prefix, t.noisy[j])
	}
	out := t.noisy[i]
	copy(out, node)
	if t.noise != nil {
		if err := t.noise.AddTo(r, out); err != nil {
			return nil, fmt.Errorf("tree leaf %d: %w", t.t, err)
		}
	}
	t.atoms = 0
	addTo(t.prefix, out)
	return t.prefix, nil
}

// check validates an atom against the declared bounds.
func (t *Tree) check(w []float64) error {
	step := t.t + 1
	if step > t.steps {
		return fmt.Errorf("tree: atom %d is beyond the declared T = %d", step, t.steps)
	}
	if t.atoms > 0 {
		return t.checkAtom(fmt.Sprintf("leaf %d atom %d", step, t.atoms+1), w)
	}
	return t.checkAtom(fmt.Sprintf("atom %d", step), w)
}

// checkAtom validates w, naming it what in errors.
func (t *Tree) checkAtom(what string, w []float64) error {
	if len(w) != t.dim {
		return fmt.Errorf("tree: %s has dimension %d, want %d", what, len(w), t.dim)
	}
	for k, x := range w {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("tree: %s: coordinate %d is %v", what, k, x)
		}
	}
	if n := vec.Norm(w); n > t.bound {
		return fmt.Errorf("tree: %s has norm %v above the bound %v", what, n, t.bound)
	}
	return nil
}

func addTo(dst, src []float64) {
	for k, x := range src {
		dst[k] += x
	}
}

func subFrom(dst, src []float64) {
	for k, x := range src {
		dst[k] -= x
	}
}

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
	k := 0
	for i, a := range v {
		dst[k] = c * a * a
		k++
		ca := c * math.Sqrt2 * a
		for _, b := range v[i+1:] {
			dst[k] = ca * b
			k++
		}
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
