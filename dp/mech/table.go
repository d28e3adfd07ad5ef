package mech

import (
	"fmt"
	"math"
	"math/big"
)

// tableGauss is an exact sampler of the discrete Gaussian on Z,
// P(X = x) ∝ f(x) = exp(−x²/(2σ²)), built for vector mechanisms that draw
// many values at one σ: it costs about 1.5 random words per draw, against
// several Bernoulli(exp(·)) loops for CKS Algorithm 3.
//
// It is rejection sampling of |X| under a piecewise-constant envelope whose
// pieces are chosen by an alias table (Walker 1977; Vose 1991):
//
//   - 1022 bulk blocks [jW, (j+1)W) of width W = 2^wBits, covering 8–16σ,
//     each with height c_j = w_j/z ≥ f(jW) (f decreases on n ≥ 0);
//   - one tail item: blocks [n0 + iWt, n0 + (i+1)Wt), i ≥ 0, of heights
//     c_t·2^−i with c_t ≥ f(n0). Because n0·Wt/σ² ≥ ln 2, f falls by at
//     least half per tail block, so these heights dominate f; the block
//     index i is Geometric(1/2) and the tail's total envelope mass, 2·c_t·Wt,
//     is a dyadic multiple of the bulk's;
//   - one spare item that absorbs the rounding of the weights (a draw of it
//     is rejected).
//
// The integer weights w sum to exactly 2^26, so the alias draw (10 bits of
// bucket, 16 bits of coin) is exact. A proposal n is accepted when a uniform
// U is below ρ(n) = f(n)/envelope(n), decided in three tiers:
//
//  1. bulk blocks compare U's first 16 bits with a precomputed lower bound
//     of ρ over the block (accepting about 99.5 % of draws at once);
//  2. otherwise ρ is evaluated in float64 with an error bound of about
//     2^−44 relative and compared with U's first 64 bits;
//  3. if that is inconclusive (probability about 2^−40), ρ is bracketed in
//     math/big with directed rounding (expNegInterval) and compared with
//     further random words of U until they separate.
//
// Every decision is therefore exact given uniform bits: the tables and
// tier 2 only need valid bounds, and each float bound carries a margin
// (2^−36 for the tables, derived in newTableGauss) far above the float
// error. The sign is a random bit, with (−, 0) rejected so that 0 is not
// counted twice.
//
// One truncation: proposals with |n| > nMax ≈ 1448σ (x = n²/2σ² > 2^20)
// are rejected, so the law is the discrete Gaussian conditioned on
// |X| ≤ max(nMax, n0 − 1). The mass removed is below exp(−2^19); since it
// makes the supports of shifted noise differ, a mechanism built on this
// sampler has its guarantee up to that δ (documented where it is used).
// σ² = num/den must be ≥ 1/4; smaller σ use CKS Algorithm 3.
//
// A table is immutable once newTableGauss returns it (only the build*
// methods write its fields; tests set exactOnly on tables they build
// themselves): mechanisms share tables (dirTable, tableMemo).
type tableGauss struct {
	num, den     uint64                // σ² = num/den exactly
	s2           float64               // σ² as a float, for the table and tier 2
	wBits, tBits uint                  // bulk block width W = 2^wBits, tail block width 2^tBits
	n0, nMax     uint64                // start of the tail; truncation point
	z            float64               // weight per unit of envelope height per width W
	prob         [tableSize]uint32     // alias coin thresholds, ≤ 2^coinBits
	alias        [tableSize]uint16     //
	squeeze      [tableSize]uint16     // ⌊2^16 · lower bound of ρ on bulk block j⌋
	offMask      uint64                // 2^min(wBits, offsetBits) − 1
	oneWord      bool                  // wBits ≤ offsetBits: fill's fast path applies
	fast         [tableSize]uint64     // item j | alias[j]<<32 (buildFast)
	pairs        [4 * tableSize]uint64 // per bucket and quarter, for fillAVX512 (buildPairs)
	subShift     uint                  // offset >> subShift is the quarter of a bulk block
	sub          [4 * tableSize]uint32 // per item and quarter: ⌊2^16·ρ_low⌋ | (⌈2^16·ρ_high⌉ − 1)<<16
	weight       [tableSize]uint64     // slow paths only from here on
	logc         [tableSize]float64    // ln c_j (bulk) and ln c_t (tail item)
	exactOnly    bool                  // tests: skip tier 2
}

