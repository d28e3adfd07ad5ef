package groupsearch

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/rng"
)

// Oracle answers group queries about scores it keeps to itself. Each Ask
// charges its Loss to the oracle's ledger before any noise is drawn; once
// the budget is spent Ask fails with an error wrapping
// account.ErrBudgetExceeded and returns nothing.
type Oracle interface {
	// Len is the population size n+1.
	Len() int
	// Loss is the privacy loss of one answer (public).
	Loss() account.Loss
	// Spent is the ε the ledger records for the oracle's group: every
	// charged answer counts, including one whose release then failed.
	Spent() float64
	// Ask answers the query Q given as distinct indices in [0, Len()).
	// The slice is only read during the call.
	Ask(q []int32) (Response, error)
}

// Response is what an oracle releases for one query: a bit for the
// randomized-response and binarised oracles, a pair of noisy aggregates
// (Y over Q, YBar over its complement) for the noisy-max and mean oracles.
type Response struct {
	// Bit is the binary answer: "the anomaly is in Q" (possibly wrong).
	Bit bool `json:"bit"`
	// Y is the noisy aggregate over Q (max or mean).
	Y float64 `json:"y"`
	// YBar is the noisy aggregate over Q's complement.
	YBar float64 `json:"y_bar"`
	// HasPair is set when Y and YBar carry the answer (not Bit).
	HasPair bool `json:"has_pair"`
}

// Kind names an oracle construction.
type Kind string

// The oracle constructions of §4 and §5.
const (
	// RR is randomized response, eq. 5 (Prop. 1).
	RR Kind = "rr"
	// NoisyMax releases both noisy maxima, eq. 8–9 (Lemma 1), read with eq. 11–12.
	NoisyMax Kind = "noisy-max"
	// Binarized releases Z = 1(Y > Ȳ) of the noisy-max pair, read with eq. 24 and eq. 6.
	Binarized Kind = "binarized"
	// Mean releases both noisy group means (§4.2, sensitivity t_ℓ/|Q|).
	Mean Kind = "mean"
)

// ParseKind accepts rr, noisy-max, binarized (or binarised) and mean.
func ParseKind(s string) (Kind, error) {
	switch s {
	case "rr", "noisy-max", "binarized", "mean":
		return Kind(s), nil
	case "binarised":
		return Binarized, nil
	}
	return "", fmt.Errorf("unknown oracle %q (want rr, noisy-max, binarized or mean)", s)
}

// Params are the public parameters both roles know: the thresholds of
// eq. 1 and the per-answer ε.
type Params struct {
	// TLow is t_ℓ: every non-anomalous score lies in [0, t_ℓ].
	TLow float64 `json:"t_low"`
	// THigh is t_h: the anomaly's score is at least t_h (> t_ℓ).
	THigh float64 `json:"t_high"`
	// Epsilon is the privacy cost of one answer.
	Epsilon float64 `json:"epsilon"`
	// Clip lowers scores strictly between t_ℓ and t_h to t_ℓ instead of
	// rejecting them.
	Clip bool `json:"clip,omitempty"`
	// MeanLevel is the mean oracle's public guess of the average
	// non-anomalous score (default t_ℓ/2); see MeanLikelihood.
	MeanLevel float64 `json:"mean_level,omitempty"`
}

// Validate checks 0 < t_ℓ < t_h, both finite, and a valid ε.
func (p Params) Validate() error {
	for _, t := range []struct {
		field string
		v     float64
	}{{"t_low", p.TLow}, {"t_high", p.THigh}} {
		if math.IsNaN(t.v) || math.IsInf(t.v, 0) {
			return badSetting(t.field, "thresholds must be finite numbers, got t_low=%v t_high=%v", p.TLow, p.THigh)
		}
	}
	if !(p.TLow > 0) {
		return badSetting("t_low", "t_low must be > 0 (it is the noise scale of Lemma 1), got %v", p.TLow)
	}
	if !(p.TLow < p.THigh) {
		return badSetting("t_high", "need t_low < t_high, got t_low=%v t_high=%v", p.TLow, p.THigh)
	}
	if err := account.ValidateEpsilon(p.Epsilon); err != nil {
		return &FieldError{Field: "epsilon", Err: err}
	}
	if p.MeanLevel < 0 || p.MeanLevel > p.TLow || math.IsNaN(p.MeanLevel) {
		return badSetting("mean_level", "mean level must lie in [0, t_low], got %v", p.MeanLevel)
	}
	return nil
}

// Ratio is the threshold ratio (t_h − t_ℓ)/t_ℓ of Fig. 1.
func (p Params) Ratio() float64 { return (p.THigh - p.TLow) / p.TLow }

// ScoreError reports an invalid score by its index.
type ScoreError struct {
	// Index is the score's position in the input.
	Index int
	// Value is the offending score.
	Value float64
	// Why says which bound it breaks.
	Why string
}

// Error names the score by index and value and says why it was rejected.
func (e *ScoreError) Error() string {
	return fmt.Sprintf("score %d (%v): %s", e.Index, e.Value, e.Why)
}

// ErrNoAnomaly is returned when no score reaches t_h where one is required.
var ErrNoAnomaly = errors.New("no score reaches t_high: the model (eq. 1) needs an anomaly")

