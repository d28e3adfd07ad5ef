package pool

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/mech"
	"github.com/dpal-dev/dpal/dp/rng"
)

// This file holds the acquisition functions of pool-based active learning
// (Schwethelm et al. 2024, §3.4 and App. C) and their privatisation: each
// unlabelled record gets an uncertainty score from the (already private)
// model's class probabilities, the Laplace mechanism is applied to every
// score, and the k records with the largest noisy scores are released.

// Acquisition names an acquisition function.
type Acquisition int

const (
	// Random selects k records uniformly; it does not look at the data.
	Random Acquisition = iota
	// LeastConfidence scores 1 − max_c p(c|x) (App. C, eq. 13), in
	// [0, 1 − 1/C]: Δ = 1 − 1/C.
	LeastConfidence
	// MinimumMargin scores 1 − (p̂₁ − p̂₂), one minus the margin between
	// the two most likely classes (eq. 14), in [0, 1]: Δ = 1.
	MinimumMargin
	// Entropy scores the normalised entropy −Σ p log p / log C (eq. 15),
	// in [0, 1]: Δ = 1, or the clip (0.8 in the paper).
	Entropy
	// BALD scores the normalised mutual information between prediction
	// and MC-dropout pass, H(mean of passes) − mean of H(pass) (eqs.
	// 16–17), in [0, 1]: Δ = 1, or the clip (0.5 in the paper).
	BALD
)

// The paper's clipping trick (§3.4, App. C): scores clipped to these
// values, which over-confident networks practically never exceed.
const (
	EntropyClip = 0.8
	BALDClip    = 0.5
)

var acquisitionNames = []string{"random", "lc", "margin", "entropy", "bald"}

// String returns the name ParseAcquisition accepts.
func (a Acquisition) String() string { return nameOf(acquisitionNames, int(a), "Acquisition") }

// ParseAcquisition accepts random, lc, margin, entropy or bald.
func ParseAcquisition(s string) (Acquisition, error) {
	if i := slices.Index(acquisitionNames, s); i >= 0 {
		return Acquisition(i), nil
	}
	return 0, fmt.Errorf("unknown acquisition %q (want random, lc, margin, entropy or bald)", s)
}

// Range is the largest score a of C classes can give before clipping:
// 1 − 1/C for least confidence, 1 for the others, 0 for random.
func (a Acquisition) Range(classes int) float64 {
	switch a {
	case Random:
		return 0
	case LeastConfidence:
		return 1 - 1/float64(classes)
	}
	return 1
}

// probTol is how far from 1 a probability vector may sum.
const probTol = 1e-6

// checkProbs validates one probability vector of C classes.
func checkProbs(p []float64, classes int) error {
	if len(p) != classes {
		return fmt.Errorf("%d probabilities, want %d classes", len(p), classes)
	}
	var sum float64
	for c, v := range p {
		if !(v >= 0 && v <= 1) {
			return fmt.Errorf("probability of class %d is %v, not in [0, 1]", c, v)
		}
		sum += v
	}
	if math.Abs(sum-1) > probTol {
		return fmt.Errorf("probabilities sum to %v, not 1", sum)
	}
	return nil
}

// entropy is −Σ p log p / log C, in [0, 1].
func entropy(p []float64) float64 {
	var h float64
	for _, v := range p {
		if v > 0 {
			h -= v * math.Log(v)
		}
	}
	return min(1, max(0, h/math.Log(float64(len(p)))))
}

// Score returns a's uncertainty score of one record from its class
// probabilities, one vector per MC-dropout pass (one pass is enough except
// for BALD, which needs at least two; the other functions use the passes'
// mean). The score lies in [0, a.Range(C)], before any clipping.
func (a Acquisition) Score(passes [][]float64) (float64, error) {
	if len(passes) == 0 {
		return 0, errors.New("no forward passes")
	}
	classes := len(passes[0])
	if classes < 2 {
		return 0, fmt.Errorf("need at least 2 classes, got %d", classes)
	}
	mean := make([]float64, classes)
	for j, p := range passes {
		if err := checkProbs(p, classes); err != nil {
			return 0, fmt.Errorf("pass %d: %w", j+1, err)
		}
		for c, v := range p {
			mean[c] += v / float64(len(passes))
		}
	}
	switch a {
	case Random:
		return 0, nil
	case LeastConfidence:
		return min(a.Range(classes), max(0, 1-slices.Max(mean))), nil
	case MinimumMargin:
		s := slices.Clone(mean)
		slices.Sort(s)
		return min(1, max(0, 1-(s[classes-1]-s[classes-2]))), nil
	case Entropy:
		return entropy(mean), nil
	case BALD:
		if len(passes) < 2 {
			return 0, errors.New("BALD needs at least 2 MC-dropout passes")
		}
		var avg float64
		for _, p := range passes {
			avg += entropy(p) / float64(len(passes))
		}
		return min(1, max(0, entropy(mean)-avg)), nil
	}
	return 0, fmt.Errorf("unknown acquisition %d", int(a))
}