const (
	tableBits   = 10
	tableSize   = 1 << tableBits
	bulkBlocks  = tableSize - 2
	tailItem    = tableSize - 2
	spareItem   = tableSize - 1
	coinBits    = 16
	squeezeBits = 16
	// offsetBits is what is left of the proposal's word for the block
	// offset, after bucket, coin, U's first bits and the sign.
	offsetBits = 64 - tableBits - coinBits - squeezeBits - 1
	// weightSlack is the fraction of the 2^26 weight left to the spare item
	// so that rounding the other weights up cannot overflow it.
	weightSlack = 0x1p-12
	// tableMargin widens every float bound in the tables; the float error
	// it covers is below 2^−40 (see newTableGauss).
	tableMargin = 0x1p-36
	// maxExponent caps x = n²/(2σ²) (the truncation point nMax).
	maxExponent = 1 << 20
)

// tableSigma2Range says whether tableGauss takes σ²: below 1/4 almost all
// mass is at 0 and CKS is as fast. (σ² = num/den < 2^64 keeps n < 2^43, so
// n² stays within float64's exact range for tier 2.)
func tableSigma2Range(s2 float64) bool { return s2 >= 0.25 }

// newTableGauss builds the sampler for σ² = num/den (num, den ≥ 1).
//
// Why the 2^−36 margin suffices: f(n) is computed as exp(−n²/(2·s2)); s2
// = float(num)/float(den) and n² carry relative rounding errors of a few
// 2^−53 (5·2^−53 in x at most), and math.Exp errs by < 1 ulp, so f's
// relative error is ≤ x·2^−50 + 2^−52 for x = n²/2σ².
// For x ≤ 2^11 that is below 2^−38.9; for x > 2^11, f·z < 2^26·e^−2048 ≪ 1
// and the weights' "+1" alone dominates it. The squeeze bounds follow the
// same argument and are 0 wherever f underflows.
func newTableGauss(num, den uint64) (*tableGauss, error) {
	s2 := float64(num) / float64(den)
	if num == 0 || den == 0 || !tableSigma2Range(s2) {
		return nil, fmt.Errorf("table gaussian: σ² = %d/%d is below 1/4", num, den)
	}
	g := &tableGauss{num: num, den: den, s2: s2}
	sigma := math.Sqrt(s2)
	g.wBits = ceilLog2(8 * sigma / bulkBlocks)
	g.n0 = bulkBlocks << g.wBits
	g.offMask = 1<<min(g.wBits, offsetBits) - 1
	// Tail blocks must satisfy n0·Wt ≥ σ²·ln 2 (halving envelope).
	g.tBits = ceilLog2(s2 * math.Ln2 / float64(g.n0) * (1 + 0x1p-20))
	g.nMax = uint64(math.Sqrt(2*maxExponent*s2) * (1 - 0x1p-20))
	if err := g.buildWeights(); err != nil {
		return nil, err
	}
	g.buildAlias()
	g.buildSqueeze()
	g.buildFast()
	return g, nil
}

// ceilLog2 returns the smallest k ≥ 0 with 2^k ≥ x.
func ceilLog2(x float64) uint {
	if x <= 1 {
		return 0
	}
	_, e := math.Frexp(x) // x < 2^e
	if math.Ldexp(1, e-1) == x {
		return uint(e - 1)
	}
	return uint(e)
}

// f returns exp(−n²/(2σ²)) in float64 (tables and tier 2 only).
func (g *tableGauss) f(n float64) float64 { return math.Exp(-n * n / (2 * g.s2)) }

