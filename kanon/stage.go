package kanon

import (
	"cmp"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/dpal-dev/dpal/dp/mech"
	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/sketch"
)

// This file is the one definition of the release stage (holdout split,
// Bernoulli(β) sample, sketch pre-filter in exact mode, exact or noisy
// threshold) that `dpal kanon run`
// (through Run) and the Beam pipeline (beam/kanonbeam, calling the
// per-record parts) share, so that for one seed both release the same set.
//
// Randomness is per record, never a stream consumed in log order: each
// distinct query q has its own coins, a keyed hash of q under the run's
// 256-bit key (Coins). Occurrences of one query are interchangeable, so
// the j-th occurrence of q is "the record (q, j)" and its sampling coin is
// the j-th exact Bernoulli(β) draw of q's own ChaCha8 stream (key =
// HMAC-SHA256(run key, "s" ‖ q)). Whatever the sharding, the order in
// which workers see lines, or which worker counts q, q's sampled count is
// the same function of (key, q, n_q), n_q being q's count in the log.
//
// Why it is still the sample the guarantee assumes (Li–Qardaji–Su Thm 5:
// every record kept independently with probability β): under a key unknown
// to the adversary HMAC-SHA256 is a pseudorandom function, so the streams
// of distinct queries are independent uniform bit strings, and within one
// stream the exact Bernoulli sampler draws independent coins. Adding or
// removing one occurrence of q adds or removes one coin of q's stream,
// exactly the coupling of independent sampling. The dp threshold's noise
// is keyed the same way ("n" ‖ q): each query's Z is its own independent
// discrete Laplace draw, as the noisy threshold's analysis assumes. A
// production run therefore uses a key from rng.Secure (SecureCoins;
// `dpal kanon run` without --seed, dpal-beam without --seed, where the
// sampling and noise streams are keyed afresh per bundle); SeededCoins,
// derived from a published seed, is for experiments and the equality test
// only and carries no guarantee against anyone who knows the seed.

// Coins is the per-record randomness of one run's release stage.
type Coins struct {
	// Key keys every per-query stream. Exported so that a distributed
	// pipeline can ship it to its workers (trusted side, like the log).
	Key [32]byte
}

// coinsDomain separates the seed → key derivation from other uses of a seed.
const coinsDomain = "dpal/kanon/coins/v1"

// SeededCoins derives the key from seed (SHA-256 of a domain tag and the
// seed): reproducible, for experiments only.
func SeededCoins(seed uint64) Coins {
	b := binary.LittleEndian.AppendUint64([]byte(coinsDomain), seed)
	return Coins{Key: sha256.Sum256(b)}
}

// SecureCoins draws the key from rng.Secure (ChaCha8 keyed from
// crypto/rand): the production source. The error is kept for sources
// that can fail; rng.Secure cannot.
func SecureCoins() (Coins, error) {
	var c Coins
	r := rng.Secure()
	for i := 0; i < len(c.Key); i += 8 {
		binary.LittleEndian.PutUint64(c.Key[i:], r.Uint64())
	}
	return c, nil
}

// CoinsFor is SeededCoins of r's seed when r is seeded, SecureCoins
// otherwise.
func CoinsFor(r *rng.Rand) (Coins, error) {
	if seed, ok := r.Seed(); ok {
		return SeededCoins(seed), nil
	}
	return SecureCoins()
}

// Stream domains: the split key, the sampling coins, the threshold noise.
const (
	domainSplit  = 'h'
	domainSample = 's'
	domainNoise  = 'n'
)

func (c Coins) mac(domain byte, q string) [sha256.Size]byte {
	m := hmac.New(sha256.New, c.Key[:])
	m.Write([]byte{domain})
	m.Write([]byte(q))
	var out [sha256.Size]byte
	m.Sum(out[:0])
	return out
}

// stream is q's own random stream in domain.
func (c Coins) stream(domain byte, q string) *rng.Rand {
	return rng.FromSource(rand.NewChaCha8(c.mac(domain, q)))
}

// noise is q's own threshold-noise stream: the dp threshold's Z for q is
// the first discrete Laplace draw from it, whoever draws it and whenever.
func (c Coins) noise(q string) *rng.Rand { return c.stream(domainNoise, q) }

// SplitKey is q's uniform 64-bit holdout key: q is a test query when its
// key is below TestFraction·2⁶⁴, and the golden set is the Golden non-test
// queries with the smallest keys.
func (c Coins) SplitKey(q string) uint64 {
	m := c.mac(domainSplit, q)
	return binary.LittleEndian.Uint64(m[:8])
}