// CheckScores validates scores against p (finite, ≥ 0, none strictly
// between t_ℓ and t_h unless p.Clip) and returns the scores to use (a copy
// when clipping changed one) and the indices of the anomalies (≥ t_h).
func CheckScores(scores []float64, p Params) ([]float64, []int, error) {
	if err := p.Validate(); err != nil {
		return nil, nil, err
	}
	if len(scores) < 2 {
		return nil, nil, fmt.Errorf("need at least 2 scores, got %d", len(scores))
	}
	if len(scores) > math.MaxInt32 {
		return nil, nil, fmt.Errorf("too many scores: %d", len(scores))
	}
	out := scores
	var anomalies []int
	for i, x := range scores {
		switch {
		case math.IsNaN(x) || math.IsInf(x, 0):
			return nil, nil, &ScoreError{i, x, "not a finite number"}
		case x < 0:
			return nil, nil, &ScoreError{i, x, "negative (scores must be >= 0)"}
		case x >= p.THigh:
			anomalies = append(anomalies, i)
		case x > p.TLow:
			if !p.Clip {
				return nil, nil, &ScoreError{i, x, fmt.Sprintf("between t_low=%v and t_high=%v (violates eq. 1; use clipping to lower it to t_low)", p.TLow, p.THigh)}
			}
			if &out[0] == &scores[0] {
				out = append([]float64(nil), scores...)
			}
			out[i] = p.TLow
		}
	}
	return out, anomalies, nil
}

// NewOracle returns the in-process oracle of the given kind over scores.
// It spends every answer against group in ledger and draws its noise from
// r (rng.Secure() in production).
func NewOracle(kind Kind, scores []float64, p Params, led *ledger.Ledger, group string, r *rng.Rand) (Oracle, error) {
	if led == nil || r == nil {
		return nil, errors.New("oracle needs a ledger and a random source")
	}
	xs, anomalies, err := CheckScores(scores, p)
	if err != nil {
		return nil, err
	}
	base := oracleBase{scores: xs, p: p, ledger: led, group: group, r: r}
	switch kind {
	case RR:
		return newRROracle(base, anomalies)
	case NoisyMax, Binarized:
		return newMaxOracle(base, kind == Binarized)
	case Mean:
		return newMeanOracle(base)
	}
	return nil, fmt.Errorf("unknown oracle kind %q", kind)
}

// scoreCapBits sets scoreCap.
const scoreCapBits = 32

// scoreCap is the largest score an aggregating oracle (noisy max, mean)
// uses: max(t_h, 2^32·t_ℓ/max(1, ε)). Only an anomaly exceeds t_ℓ, and one
// capped this high still stands 2^32 noise scales above every other score,
// so the answers stay as informative; but no score can push an aggregate
// beyond the range the mechanism releases exactly, so no charged answer
// fails for it. Capping changes no non-anomalous score (all ≤ t_ℓ), so the
// neighbouring relation and the sensitivity t_ℓ are unchanged.
func scoreCap(p Params) float64 {
	return max(p.THigh, math.Ldexp(p.TLow, scoreCapBits)/max(1, p.Epsilon))
}

// capScores returns xs with every score above c lowered to c (a copy when
// one is).
func capScores(xs []float64, c float64) []float64 {
	out := xs
	for i, x := range xs {
		if x > c {
			if &out[0] == &xs[0] {
				out = slices.Clone(xs)
			}
			out[i] = c
		}
	}
	return out
}

// oracleBase is the state every in-process oracle shares.
type oracleBase struct {
	scores []float64
	p      Params
	ledger *ledger.Ledger
	group  string
	r      *rng.Rand
	loss   account.Loss
}

// Len is n+1.
func (b *oracleBase) Len() int { return len(b.scores) }

// Loss is the per-answer loss.
func (b *oracleBase) Loss() account.Loss { return b.loss }

// Spent is the ε the ledger records for the oracle's group.
func (b *oracleBase) Spent() float64 {
	eps, _ := b.ledger.Spent(b.group)
	return eps
}

// answer checks q's indices, then releases draw's response through
// ledger.Release: the answer's loss is charged before any noise is drawn,
// so nothing leaves unaccounted.
func (b *oracleBase) answer(q []int32, draw func() (Response, error)) (Response, error) {
	n := int32(len(b.scores))
	for _, i := range q {
		if i < 0 || i >= n {
			return Response{}, fmt.Errorf("query index %d outside [0, %d)", i, n)
		}
	}
	if len(q) > len(b.scores) {
		return Response{}, fmt.Errorf("query has %d indices for %d individuals", len(q), len(b.scores))
	}
	resp, err := ledger.Release(b.ledger, b, []string{b.group}, draw)
	if err != nil {
		return Response{}, fmt.Errorf("oracle answer: %w", err)
	}
	return resp, nil
}

// smallSet is an open-addressing hash set of a few indices, each mapped to
// its position in the list it was built from.
type smallSet struct {
	keys  []int32
	pos   []int32
	shift uint
}

func newSmallSet(idx []int32) smallSet {
	bits := bitsLen(2*len(idx)) + 1
	s := smallSet{keys: make([]int32, 1<<bits), pos: make([]int32, 1<<bits), shift: uint(32 - bits)}
	for j := range s.keys {
		s.keys[j] = -1
	}
	for p, i := range idx {
		h := s.slot(i)
		for s.keys[h] != -1 {
			h = (h + 1) & (len(s.keys) - 1)
		}
		s.keys[h], s.pos[h] = i, int32(p)
	}
	return s
}

func (s *smallSet) slot(i int32) int { return int(uint32(i) * 2654435761 >> s.shift) }

// find returns i's position in the original list, or -1.
func (s *smallSet) find(i int32) int32 {
	for h := s.slot(i); ; h = (h + 1) & (len(s.keys) - 1) {
		switch s.keys[h] {
		case i:
			return s.pos[h]
		case -1:
			return -1
		}
	}
}