// buildWeights sets integer weights w_j ≥ f(jW)·z (and the tail's) summing
// with the spare item to exactly 2^26.
func (g *tableGauss) buildWeights() error {
	w := math.Ldexp(1, int(g.wBits))
	wt := math.Ldexp(1, int(g.tBits))
	tailScale := 2 * wt / w // tail envelope mass per unit height, in units of W
	var mass float64
	for j := range bulkBlocks {
		mass += g.f(float64(j) * w)
	}
	mass += g.f(float64(g.n0)) * tailScale
	g.z = math.Ldexp(1-weightSlack, tableBits+coinBits) / (mass * (1 + tableMargin))
	var sum uint64
	for j := range bulkBlocks {
		g.weight[j] = uint64(math.Ceil(g.f(float64(j)*w)*g.z*(1+tableMargin))) + 1
		g.logc[j] = math.Log(float64(g.weight[j]) / g.z)
		sum += g.weight[j]
	}
	g.weight[tailItem] = uint64(math.Ceil(g.f(float64(g.n0))*g.z*tailScale*(1+tableMargin))) + 1
	g.logc[tailItem] = math.Log(float64(g.weight[tailItem]) / (g.z * tailScale))
	sum += g.weight[tailItem]
	if sum > 1<<(tableBits+coinBits) {
		return fmt.Errorf("table gaussian: σ² = %v: weights overflow", g.s2) // unreachable: 2^-12 slack
	}
	g.weight[spareItem] = 1<<(tableBits+coinBits) - sum
	return nil
}

// buildAlias is Vose's alias method in exact integer arithmetic: every
// bucket holds 2^coinBits units of weight, so the leftovers are exactly full.
func (g *tableGauss) buildAlias() {
	const capacity = 1 << coinBits
	var rest [tableSize]uint64
	small := make([]uint16, 0, tableSize)
	large := make([]uint16, 0, tableSize)
	for i, w := range g.weight {
		rest[i] = w
		if w < capacity {
			small = append(small, uint16(i))
		} else {
			large = append(large, uint16(i))
		}
	}
	for len(small) > 0 && len(large) > 0 {
		s, l := small[len(small)-1], large[len(large)-1]
		small = small[:len(small)-1]
		g.prob[s], g.alias[s] = uint32(rest[s]), l
		rest[l] -= capacity - rest[s]
		if rest[l] < capacity {
			large = large[:len(large)-1]
			small = append(small, l)
		}
	}
	for _, i := range large { // rest[i] == capacity exactly
		g.prob[i], g.alias[i] = capacity, i
	}
}

// buildSqueeze stores ⌊2^16·ρ_low⌋ for each bulk block, ρ_low a lower bound
// of f(n)/c_j on the block (f's minimum is at its right end).
func (g *tableGauss) buildSqueeze() {
	w := uint64(1) << g.wBits
	for j := range uint64(bulkBlocks) {
		g.squeeze[j] = uint16(g.squeezeLow(j, j*w+w-1))
	}
}

// squeezeLow is ⌊2^16·ρ_low⌋ for bulk block j's proposals n ≤ last, ρ_low
// a lower bound of ρ(last) = f(last)/c_j (f decreases on n ≥ 0).
func (g *tableGauss) squeezeLow(j, last uint64) uint64 {
	lo := g.f(float64(last)) * g.z / float64(g.weight[j]) * (1 - tableMargin)
	return uint64(math.Floor(math.Ldexp(min(lo, 1), squeezeBits) * (1 - tableMargin)))
}

