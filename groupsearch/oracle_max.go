package groupsearch

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/mech"
)

// topCandidates is how many of the largest scores the max oracle keeps in
// order: the max over Q and over its complement are almost always among
// them, so an answer costs one pass over Q plus O(topCandidates).
const topCandidates = 64

// maxOracle is the noisy-max oracle (eq. 8–9) and, with binarize, the
// binarised oracle Z = 1(Y > Ȳ) of §5.
type maxOracle struct {
	oracleBase
	lap      *mech.Laplace
	binarize bool
	// top holds the indices of the largest scores, largest first; topSet
	// maps an index to its rank in top; inQ flags the ranks in the query.
	top     []int32
	topSet  smallSet
	topBits []uint64
	inQ     []bool
}

// maxReleaseSteps bounds a capped score in Laplace grid steps, well inside
// the 2^61 steps mech.Laplace releases.
const maxReleaseSteps = 1 << 60

// newMaxOracle builds the oracle with Laplace noise of scale t_ℓ/ε (the
// audit's halved-noise mutant is built in export_test.go, test-only), over
// the scores capped at scoreCap.
func newMaxOracle(b oracleBase, binarize bool) (*maxOracle, error) {
	lap, err := mech.NewLaplace(b.p.Epsilon, b.p.TLow)
	if err != nil {
		return nil, err
	}
	name := "groupsearch noisy-max pair (eq. 9, Lemma 1)"
	if binarize {
		name = "groupsearch binarized noisy max (eq. 9, Z=1(Y>Ȳ))"
	}
	b.loss = account.Pure(name, b.p.Epsilon)
	c := scoreCap(b.p)
	if !(c/lap.Granularity() < maxReleaseSteps) {
		return nil, fmt.Errorf("noisy-max oracle: t_high/t_low = %v is too large for the Laplace release's range", b.p.THigh/b.p.TLow)
	}
	b.scores = capScores(b.scores, c)
	top := topIndices(b.scores, topCandidates)
	bits := make([]uint64, (len(b.scores)+63)/64)
	for _, i := range top {
		bits[i>>6] |= 1 << (i & 63)
	}
	return &maxOracle{oracleBase: b, lap: lap, binarize: binarize, top: top, topSet: newSmallSet(top), topBits: bits, inQ: make([]bool, len(top))}, nil
}

// topIndices returns the indices of the k largest scores, largest first
// (ties by index), in O(n·k) worst case and O(n) typically.
func topIndices(xs []float64, k int) []int32 {
	k = min(k, len(xs))
	top := make([]int32, 0, k+1)
	less := func(a, b int32) int { // descending score, ascending index
		if c := cmp.Compare(xs[b], xs[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	}
	for i := range xs {
		i32 := int32(i)
		if len(top) == k && less(i32, top[k-1]) >= 0 {
			continue
		}
		pos, _ := slices.BinarySearchFunc(top, i32, less)
		top = slices.Insert(top, pos, i32)
		if len(top) > k {
			top = top[:k]
		}
	}
	return top
}

// Ask releases (max_Q x + Z, max_Q̄ x + Z̄) with Z, Z̄ ~ Lap(t_ℓ/ε), or only
// the bit 1(Y > Ȳ) when binarised. The maximum of an empty group is 0, the
// least possible score, which no neighbour can change.
func (o *maxOracle) Ask(q []int32) (Response, error) {
	return o.answer(q, func() (Response, error) { return o.draw(q) })
}

// draw makes the noisy pair (or bit) for q; Ask has paid for it.
func (o *maxOracle) draw(q []int32) (Response, error) {
	hq, hbar := o.maxima(q)
	y, err := o.lap.Release(o.r, hq)
	if err != nil {
		return Response{}, err
	}
	ybar, err := o.lap.Release(o.r, hbar)
	if err != nil {
		return Response{}, err
	}
	if !o.binarize {
		return Response{Y: y, YBar: ybar, HasPair: true}, nil
	}
	bit := y > ybar
	if y == ybar { // possible on the sampler's grid; a fair coin keeps the error symmetric
		bit = o.r.Uint64()&1 == 1
	}
	return Response{Bit: bit}, nil
}

// maxima returns the max over Q and over its complement (0 when empty).
func (o *maxOracle) maxima(q []int32) (hq, hbar float64) {
	clear(o.inQ)
	for _, i := range q {
		if o.topBits[i>>6]&(1<<(i&63)) != 0 {
			o.inQ[o.topSet.find(i)] = true
		}
	}
	foundQ, foundBar := false, false
	for p, i := range o.top {
		switch {
		case o.inQ[p] && !foundQ:
			hq, foundQ = o.scores[i], true
		case !o.inQ[p] && !foundBar:
			hbar, foundBar = o.scores[i], true
		}
	}
	if !foundQ { // Q misses every top candidate: scan it
		for _, i := range q {
			hq = max(hq, o.scores[i])
		}
	}
	if !foundBar && len(q) < len(o.scores) { // Q holds every top candidate
		in := make([]bool, len(o.scores))
		for _, i := range q {
			in[i] = true
		}
		for i, x := range o.scores {
			if !in[i] {
				hbar = max(hbar, x)
			}
		}
	}
	return hq, hbar
}
