package groupsearch

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/rng"
)

// exactEvery is how often (in queries) the linear weights are recomputed
// from the exact log weights.
const exactEvery = 64

// maxBucketBits caps the number of key buckets used to find the median.
const maxBucketBits = 12

// Searcher is the Bayesian search of Algorithm 1. It holds the posterior
// f_t over [n+1] and never sees a score. The state of record is the log
// weight u_i (f_t(i) = exp(u_i − logZ)), which never underflows; a linear
// copy w_i = exp(u_i − ref), refreshed from u every exactEvery rounds or
// when it drifts, serves the sums. An entry whose w_i underflows to 0 has
// f_t(i) < e^−500 and cannot move the median split; its u_i stays exact.
//
// Each round walks the arrays sequentially a few times (O(n), no random
// memory access, no allocation): the uniformly random permutation of eq. 10
// is drawn as i.i.d. 32-bit keys, bucketed by their high bits to find the
// bucket holding the median, which alone is sorted.
type Searcher struct {
	lik    Likelihood
	r      *rng.Rand
	keys   *rand.PCG
	fixed  bool
	strict bool

	u, w  []float64
	key   []uint32
	inQ   []uint8
	q     []int32
	shift uint
	bm    []float64
	cut   []cand

	ref, sumW  float64
	topU       float64
	topI       int
	sinceExact int

	queries int
}

// cand is a member of the median bucket: key, tie-break and index.
type cand struct {
	key uint32
	tb  uint64
	i   int32
}

// SearcherOption configures a Searcher.
type SearcherOption func(*Searcher)

// WithoutPermutation makes the searcher split [n+1] in index order instead
// of a fresh random permutation each round: the "modified" algorithm of §5
// that Prop. 3 analyses.
func WithoutPermutation() SearcherOption { return func(s *Searcher) { s.fixed = true } }

// StrictMedian makes the searcher use eq. 10's median exactly: the longest
// prefix of mass below 1/2, even when it is empty (see split).
func StrictMedian() SearcherOption { return func(s *Searcher) { s.strict = true } }

// NewSearcher returns a searcher over size = n+1 indices with the uniform
// prior f_0 that reads responses with lik and draws its permutations from r.
func NewSearcher(size int, lik Likelihood, r *rng.Rand, opts ...SearcherOption) (*Searcher, error) {
	if size < 2 || size > math.MaxInt32 {
		return nil, fmt.Errorf("population size must be in [2, %d], got %d", math.MaxInt32, size)
	}
	if lik == nil || r == nil {
		return nil, errors.New("searcher needs a likelihood and a random source")
	}
	bits := min(maxBucketBits, max(0, bitsLen(size/64)))
	s := &Searcher{
		lik: lik, r: r,
		u: make([]float64, size), w: make([]float64, size),
		key: make([]uint32, size), inQ: make([]uint8, size), q: make([]int32, 0, size),
		shift: uint(32 - bits), bm: make([]float64, 1<<bits), keys: rand.NewPCG(0, 0),
	}
	for _, o := range opts {
		o(s)
	}
	s.Reset()
	return s, nil
}