// squeezeHigh is ⌈2^16·ρ_high⌉ ∈ [1, 2^16] for bulk block j's proposals
// n ≥ first, ρ_high an upper bound of ρ(first). For x = first²/2σ² ≤ 2^11
// the float error is covered by the margins as in newTableGauss; beyond,
// ρ < e^−2048·z ≤ e^−2048·2^26 < 2^−16 (c_j ≥ 1/z, z ≤ 2^26 since the
// bulk mass is ≥ f(0) = 1), so the floor of 1 is a valid bound; ρ ≤ 1
// everywhere (the envelope dominates f), so the cap is too.
func (g *tableGauss) squeezeHigh(j, first uint64) uint64 {
	hi := g.f(float64(first)) * g.z / float64(g.weight[j]) * (1 + tableMargin)
	return uint64(max(math.Ceil(math.Ldexp(min(hi*(1+tableMargin), 1), squeezeBits)), 1))
}

// buildSub stores, for each bulk block and each quarter of it (each value
// of a block narrower than 4), the squeeze bounds of ρ on the quarter:
// fill accepts when U's first 16 bits v16 are below the low one, and
// rejects when v16 ≥ the high one (then U ≥ v16·2^−16 ≥ ρ), without tier 2.
// Entries of the tail and spare items, and unused quarters, decide nothing
// (low 0, high 2^16).
func (g *tableGauss) buildSub() {
	subBits := min(2, g.wBits)
	g.subShift = g.wBits - subBits
	size := uint64(1) << g.subShift
	for item := range uint64(tableSize) {
		for q := range uint64(4) {
			lo, hi := uint64(0), uint64(1<<squeezeBits)
			if item < bulkBlocks && q < 1<<subBits {
				first := item<<g.wBits + q*size
				lo, hi = g.squeezeLow(item, first+size-1), g.squeezeHigh(item, first)
			}
			g.sub[item<<2|q] = uint32(lo | (hi-1)<<squeezeBits)
		}
	}
}

// sampleBits draws X. The common path spends one random word: bucket
// (10 bits), coin (16), U's first 16 bits, the sign, and 21 bits of the
// offset in the block (the rest, if W > 2^21, comes from the buffer).
func (g *tableGauss) sampleBits(b *bitbuf) int64 {
	for {
		if x, ok := g.fromWord(b, b.r.Uint64()); ok {
			return x
		}
	}
}

// fromWord runs one proposal from the random word u (and, on the slow
// paths, further bits from b): X, or false when the proposal is rejected.
func (g *tableGauss) fromWord(b *bitbuf, u uint64) (int64, bool) {
	item := u >> (64 - tableBits)
	if u>>(64-tableBits-coinBits)&(1<<coinBits-1) >= uint64(g.prob[item]) {
		item = uint64(g.alias[item])
	}
	v16 := u >> (offsetBits + 1) & (1<<squeezeBits - 1)
	var n uint64
	var ok bool
	switch {
	case item < bulkBlocks:
		off := u & g.offMask
		if g.wBits > offsetBits {
			off = off<<(g.wBits-offsetBits) | b.takeUpTo(g.wBits-offsetBits)
		}
		n = item<<g.wBits | off
		ok = v16 < uint64(g.squeeze[item]) || g.accept(b, n, item, 0, v16)
	case item == tailItem:
		n, ok = g.tail(b, v16)
	}
	switch {
	case !ok:
		return 0, false
	case u>>offsetBits&1 == 0:
		return int64(n), true
	case n != 0:
		return -int64(n), true
	}
	return 0, false // (−, 0): 0 is proposed with sign + only
}

// wordBlock is how many random words fill fetches from the source at once.
const wordBlock = 256

// wordQueue holds random words fetched a block at a time (r.Fill). fill
// takes its proposals from it, so that a draw resumed across calls with
// the same queue and bitbuf continues the same sequence.
type wordQueue struct {
	w [wordBlock]uint64
	k int // next unread word; wordBlock when empty
}

func newWordQueue() *wordQueue { return &wordQueue{k: wordBlock} }

// buildFast packs bucket j's two items into one word, j in the low half
// and alias[j] in the high one, and builds the quarter squeezes. fill uses
// them only when the offset fits the word (wBits ≤ offsetBits).
func (g *tableGauss) buildFast() {
	g.oneWord = g.wBits <= offsetBits
	for j := range uint64(tableSize) {
		g.fast[j] = j | uint64(g.alias[j])<<32
	}
	g.buildSub()
	g.buildPairs()
}