// Acquire is a private acquisition: one selection phase of pool-based DP
// active learning (Schwethelm et al. 2024, §3.4, eq. 3, App. C).
//
// Neighbouring relation: add/remove (or replace) one record of the scored
// pool. Each record's score depends on that record alone (the model is a
// released, already private output), so a record changes one score, by at
// most Δ: the clip, or the acquisition's range.
//
// Release: the indices of the k records with the largest noisy scores,
// each score clipped to [0, Δ] and privatised by the Laplace mechanism on
// a grid with scale Δ/ε (mech.NoisyTopK: exact discrete Laplace noise, Mironov
// 2012 safe). Random releases k uniformly drawn records
// (mech.UniformSubset) and looks at no score.
//
// Guarantee: ε-DP for every scored record, by parallel composition over
// the pool (each record touches only its own noisy score) and
// post-processing (top-k); Random is 0-DP. A phase of the paper spends
// ε = ε_Sel/T. The Loss is per record: charge it once per selection to
// every scored record (Select does, through dp/ledger).
type Acquire struct {
	kind Acquisition
	eps  float64
	sens float64
	k    int
	top  *mech.NoisyTopK
}

// NewAcquire returns the ε-DP acquisition selecting k records with scores
// clipped to clip (0: no clipping, Δ = the function's range for the
// given number of classes). eps is ignored for Random.
func NewAcquire(kind Acquisition, eps float64, k, classes int, clip float64) (*Acquire, error) {
	if kind < Random || kind > BALD {
		return nil, fmt.Errorf("acquisition: unknown kind %d", int(kind))
	}
	if k < 1 {
		return nil, fmt.Errorf("acquisition: k must be >= 1, got %d", k)
	}
	if classes < 2 {
		return nil, fmt.Errorf("acquisition: need at least 2 classes, got %d", classes)
	}
	a := &Acquire{kind: kind, k: k}
	if kind == Random {
		return a, nil
	}
	a.sens = kind.Range(classes)
	if clip != 0 {
		if !(clip > 0 && clip <= a.sens) {
			return nil, fmt.Errorf("acquisition %s: clip must be in (0, %v], got %v", kind, a.sens, clip)
		}
		a.sens = clip
	}
	top, err := mech.NewNoisyTopK(eps, a.sens, k)
	if err != nil {
		return nil, fmt.Errorf("acquisition %s: %w", kind, err)
	}
	a.eps, a.top = eps, top
	return a, nil
}

// Kind is the acquisition function.
func (a *Acquire) Kind() Acquisition { return a.kind }

// Sensitivity is Δ, the clipped range of the scores (0 for Random).
func (a *Acquire) Sensitivity() float64 { return a.sens }

// Epsilon is the ε of one selection for each scored record (0 for Random).
func (a *Acquire) Epsilon() float64 { return a.eps }

// Scores returns the clipped scores of the records, one entry of passes
// per record. It releases nothing; an invalid record's error names its
// index, so callers validate before charging the ledger.
func (a *Acquire) Scores(passes [][][]float64) ([]float64, error) {
	out := make([]float64, len(passes))
	for i, p := range passes {
		s, err := a.kind.Score(p)
		if err != nil {
			return nil, fmt.Errorf("acquisition %s: record %d: %w", a.kind, i, err)
		}
		out[i] = min(s, a.sens)
	}
	return out, nil
}

// Select releases the indices of the k selected records, most uncertain
// first (Random: in draw order), from scores made by Scores. It errors
// when there are fewer than k records.
func (a *Acquire) Select(r *rng.Rand, scores []float64) ([]int, error) {
	if a.k > len(scores) {
		return nil, fmt.Errorf("acquisition %s: k = %d but only %d records", a.kind, a.k, len(scores))
	}
	if a.kind != Random {
		return a.top.Select(r, scores)
	}
	return mech.UniformSubset(r, len(scores), a.k)
}

// Loss is the ledger entry of one selection for each scored record: pure
// ε-DP (parallel composition over the pool), zero for Random.
func (a *Acquire) Loss() account.Loss {
	if a.kind == Random {
		return account.Loss{Mechanism: "random-selection", Params: map[string]float64{"k": float64(a.k)}}
	}
	l := account.Pure("acquisition-"+a.kind.String(), a.eps)
	l.Params = map[string]float64{"k": float64(a.k), "sensitivity": a.sens}
	return l
}

// TopKNotDP returns the indices of the k largest scores, largest first
// (ties to the lower index). It is NOT differentially private: it releases
// the exact ranking. It exists for the non-private upper bounds of the
// paper's tables and must be labelled "not DP" wherever its results appear;
// it has no Loss and can never be charged to a ledger.
func TopKNotDP(scores []float64, k int) ([]int, error) {
	if k < 1 || k > len(scores) {
		return nil, fmt.Errorf("top-k (not DP): k = %d with %d scores", k, len(scores))
	}
	idx := make([]int, len(scores))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(scores[b], scores[a]) })
	return idx[:k:k], nil
}
