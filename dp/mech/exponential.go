package mech

import (
	"cmp"
	"errors"
	"fmt"
	"math/big"
	"math/bits"
	"slices"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/rng"
)

// scoreGrid is the shared set-up of the selection mechanisms: scores are
// rounded to a power-of-two grid g ≈ Δ/4096, after which their sensitivity
// is K = ⌊Δ/g⌋+1 grid steps, and ε is truncated to the dyadic ε' ≤ ε so
// that exp(−ε'·j/(c·K)) = exp(−j·s/t) has integer parameters.
type scoreGrid struct {
	eps, sens float64
	g         float64
	t, s      uint64
}

func newScoreGrid(name string, eps, sens float64, c uint64) (scoreGrid, error) {
	if err := account.ValidateEpsilon(eps); err != nil {
		return scoreGrid{}, fmt.Errorf("%s: %w", name, err)
	}
	if err := validateSensitivity("sensitivity", sens); err != nil {
		return scoreGrid{}, fmt.Errorf("%s: %w", name, err)
	}
	g, err := granularity(sens)
	if err != nil {
		return scoreGrid{}, fmt.Errorf("%s: %w", name, err)
	}
	k, err := gridSensitivity(sens, g)
	if err != nil {
		return scoreGrid{}, fmt.Errorf("%s: %w", name, err)
	}
	t, s, err := rationalScale(eps, c*k)
	if err != nil {
		return scoreGrid{}, fmt.Errorf("%s: %w", name, err)
	}
	return scoreGrid{eps: eps, sens: sens, g: g, t: t, s: s}, nil
}

// check validates the scores and returns the largest grid index.
// loss is the pure ε-DP loss of one selection on the grid.
func (sg *scoreGrid) loss(name string) account.Loss {
	l := account.Pure(name, sg.eps)
	l.Params = map[string]float64{"sensitivity": sg.sens, "granularity": sg.g}
	return l
}

func (sg *scoreGrid) check(scores []float64) (int64, error) {
	if len(scores) == 0 {
		return 0, errors.New("no scores")
	}
	var kmax int64
	for i, x := range scores {
		k, err := toGrid(x, sg.g)
		if err != nil {
			return 0, fmt.Errorf("score %d: %w", i, err)
		}
		if i == 0 || k > kmax {
			kmax = k
		}
	}
	return kmax, nil
}

// index is the grid index of an already checked score.
func (sg *scoreGrid) index(x float64) int64 {
	k, _ := toGrid(x, sg.g)
	return k
}

// Exponential is the exponential mechanism (McSherry & Talwar 2007; Dwork &
// Roth 2014, Definition 3.4 and Theorem 3.10).
//
// Neighbouring relation: datasets for which every candidate's score changes
// by at most Δ; with monotone set, additionally all scores move in the same
// direction (e.g. counts under adding or removing one record).
//
// Release: an index i, chosen with probability ∝ exp(ε'·k_i/(2K))
// (monotone: exp(ε'·k_i/K)), where k_i = round(s_i/g) are the scores on a
// power-of-two grid g ≈ Δ/4096, K = ⌊Δ/g⌋+1 bounds how far a neighbour can
// move a rounded score, and ε' ≤ ε is ε truncated to 30 significant bits.
// Sampling is exact: draw i uniformly and accept with probability
// exp(−(k_max − k_i)·ε'/(2K)) by the exact rational BernoulliExp (CKS 2020,
// Algorithm 1), repeating until acceptance (at most n expected rounds).
//
// Guarantee: ε-DP exactly (the rounded scores have sensitivity K grid steps).
type Exponential struct {
	sg       scoreGrid
	monotone bool
}

// NewExponential returns the exponential mechanism with score sensitivity Δ.
func NewExponential(eps, sensitivity float64, monotone bool) (*Exponential, error) {
	c := uint64(2)
	if monotone {
		c = 1
	}
	sg, err := newScoreGrid("exponential mechanism", eps, sensitivity, c)
	if err != nil {
		return nil, err
	}
	return &Exponential{sg: sg, monotone: monotone}, nil
}

// Select returns an index of scores, higher scores being more likely. It
// errors on an empty slice or a non-finite score (naming its index).
func (m *Exponential) Select(r *rng.Rand, scores []float64) (int, error) {
	kmax, err := m.sg.check(scores)
	if err != nil {
		return 0, fmt.Errorf("exponential mechanism: %w", err)
	}
	b := bitbuf{r: r}
	for {
		i := int(b.uniform(uint64(len(scores))))
		diff := uint64(kmax - m.sg.index(scores[i]))
		hi, num := bits.Mul64(diff, m.sg.s)
		var ok bool
		if hi == 0 {
			ok = b.exp(num, m.sg.t)
		} else {
			n := new(big.Int).SetUint64(diff)
			n.Mul(n, new(big.Int).SetUint64(m.sg.s))
			ok = bernoulliExpBig(r, n, new(big.Int).SetUint64(m.sg.t))
		}
		if ok {
			return i, nil
		}
	}
}

// Loss is the ledger entry of one selection: pure ε-DP.
func (m *Exponential) Loss() account.Loss { return m.sg.loss("exponential") }