// buildPairs packs, for bucket j and quarter q, what fillAVX512's fast
// loop needs from one table read: alias[j] XOR j (bits 0–9), the low
// squeezes of quarter q of item alias[j] (16–31) and of item j (32–47),
// and the alias threshold P = prob[j] (48–63). P has 16 bits, so a bucket
// with prob[j] = 2^16, which never takes its alias, gets P = 2^16 − 1 and
// its own item and squeeze on both sides: a coin of 2^16 − 1 then picks j
// as it should.
func (g *tableGauss) buildPairs() {
	for j := range uint64(tableSize) {
		a, p := uint64(g.alias[j]), uint64(g.prob[j])
		if p == 1<<coinBits {
			a, p = j, 1<<coinBits-1
		}
		for q := range uint64(4) {
			lowJ := uint64(g.sub[j<<2|q]) & (1<<squeezeBits - 1)
			lowA := uint64(g.sub[a<<2|q]) & (1<<squeezeBits - 1)
			g.pairs[j<<2|q] = a ^ j | lowA<<16 | lowJ<<32 | p<<48
		}
	}
}

// fill sets dst[i] to step·X_i, or adds it when add is true, with
// independent draws X_i (each exact in float64 for a power of two step:
// |X| < 2^43). It is sampleBits's law exactly, faster: each proposal takes
// a fresh word from q, which fetches them from b.r a block at a time
// (b.r.Fill, fastest on a bulk source), and the common path decides it from the packed table
// without branching on the random alias coin or sign. That path is
// fastWord (table_fast_test.go) written out in the loop: X when U's first
// 16 bits v16 are below the low squeeze of the proposal's quarter block
// and n ≠ 0, a rejection when v16 is at or above its high squeeze. The alias
// choice is a shift by 0 or 32 (coin ≥ prob[j] exactly when
// prob[j] − 1 − coin borrows, both below 2^17), the sign a conditional
// negation. Every other word goes to fromWord, which decides it exactly as
// sampleBits would and draws any extra bits through b.
// TestTableGaussFastPath checks fastWord against fromWord word by word,
// and TestTableGaussFillReference fill against fastWord and fromWord.
// Words left in q stay for the next call. On CPUs with AVX-512 the loop
// is fillVector instead, which gives the same values from the same words.
func (g *tableGauss) fill(b *bitbuf, q *wordQueue, dst []float64, step float64, add bool) {
	if !g.oneWord {
		for i := range dst {
			x := float64(step * float64(g.sampleBits(b)))
			if add {
				x += dst[i]
			}
			dst[i] = x
		}
		return
	}
	if fillAVX {
		op := fillSet
		if add {
			op = fillAdd
		}
		g.fillVector(b, q, dst, step, op, 0)
		return
	}
	g.fillGo(b, q, dst, step, add)
}

// fillGo is fill's loop in Go (g.oneWord only).
func (g *tableGauss) fillGo(b *bitbuf, q *wordQueue, dst []float64, step float64, add bool) {
	for i := 0; i < len(dst); {
		if q.k == wordBlock {
			b.r.Fill(q.w[:])
			q.k = 0
		}
		for ; q.k < wordBlock; q.k++ {
			u := q.w[q.k]
			j := u >> (64 - tableBits)
			alias := (uint64(g.prob[j]) - 1 - u>>(64-tableBits-coinBits)&(1<<coinBits-1)) >> 63
			item := uint64(uint32(g.fast[j] >> (alias << 5)))
			off := u & g.offMask
			e := g.sub[(item<<2|off>>g.subShift)&(4*tableSize-1)]
			n := item<<(g.wBits&63) | off
			neg := int64(u<<(63-offsetBits)) >> 63 // −1 for the sign bit set, else 0
			x := int64(n) ^ neg - neg
			if v16 := uint16(u >> (offsetBits + 1)); v16 >= uint16(e) || n == 0 {
				if v16 > uint16(e>>squeezeBits) {
					continue // U ≥ ρ_high ≥ ρ(n): rejected
				}
				var ok bool
				if x, ok = g.fromWord(b, u); !ok {
					continue
				}
			}
			// The conversion keeps the product a rounding of its own (no
			// fused multiply-add), as in fillAVX512.
			y := float64(step * float64(x))
			if add {
				y += dst[i]
			}
			dst[i] = y
			if i++; i == len(dst) {
				q.k++
				return
			}
		}
	}
}