// Sampled returns how many of the n occurrences of q the Bernoulli(β)
// sample keeps: occurrence j's coin is the j-th exact Bernoulli(β) draw
// (mech.BernoulliFloat) of q's sampling stream.
func (c Coins) Sampled(q string, n uint64, beta float64) uint64 {
	if beta >= 1 {
		return n
	}
	r := c.stream(domainSample, q)
	var kept uint64
	for range n {
		if mech.BernoulliFloat(r, beta) {
			kept++
		}
	}
	return kept
}

// Keyed is a query with its split key.
type Keyed struct {
	Key  uint64
	Text string
}

func compareKeyed(a, b Keyed) int {
	return cmp.Or(cmp.Compare(a.Key, b.Key), cmp.Compare(a.Text, b.Text))
}

// Smallest keeps the N distinct queries with the smallest split keys (ties
// by text): the golden set. Adding the same query twice keeps it once and
// merging is a union, so per-shard accumulators merge into what one pass
// finds (a Beam combiner).
type Smallest struct {
	N int
	// Items are sorted by (Key, Text).
	Items []Keyed
}

// Add offers one query.
func (s *Smallest) Add(k Keyed) {
	i, found := slices.BinarySearchFunc(s.Items, k, compareKeyed)
	if found || i >= s.N {
		return
	}
	s.Items = slices.Insert(s.Items, i, k)
	if len(s.Items) > s.N {
		s.Items = s.Items[:s.N]
	}
}

// Merge adds every query of o.
func (s *Smallest) Merge(o *Smallest) {
	for _, k := range o.Items {
		s.Add(k)
	}
}

// Contains reports whether k is among the kept queries.
func (s *Smallest) Contains(k Keyed) bool {
	_, found := slices.BinarySearchFunc(s.Items, k, compareKeyed)
	return found
}

// Texts returns the kept queries in key order.
func (s *Smallest) Texts() []string {
	out := make([]string, len(s.Items))
	for i, k := range s.Items {
		out[i] = k.Text
	}
	return out
}

// Stage is one run's release stage, built from its Config and Coins.
type Stage struct {
	cfg       Config
	coins     Coins
	testBelow uint64
	noise     *NoisyThreshold
}

// NewStage validates the stage's part of cfg (β, k, threshold and its
// noise ε', holdout).
func NewStage(cfg Config, coins Coins) (*Stage, error) {
	if err := ValidateSampling(cfg.Beta, cfg.K); err != nil {
		return nil, err
	}
	if err := checkThreshold(cfg.Threshold); err != nil {
		return nil, err
	}
	if !(cfg.TestFraction > 0 && cfg.TestFraction < 1) || cfg.Golden < 1 {
		return nil, fmt.Errorf("test fraction must be in (0, 1) and golden >= 1, got %v, %d", cfg.TestFraction, cfg.Golden)
	}
	st := &Stage{cfg: cfg, coins: coins, testBelow: uint64(math.Ldexp(cfg.TestFraction, 64))}
	if cfg.Threshold == ThresholdDP && !cfg.Baseline {
		m, err := NewNoisyThreshold(cfg.NoiseEpsilon, cfg.K, cfg.Beta)
		if err != nil {
			return nil, err
		}
		st.noise = m
	}
	return st, nil
}

// Key is q's split key with q.
func (st *Stage) Key(q string) Keyed { return Keyed{Key: st.coins.SplitKey(q), Text: q} }

// InTest reports whether q is held out as a test query.
func (st *Stage) InTest(k Keyed) bool { return k.Key < st.testBelow }

// NewGolden returns an empty golden-set accumulator.
func (st *Stage) NewGolden() *Smallest { return &Smallest{N: st.cfg.Golden} }

// Exact reports whether the threshold is the exact count ≥ k, which the
// sketch may pre-filter (a query with fewer than k occurrences in the log
// can never reach k in the sample). When it is false (dp mode) nothing may
// be pre-filtered: a query seen once can pass c + Z ≥ k, so every pool
// query is counted exactly and goes to Keep; a distributed caller must do
// the same to release the same set.
func (st *Stage) Exact() bool { return st.noise == nil }

// NewSketch returns the Count-Mean-Min pre-filter of width w (0: the
// config's width), shared hash parameters so that shards merge.
func (st *Stage) NewSketch(w int) (*sketch.CMM, error) {
	if w == 0 {
		w = st.cfg.SketchWidth
	}
	return sketch.NewCMM(st.cfg.SketchRows, w, SketchSeed, true)
}