// ReportNoisyMax is report-noisy-max with Laplace noise (Dwork & Roth 2014,
// Claim 3.9 and §3.3).
//
// Neighbouring relation: as for Exponential (every score moves by ≤ Δ;
// monotone: all in the same direction).
//
// Release: the index of the largest k_i + Y_i (ties to the lowest index),
// k_i = round(s_i/g) the scores on a power-of-two grid g ≈ Δ/4096 and Y_i
// independent exact discrete Laplace noise with scale 2K/ε' (monotone:
// K/ε'), K = ⌊Δ/g⌋+1. Only the index is released.
//
// Guarantee: ε-DP. Dwork & Roth's proof carries over to integer noise with
// ties broken by index: fixing the other noises, i wins iff its noise
// exceeds an integer threshold, which a neighbour moves by at most 2K (K if
// monotone) steps, changing that tail probability by at most e^ε'.
type ReportNoisyMax struct {
	sg scoreGrid
}

// NewReportNoisyMax returns report-noisy-max with score sensitivity Δ.
func NewReportNoisyMax(eps, sensitivity float64, monotone bool) (*ReportNoisyMax, error) {
	c := uint64(2)
	if monotone {
		c = 1
	}
	sg, err := newScoreGrid("report noisy max", eps, sensitivity, c)
	if err != nil {
		return nil, err
	}
	return &ReportNoisyMax{sg: sg}, nil
}

// Select returns the index with the largest noisy score.
func (m *ReportNoisyMax) Select(r *rng.Rand, scores []float64) (int, error) {
	if _, err := m.sg.check(scores); err != nil {
		return 0, fmt.Errorf("report noisy max: %w", err)
	}
	b := bitbuf{r: r}
	best, bestV := 0, int64(0)
	for i, x := range scores {
		v := addSat(m.sg.index(x), b.laplace(m.sg.t, m.sg.s))
		if i == 0 || v > bestV {
			best, bestV = i, v
		}
	}
	return best, nil
}

// Loss is the ledger entry of one selection: pure ε-DP.
func (m *ReportNoisyMax) Loss() account.Loss { return m.sg.loss("report-noisy-max") }

// NoisyTopK releases the indices of the k largest noisy scores, largest
// first (ties to the lower index), as in the private acquisition of
// Schwethelm et al. 2024 (App. C).
//
// Neighbouring relation: one record changes at most one item's score, by at
// most Δ (independent per-item scores, e.g. each item's uncertainty computed
// from that item alone).
//
// Release: only the k indices. Each score is rounded to a power-of-two grid
// g ≈ Δ/4096 and gets independent exact discrete Laplace noise of scale
// K/ε' (K = ⌊Δ/g⌋+1 grid steps, ε' ≤ ε the 30-bit truncation of ε), i.e.
// the Laplace mechanism per item.
//
// Guarantee: ε-DP for each record by parallel composition (each record
// touches one noisy score, which is ε-DP), and the top-k indices are
// post-processing of the noisy scores. The guarantee does not hold when one
// record can move several scores (then use k rounds of ReportNoisyMax).
type NoisyTopK struct {
	sg scoreGrid
	k  int
}

// NewNoisyTopK returns noisy top-k selecting k ≥ 1 items, with per-item
// score sensitivity Δ.
func NewNoisyTopK(eps, sensitivity float64, k int) (*NoisyTopK, error) {
	sg, err := newScoreGrid("noisy top-k", eps, sensitivity, 1)
	if err != nil {
		return nil, err
	}
	if k < 1 {
		return nil, fmt.Errorf("noisy top-k: k must be >= 1, got %d", k)
	}
	return &NoisyTopK{sg: sg, k: k}, nil
}

// Select returns the indices of the k largest noisy scores, largest first.
// It errors when there are fewer than k scores or a score is not finite
// (naming its index).
func (m *NoisyTopK) Select(r *rng.Rand, scores []float64) ([]int, error) {
	if m.k > len(scores) {
		return nil, fmt.Errorf("noisy top-k: k = %d but only %d scores", m.k, len(scores))
	}
	if _, err := m.sg.check(scores); err != nil {
		return nil, fmt.Errorf("noisy top-k: %w", err)
	}
	noisy := make([]int64, len(scores))
	idx := make([]int, len(scores))
	b := bitbuf{r: r}
	for i, x := range scores {
		noisy[i] = addSat(m.sg.index(x), b.laplace(m.sg.t, m.sg.s))
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(noisy[b], noisy[a]) })
	return idx[:m.k:m.k], nil
}

// Loss is the ledger entry of one selection: pure ε-DP per record, by
// parallel composition over the items (see the type's doc). Record it once
// per selection, not once per item.
func (m *NoisyTopK) Loss() account.Loss {
	l := m.sg.loss("noisy-top-k")
	l.Params["k"] = float64(m.k)
	return l
}

// UniformSubset returns k distinct indices of [0, n) drawn uniformly
// without replacement, in draw order (a partial Fisher–Yates shuffle, one
// exact uniform integer per index). It reads no data, so it is 0-DP: the
// "random selection" baseline of active learning. It errors unless
// 0 ≤ k ≤ n.
func UniformSubset(r *rng.Rand, n, k int) ([]int, error) {
	if k < 0 || k > n {
		return nil, fmt.Errorf("uniform subset: k = %d of n = %d", k, n)
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	b := bitbuf{r: r}
	for i := range k {
		j := i + int(b.uniform(uint64(n-i)))
		idx[i], idx[j] = idx[j], idx[i]
	}
	return idx[:k:k], nil
}