// What fillVector does with dst[i], given the draw's value y = step·X:
// set it to y, add y to it, or (fillRound) replace it by
// y + grid·round(src[i]/grid), AddTo's rounding to the grid and its noise
// in one pass (src is dst itself, except in fillVectorFrom); fillTree is
// fillRound and then pre[i] += dst[i], a tree node's release and its
// prefix update in the same pass (Tree.Flush); fillTreeLevel is fillTree
// after the lower levels that Flush adds to the node and takes off the
// prefix: src[i] += levs[2k][i] and pre[i] −= levs[2k+1][i] for k in turn.
const (
	fillSet = iota
	fillAdd
	fillRound
	fillTree
	fillTreeLevel
)

// fillVector is fill's loop (g.oneWord only) for CPUs with AVX-512, and
// with op = fillRound AddTo's too. fillAVX512 runs the common path eight
// words at a time: fillGo's fast path (fastWord) in every lane, the
// accepted lanes' values stored in order (compressed). A group whose eight
// lanes all accept, the common case, costs one table gather (pairs: both
// of the bucket's items' squeezes and its alias coin in one word); only
// the other groups read sub for the reject bound. It stops at the
// first word that fillGo would pass to fromWord, at the end of
// q's block, or when dst is full, so that the words it consumes are
// exactly those the scalar loop would consume; the scalar loop (fillGo)
// then places the next value from that word on, so the slow paths, and
// the order in which they draw further bits from b.r relative to q's
// refills, stay its own. So fill's output, the words left in q and b's state
// are the scalar loop's, bit for bit: TestTableGaussFillVector compares
// the two routes over many σ², lengths and chunkings, and
// FuzzTableGaussFillVector over random ones. The arithmetic of a value
// is the same sequence of float64 operations, each rounded on its own
// (the division by a power of two grid is the multiplication by its exact
// inverse, and round half away from zero is t + trunc(2(v − t)) with
// t = trunc(v), both exact).
func (g *tableGauss) fillVector(b *bitbuf, q *wordQueue, dst []float64, step float64, op int, grid float64) {
	var src []float64
	if op == fillRound {
		src = dst
	}
	g.fillVectorFrom(b, q, dst, step, op, grid, src, nil, nil)
}

// fillVectorFrom is fillVector with the rounding ops' input read from
// src, and the tree ops' vectors pre and levs (all at least of dst's
// length; nil where the op does not use them; levs holds pairs, at least
// one for fillTreeLevel): for fillTreeLevel src[i] += levs[2k][i] and
// pre[i] −= levs[2k+1][i] for k in turn, then dst[i] = y + grid·round(src[i]/grid),
// then for the tree ops pre[i] += dst[i]. Each coordinate is the same
// float64 operations in the same order as Tree.Flush's separate passes
// (addTo, subFrom, copy, roundTo, adding the noise, adding dst to pre), so
// the values are theirs bit for bit.
func (g *tableGauss) fillVectorFrom(b *bitbuf, q *wordQueue, dst []float64, step float64, op int, grid float64, src, pre []float64, levs [][]float64) {
	var inv float64
	if op >= fillRound {
		inv = 1 / grid
	}
	for i := 0; i < len(dst); {
		if q.k == wordBlock {
			b.r.Fill(q.w[:])
			q.k = 0
		}
		var s, p []float64
		if op >= fillRound {
			s = src[i:]
		}
		if op >= fillTree {
			p = pre[i:]
		}
		words, outs := fillAVX512(&g.pairs, &g.sub, g.offMask, uint64(g.subShift), uint64(g.wBits),
			q.w[q.k:], dst[i:], step, grid, inv, op, s, p, levs, 8*i)
		q.k += words
		if i += outs; i == len(dst) || q.k == wordBlock {
			continue
		}
		// q.w[q.k] needs the slow path: the Go loop places the next value
		// (the lower level and AddTo's rounding first, in the ops with them).
		if op == fillTreeLevel {
			for k := 0; k < len(levs); k += 2 {
				src[i] += levs[k][i]
				pre[i] -= levs[k+1][i]
			}
		}
		if op >= fillRound {
			dst[i] = float64(grid * math.Round(src[i]*inv))
		}
		g.fillGo(b, q, dst[i:i+1], step, op != fillSet)
		if op >= fillTree {
			pre[i] += dst[i]
		}
		i++
	}
}