// Keep is the per-query decision, the one definition that Release and the
// Beam pipeline (one call per distinct pool query, on whichever worker
// holds it) both call, for a pool query q with n occurrences in the log.
// It draws q's sampled count from q's own sampling stream (Coins.Sampled),
// then applies the threshold: exact, c ≥ k; dp, c ≥ 1 and c + Z ≥ k, Z the
// discrete Laplace noise of NoisyThreshold drawn from q's own noise stream
// (ChaCha8 keyed by HMAC-SHA256(key, "n" ‖ q), Coins.noise). A query absent
// from the sample (c = 0) is never released: the mechanism only sees the
// sample's keys. Both draws are functions of (key, q, n) alone, so the
// decision cannot depend on which other queries exist, on the log's order,
// on sharding or on the order in which workers decide queries. It is
// trusted-side until the set it builds is charged and released.
func (st *Stage) Keep(q string, n uint64) (bool, error) {
	c := st.coins.Sampled(q, n, st.cfg.Beta)
	if st.noise == nil {
		return c >= uint64(st.cfg.K), nil
	}
	if c == 0 {
		return false, nil
	}
	return st.noise.keep(st.coins.noise(q), c)
}

// Split is the outcome of Release: the held-out test and golden queries (in
// key order) and the released set (sorted).
type Split struct {
	Test, Golden, Released []string
}

// Release is the whole stage on one machine: hold out the test queries
// (split key below TestFraction·2⁶⁴) and the golden set (the Golden
// smallest keys among the rest), then keep each remaining query that Keep
// passes on its count in the log. In exact mode a Count-Mean-Min sketch of
// the pool (sized by HyperLogLog when the config's width is 0) rejects the
// queries whose Count-Min value is below k and an exact recount of the rest
// gives their n (sketch.Survivors); in dp mode every pool query is counted
// exactly (Exact). The Beam pipeline computes the same set from the same
// parts.
func (st *Stage) Release(log []string) (Split, error) {
	var sp Split
	sp.Test, sp.Golden = st.Holdout(log)
	held := map[string]bool{}
	for _, q := range slices.Concat(sp.Test, sp.Golden) {
		held[q] = true
	}
	pool := func(yield func(string) bool) {
		for _, q := range log {
			if !held[q] && !yield(q) {
				return
			}
		}
	}
	counts, err := st.poolCounts(pool)
	if err != nil {
		return Split{}, err
	}
	for _, q := range slices.Sorted(maps.Keys(counts)) {
		ok, err := st.Keep(q, counts[q])
		if err != nil {
			return Split{}, err
		}
		if ok {
			sp.Released = append(sp.Released, q)
		}
	}
	return sp, nil
}

// Holdout returns the log's test queries (split key below
// TestFraction·2⁶⁴) and its golden set (the Golden smallest keys among
// the rest), each in key order.
func (st *Stage) Holdout(log []string) (test, golden []string) {
	gold := st.NewGolden()
	seen := map[string]bool{}
	var keyed []Keyed
	for _, q := range log {
		if seen[q] {
			continue
		}
		seen[q] = true
		if k := st.Key(q); st.InTest(k) {
			keyed = append(keyed, k)
		} else {
			gold.Add(k)
		}
	}
	slices.SortFunc(keyed, compareKeyed)
	for _, k := range keyed {
		test = append(test, k.Text)
	}
	return test, gold.Texts()
}

// poolCounts counts the pool's queries that can pass: in exact mode the
// sketch candidates' exact counts, else every query's.
func (st *Stage) poolCounts(pool func(func(string) bool)) (map[string]uint64, error) {
	if !st.Exact() {
		c := map[string]uint64{}
		for q := range pool {
			c[q]++
		}
		return c, nil
	}
	width := st.cfg.SketchWidth
	if width == 0 {
		h, err := sketch.NewHLL(14)
		if err != nil {
			return nil, err
		}
		for q := range pool {
			h.Insert(q)
		}
		width = sketch.WidthFor(h.Estimate())
	}
	s, err := st.NewSketch(width)
	if err != nil {
		return nil, err
	}
	for q := range pool {
		s.Add(q)
	}
	return sketch.Survivors(s, uint64(st.cfg.K), pool), nil
}

// SketchSeed keys the hash parameters of the pipeline's sketches; every
// worker uses it so that their sketches merge.
const SketchSeed = 0x6b616e6f6e