// b2u converts a bool to 0 or 1.
func b2u(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

// bitsLen is the number of bits needed to write x ≥ 0.
func bitsLen(x int) int {
	n := 0
	for ; x > 0; x >>= 1 {
		n++
	}
	return n
}

// Reset restores the uniform prior f_0(i) = 1/(n+1) and zero queries.
func (s *Searcher) Reset() {
	n := len(s.u)
	clear(s.u)
	for i := range s.w {
		s.w[i] = 1
		if s.fixed { // index order: key increasing in i
			s.key[i] = uint32(uint64(i) << 32 / uint64(n))
		}
	}
	s.ref, s.sumW = 0, float64(n)
	s.topU, s.topI = 0, s.r.IntN(n)
	s.sinceExact, s.queries = 0, 0
}

// Len is n+1.
func (s *Searcher) Len() int { return len(s.u) }

// Queries is the number of answered queries T.
func (s *Searcher) Queries() int { return s.queries }

// Step asks o one query (eq. 10) and updates the posterior (eq. 6 or 11–12).
// An error from the oracle (such as account.ErrBudgetExceeded) leaves the
// posterior unchanged.
func (s *Searcher) Step(o Oracle) error {
	if o.Len() != len(s.u) {
		return fmt.Errorf("oracle holds %d individuals, searcher %d", o.Len(), len(s.u))
	}
	s.split()
	resp, err := o.Ask(s.q)
	if err != nil {
		return err
	}
	in, out, err := s.lik.LogLik(resp, len(s.q), len(s.u))
	if err != nil {
		return err
	}
	s.update(in - out)
	s.queries++
	return nil
}

// split draws the query of eq. 10 into s.q and s.inQ: a prefix of a
// uniformly random permutation ending at the median M of the permuted f. It
// returns Q's posterior mass.
//
// Eq. 10 takes the longest prefix with mass below 1/2. The element that
// ends it is added too when that brings the mass closer to 1/2 (the default;
// StrictMedian restores eq. 10): the two agree while single points are
// light, and differ once one point carries mass comparable to 1/2. There
// eq. 10 stalls: two points of mass 1/2 each are never separated (every
// query is the light prefix before the first of them), and a point of mass
// at least 1/2 at the front gives an empty query.
func (s *Searcher) split() float64 {
	s.drawKeys()
	half := s.sumW / 2
	var cum float64
	b := 0
	for ; b < len(s.bm)-1 && cum+s.bm[b] < half; b++ {
		cum += s.bm[b]
	}
	s.cut = s.cut[:0]
	lim := uint32(b)
	q := s.q[:len(s.key)]
	nq := 0
	for i, k := range s.key { // branch-free: about half the keys fall below lim
		kb := k >> s.shift
		in := b2u(kb < lim)
		s.inQ[i] = in
		q[nq] = int32(i)
		nq += int(in)
		if kb == lim {
			s.cut = append(s.cut, cand{key: k, i: int32(i)})
		}
	}
	s.q = q[:nq]
	if !s.fixed {
		for j := range s.cut {
			s.cut[j].tb = s.r.Uint64()
		}
	}
	slices.SortFunc(s.cut, func(a, b cand) int {
		if c := cmp.Compare(a.key, b.key); c != 0 {
			return c
		}
		if c := cmp.Compare(a.tb, b.tb); c != 0 {
			return c
		}
		return cmp.Compare(a.i, b.i)
	})
	for _, c := range s.cut {
		w := s.w[c.i]
		if cum+w >= half {
			if s.strict || half-cum < cum+w-half {
				break
			}
		}
		cum += w
		s.inQ[c.i] = 1
		s.q = append(s.q, c.i)
		if cum >= half {
			break
		}
	}
	return cum / s.sumW
}

// drawKeys gives every index a fresh uniform 32-bit key (unless the order
// is fixed) and sums the linear weights per key bucket. The keys come from
// a PCG generator seeded from r each round: the permutation only chooses
// which public query to ask, so it needs good statistics, not secrecy, and
// a CSPRNG call per index would dominate the round.
func (s *Searcher) drawKeys() {
	clear(s.bm)
	if s.fixed {
		for i, k := range s.key {
			s.bm[k>>s.shift] += s.w[i]
		}
		return
	}
	s.keys.Seed(s.r.Uint64(), s.r.Uint64())
	n := len(s.key)
	i := 0
	for ; i+1 < n; i += 2 {
		x := s.keys.Uint64()
		k0, k1 := uint32(x), uint32(x>>32)
		s.key[i], s.key[i+1] = k0, k1
		s.bm[k0>>s.shift] += s.w[i]
		s.bm[k1>>s.shift] += s.w[i+1]
	}
	if i < n {
		k := uint32(s.keys.Uint64())
		s.key[i] = k
		s.bm[k>>s.shift] += s.w[i]
	}
}

// update adds the log-likelihood ratio d = log φ(·|i*∈Q) − log φ(·|i*∉Q) to
// every member of Q; the common term cancels in the normalisation of eq. 12
// (and of eq. 6, which is the same rule for a bit).
func (s *Searcher) update(d float64) {
	if d == 0 {
		return
	}
	add := [2]float64{0, d}
	mul := [2]float64{1, math.Exp(d)}
	linear := math.Abs(d) < 100
	var sum float64
	topU, topI := math.Inf(-1), 0
	for i, in := range s.inQ { // branch-free: adding 0 and multiplying by 1 are exact
		u := s.u[i] + add[in]
		s.u[i] = u
		w := s.w[i] * mul[in]
		s.w[i] = w
		sum += w
		if u > topU {
			topU, topI = u, i
		}
	}
	s.topU, s.topI, s.sumW = topU, topI, sum
	s.sinceExact++
	if !linear || s.sinceExact >= exactEvery || math.Abs(topU-s.ref) > 200 || !(sum > 0) || math.IsInf(sum, 1) {
		s.renormalise()
	}
}

// renormalise recomputes the linear weights from the log weights with the
// largest one as reference.
func (s *Searcher) renormalise() {
	s.ref = s.topU
	var sum float64
	for i, u := range s.u {
		s.w[i] = math.Exp(u - s.ref)
		sum += s.w[i]
	}
	s.sumW = sum
	s.sinceExact = 0
}

// logZ is log Σ_i exp(u_i).
func (s *Searcher) logZ() float64 { return s.ref + math.Log(s.sumW) }

// MaxPosterior returns the most likely index and its posterior probability.
func (s *Searcher) MaxPosterior() (int, float64) {
	return s.topI, math.Exp(s.topU - s.logZ())
}

// logOddsMax is max_i log(f(i)/(1 − f(i))) (eq. 25), computed without
// forming 1 − f when f is close to 1.
func (s *Searcher) logOddsMax() float64 {
	lf := s.topU - s.logZ()
	if lf < -math.Ln2 {
		return lf - math.Log1p(-math.Exp(lf))
	}
	return lf - math.Log(-math.Expm1(lf))
}

// Top returns the k most likely indices, best first, and their posterior
// probabilities. Equal probabilities are ordered from a random starting
// index onwards, so no index is favoured.
func (s *Searcher) Top(k int) ([]int, []float64) {
	n := len(s.u)
	k = max(0, min(k, n))
	best := make([]int, 0, k+1)
	start := s.r.IntN(n)
	for j := range n {
		i := (start + j) % n
		if k == 0 || (len(best) == k && !(s.u[i] > s.u[best[k-1]])) {
			continue
		}
		pos := len(best)
		for pos > 0 && s.u[i] > s.u[best[pos-1]] {
			pos--
		}
		best = slices.Insert(best, pos, i)
		if len(best) > k {
			best = best[:k]
		}
	}
	lz := s.exactLogZ()
	probs := make([]float64, len(best))
	for j, i := range best {
		probs[j] = math.Exp(s.u[i] - lz)
	}
	return best, probs
}

// exactLogZ is log Σ exp(u_i) computed afresh from the log weights.
func (s *Searcher) exactLogZ() float64 {
	var sum float64
	for _, u := range s.u {
		sum += math.Exp(u - s.topU)
	}
	return s.topU + math.Log(sum)
}

// Posterior returns a fresh copy of f_t, indexed by individual.
func (s *Searcher) Posterior() []float64 {
	lz := s.exactLogZ()
	f := make([]float64, len(s.u))
	for i, u := range s.u {
		f[i] = math.Exp(u - lz)
	}
	return f
}

// Result is what a search releases: the top-|S| set with its posterior
// mass, the queries used and the privacy spent (Tε, Prop. 2).
type Result struct {
	// Top holds the |S| most likely indices, best first.
	Top []int `json:"top"`
	// PosteriorTop holds f_T of each index in Top.
	PosteriorTop []float64 `json:"posterior_top"`
	// MaxPosterior is max_i f_T(i).
	MaxPosterior float64 `json:"max_posterior"`
	// Queries is T, the number of answers received.
	Queries int `json:"queries"`
	// EpsilonSpent is the ε the oracle's ledger records for its group: Tε
	// (Prop. 2), plus any answer charged whose release then failed.
	EpsilonSpent float64 `json:"epsilon_spent"`
	// HaltedBy names the rule that stopped the search (the Halt* constants).
	HaltedBy string `json:"halted_by"`
}

// Run repeats Step until a halting rule of h fires, then returns the top
// indices. When the oracle refuses an answer because its ledger is spent,
// Run returns the result so far with HaltedBy "budget" together with the
// error (errors.Is(err, account.ErrBudgetExceeded)); any other oracle error
// is returned with HaltedBy "error". A budget b below one answer's ε is an
// error too, wrapping account.ErrBudgetExceeded: no answer could be bought,
// so a "top set" would be the prior's, not a finding.
func (s *Searcher) Run(o Oracle, h Halting, top int) (Result, error) {
	if err := h.Validate(); err != nil {
		return Result{}, err
	}
	var err error
	halted := ""
	for halted == "" {
		if halted = h.Check(s, o.Loss().Epsilon); halted != "" {
			if halted == HaltBudget && s.queries == 0 {
				err = fmt.Errorf("budget b = %v is below one answer's ε = %v: %w", h.Budget, o.Loss().Epsilon, account.ErrBudgetExceeded)
			}
			break
		}
		if err = s.Step(o); err != nil {
			halted = HaltError
			if errors.Is(err, account.ErrBudgetExceeded) {
				halted = HaltBudget
			}
		}
	}
	res := Result{Queries: s.queries, EpsilonSpent: o.Spent(), HaltedBy: halted}
	res.Top, res.PosteriorTop = s.Top(top)
	_, res.MaxPosterior = s.MaxPosterior()
	return res, err
}