// tail proposes from the halving tail blocks.
func (g *tableGauss) tail(b *bitbuf, v16 uint64) (uint64, bool) {
	var i uint64
	for b.bit() == 0 {
		i++
	}
	if g.nMax < g.n0 || i > (g.nMax-g.n0)>>g.tBits {
		return 0, false
	}
	n := g.n0 + i<<g.tBits + b.takeUpTo(g.tBits)
	if n > g.nMax {
		return 0, false
	}
	return n, g.accept(b, n, tailItem, i, v16)
}

// accept decides U < ρ(n) given U's first 16 bits v16 (tiers 2 and 3).
// For the tail, i is the tail block index (ρ carries a factor 2^i).
func (g *tableGauss) accept(b *bitbuf, n, item, i, v16 uint64) bool {
	v := v16<<(64-squeezeBits) | b.takeUpTo(64-squeezeBits)
	if g.exactOnly {
		return g.acceptExact(b, n, item, i, v)
	}
	nf := float64(n)
	x := nf * nf / (2 * g.s2)
	lr := -x - g.logc[item] + float64(i)*math.Ln2
	errAbs := 0x1p-44 * (x + math.Abs(g.logc[item]) + float64(i) + 1)
	lo := math.Exp(lr-errAbs) * (1 - 0x1p-44)
	hi := math.Exp(lr+errAbs) * (1 + 0x1p-44)
	// U ∈ [v, v+1)·2^−64; float64(v) is within 2^11 of v.
	uf := math.Ldexp(float64(v), -64)
	switch {
	case uf+0x1p-52 <= lo:
		return true
	case uf-0x1p-52 >= hi:
		return false
	}
	return g.acceptExact(b, n, item, i, v)
}

// acceptExact decides U < ρ(n) = exp(−x)·R with big arithmetic, drawing
// more words of U until U and ρ's bracket separate.
func (g *tableGauss) acceptExact(b *bitbuf, n, item, i, v uint64) bool {
	x, r := g.exactRatio(n, item, i)
	words := []uint64{v}
	for prec := uint(128); ; prec *= 2 {
		lo, hi := expNegInterval(x, prec)
		lo.SetMode(big.ToNegativeInf).Mul(lo, new(big.Float).SetMode(big.ToNegativeInf).SetPrec(lo.Prec()).SetRat(r))
		hi.SetMode(big.ToPositiveInf).Mul(hi, new(big.Float).SetMode(big.ToPositiveInf).SetPrec(hi.Prec()).SetRat(r))
		for uint(len(words))*64 < prec {
			words = append(words, b.r.Uint64())
		}
		ulo, uhi := uniformBracket(words)
		if uhi.Cmp(lo) <= 0 {
			return true
		}
		if ulo.Cmp(hi) >= 0 {
			return false
		}
	}
}

// exactRatio returns x = n²/(2σ²) and R with ρ(n) = exp(−x)·R: R = z/w_j
// in the bulk, and 2^i·2·Wt·z/(w_t·W) in the tail.
func (g *tableGauss) exactRatio(n, item, i uint64) (x, r *big.Rat) {
	nn := new(big.Int).SetUint64(n)
	nn.Mul(nn, nn).Mul(nn, new(big.Int).SetUint64(g.den))
	d := new(big.Int).SetUint64(g.num)
	x = new(big.Rat).SetFrac(nn, d.Lsh(d, 1))
	r = new(big.Rat).SetFloat64(g.z)
	r.Quo(r, new(big.Rat).SetInt(new(big.Int).SetUint64(g.weight[item])))
	if item == tailItem {
		scale := new(big.Int).Lsh(big.NewInt(1), uint(i)+1+g.tBits) // 2^i · 2 · Wt
		r.Mul(r, new(big.Rat).SetFrac(scale, new(big.Int).Lsh(big.NewInt(1), g.wBits)))
	}
	return x, r
}

// uniformBracket returns [U_lo, U_lo + 2^−64k], the interval of U known
// from its first k words.
func uniformBracket(words []uint64) (lo, hi *big.Float) {
	m := new(big.Int)
	for _, w := range words {
		m.Lsh(m, 64).Or(m, new(big.Int).SetUint64(w))
	}
	k := 64 * len(words)
	lo = new(big.Float).SetPrec(uint(k)+1).SetMantExp(new(big.Float).SetInt(m), -k)
	hi = new(big.Float).SetPrec(uint(k)+1).SetMantExp(new(big.Float).SetInt(m.Add(m, big.NewInt(1))), -k)
	return lo, hi
}

// expNegInterval returns big.Floats lo ≤ exp(−x) ≤ hi for rational
// 0 ≤ x ≤ 2^22 (bulk proposals of a small σ reach about 2^21), with hi − lo ≤ 2^−prec·exp(−x) or better. It halves x
// s times to y ≤ 1/2, brackets exp(−y) by two consecutive partial sums of
// its alternating Taylor series (terms decrease because y < 1), rounds the
// bounds outward, and squares them s times with outward rounding.
func expNegInterval(x *big.Rat, prec uint) (lo, hi *big.Float) {
	y := new(big.Rat).Set(x)
	half := big.NewRat(1, 2)
	s := 0
	for y.Cmp(half) > 0 {
		y.Mul(y, half)
		s++
	}
	wp := prec + uint(s) + 64
	tiny := new(big.Rat).SetFrac(big.NewInt(1), new(big.Int).Lsh(big.NewInt(1), wp))
	sum := big.NewRat(1, 1)
	term := big.NewRat(1, 1)
	prev := new(big.Rat).Set(sum)
	for k := int64(1); ; k++ {
		term.Mul(term, y).Quo(term, big.NewRat(k, 1))
		prev.Set(sum)
		if k%2 == 1 {
			sum.Sub(sum, term)
		} else {
			sum.Add(sum, term)
		}
		if term.Cmp(tiny) < 0 {
			break
		}
	}
	l, h := sum, prev // the last two partial sums bracket exp(−y)
	if l.Cmp(h) > 0 {
		l, h = h, l
	}
	lo = new(big.Float).SetPrec(wp).SetMode(big.ToNegativeInf).SetRat(l)
	hi = new(big.Float).SetPrec(wp).SetMode(big.ToPositiveInf).SetRat(h)
	for range s {
		lo.Mul(lo, lo)
		hi.Mul(hi, hi)
	}
	return lo, hi
}

// takeUpTo returns k uniform bits for 0 ≤ k ≤ 64. Unlike take it keeps
// the buffered bits and completes them from the next word.
func (b *bitbuf) takeUpTo(k uint) uint64 {
	if k <= b.n {
		b.n -= k
		return b.w >> b.n & (1<<k - 1)
	}
	have := b.n
	hi := b.w & (1<<have - 1)
	b.refill()
	b.n -= k - have
	lo := b.w >> b.n & (1<<(k-have) - 1)
	return hi<<(k-have) | lo
}
