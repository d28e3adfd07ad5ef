package mech

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/dpal-dev/dpal/dp/rng"
)

// constSource returns one word forever and counts its calls.
type constSource struct {
	w     uint64
	calls int
}

func (c *constSource) Uint64() uint64 { c.calls++; return c.w }

// fastWords returns random words plus, for every bucket, the words at the
// edges of fastWord's decisions: coin at the alias threshold, U's first 16
// bits at each squeeze bound of the quarter, both signs, offsets at the
// quarters' ends.
func fastWords(g *tableGauss, pick *rand.Rand) []uint64 {
	words := make([]uint64, 0, 400000)
	for range 100000 {
		words = append(words, pick.Uint64())
	}
	size := uint64(1) << g.subShift
	for j := range uint64(tableSize) {
		for _, coin := range []uint64{uint64(g.prob[j]) - 1, uint64(g.prob[j]), 0, 1<<coinBits - 1} {
			coin &= 1<<coinBits - 1
			item := j
			if coin >= uint64(g.prob[j]) {
				item = uint64(g.alias[j])
			}
			for q := range uint64(4) {
				for _, off := range []uint64{q * size, q*size + size - 1, q*size + pick.Uint64N(size)} {
					off &= g.offMask
					e := uint64(g.sub[item<<2|off>>g.subShift])
					lo, hiM1 := e&(1<<squeezeBits-1), e>>squeezeBits
					for _, v16 := range []uint64{lo - 1, lo, hiM1, hiM1 + 1, 0} {
						v16 &= 1<<squeezeBits - 1
						for _, sign := range []uint64{0, 1} {
							words = append(words, j<<(64-tableBits)|coin<<(64-tableBits-coinBits)|v16<<(offsetBits+1)|sign<<offsetBits|off)
						}
					}
				}
			}
		}
	}
	return words
}

// Verdicts of fastWord.
const (
	fastAccept = iota
	fastReject
	fastSlow
)

// fastWord is the common path that fill writes out in its loop: X and
// fastAccept when U's first 16 bits are below the low squeeze of the
// proposal's quarter block and n ≠ 0, fastReject when they are at or above
// its high squeeze, else fastSlow (u then goes to fromWord).
func (g *tableGauss) fastWord(u uint64) (int64, int) {
	j := u >> (64 - tableBits)
	alias := (uint64(g.prob[j]) - 1 - u>>(64-tableBits-coinBits)&(1<<coinBits-1)) >> 63
	item := uint64(uint32(g.fast[j] >> (alias << 5)))
	off := u & g.offMask
	e := g.sub[item<<2|off>>g.subShift]
	n := item<<g.wBits | off
	neg := int64(u<<(63-offsetBits)) >> 63
	v16 := uint16(u >> (offsetBits + 1))
	switch {
	case v16 < uint16(e) && n != 0:
		return int64(n) ^ neg - neg, fastAccept
	case v16 > uint16(e>>squeezeBits):
		return 0, fastReject
	}
	return 0, fastSlow
}

// fill's loop is fastWord, then fromWord: a plain loop over the same words
// gives the same vector, bit for bit, in both modes, however the vector is
// cut into calls.
func TestTableGaussFillReference(t *testing.T) {
	for _, nd := range [][2]uint64{{1, 4}, {30, 1}, {1 << 20, 3}, {2310000 * 2310000, 1}} {
		g := mustTable(t, nd[0], nd[1])
		for _, add := range []bool{false, true} {
			got, want := make([]float64, 3000), make([]float64, 3000)
			for i := range got {
				got[i], want[i] = float64(i), float64(i)
			}
			// In chunks of a few sizes: the stream must not depend on them.
			b0, q := bitbuf{r: rng.Seeded(8).Bulk()}, newWordQueue()
			for lo, c := 0, 1; lo < len(got); lo, c = lo+c, c*3+1 {
				g.fill(&b0, q, got[lo:min(lo+c, len(got))], 0.5, add)
			}
			r := rng.Seeded(8).Bulk()
			b := bitbuf{r: r}
			var words [wordBlock]uint64
			for i := 0; i < len(want); {
				r.Fill(words[:])
				for _, u := range words {
					x, v := g.fastWord(u)
					if v == fastReject {
						continue
					}
					if v == fastSlow {
						var ok bool
						if x, ok = g.fromWord(&b, u); !ok {
							continue
						}
					}
					if !add {
						want[i] = 0
					}
					want[i] += 0.5 * float64(x)
					if i++; i == len(want) {
						break
					}
				}
			}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("σ² = %d/%d add=%v: fill[%d] = %v, reference %v", nd[0], nd[1], add, i, got[i], want[i])
				}
			}
		}
	}
}

// Every word that fill's fast path decides, fromWord (sampleBits's step)
// decides the same way: an accepted word gives the same X even when the
// further bits of U are all one (its largest value, so for every value),
// and a rejected one is rejected even when they are all zero. So fill's law is
// sampleBits's, which the PMF, tier and table tests establish. The fast
// path must also decide nearly every word, or it saves nothing.
func TestTableGaussFastPath(t *testing.T) {
	pick := rand.New(rand.NewPCG(3, 4))
	for _, nd := range [][2]uint64{{1, 4}, {1, 3}, {5, 2}, {30, 1}, {1640, 1}, {1 << 20, 3}, {2310000 * 2310000, 1}, {1 << 52, 1}} {
		g := mustTable(t, nd[0], nd[1])
		if !g.oneWord {
			t.Fatalf("σ² = %d/%d: no fast path", nd[0], nd[1])
		}
		decided := 0
		for k, u := range fastWords(g, pick) {
			x, v := g.fastWord(u)
			if v == fastSlow {
				continue
			}
			if k < 100000 {
				decided++
			}
			// U's further bits all ones (accept) or all zero (reject): the
			// case hardest for the fast path's verdict.
			further := uint64(0)
			if v == fastAccept {
				further = math.MaxUint64
			}
			b := bitbuf{r: rng.FromSource(&constSource{w: further})}
			y, ok := g.fromWord(&b, u)
			switch {
			case v == fastAccept && (!ok || y != x):
				t.Fatalf("σ² = %d/%d, word %#x: fast path accepts %d, fromWord %d %v with U's further bits 1", nd[0], nd[1], u, x, y, ok)
			case v == fastReject && ok:
				t.Fatalf("σ² = %d/%d, word %#x: fast path rejects, fromWord accepts %d with U's further bits 0", nd[0], nd[1], u, y)
			}
		}
		if rate := float64(decided) / 100000; nd[0]/nd[1] >= 1<<20 && rate < 0.995 {
			t.Errorf("σ² = %d/%d: fast path decides only %.4f of the words", nd[0], nd[1], rate)
		}
	}
}

// fill's draws have the exact pmf (small σ) or the normal shape (large σ,
// both with and without the fast path).
func TestTableGaussAddTo(t *testing.T) {
	draw := func(g *tableGauss, seed uint64, n int) []int64 {
		v := make([]float64, n)
		fillFrom(g, rng.Seeded(seed), v, 1)
		xs := make([]int64, n)
		for i, x := range v {
			xs[i] = int64(x)
		}
		return xs
	}
	for _, c := range []struct {
		num, den uint64
		n        int
	}{{1, 4, 100000}, {5, 2, 100000}, {100, 1, 200000}, {1640, 1, 200000}, {1 << 20, 3, 400000}} {
		g := mustTable(t, c.num, c.den)
		s2 := float64(c.num) / float64(c.den)
		xs := draw(g, c.num, c.n)
		counts := map[int64]int{}
		for _, x := range xs {
			counts[x]++
		}
		name := "fill σ²=" + big.NewRat(int64(c.num), int64(c.den)).RatString()
		checkMoments(t, name, xs, 0, dgVariance(s2))
		w := int64(6*math.Sqrt(s2)) + 3
		chiSquare(t, name, counts, c.n, dgPMF(s2), -w, w)
	}
	for _, s2 := range []uint64{1 << 46, 1 << 60} {
		g := mustTable(t, s2, 1)
		name := fmt.Sprintf("fill σ²=%d (one word %v)", s2, g.oneWord)
		xs := draw(g, 7, 100000)
		normalChiSquare(t, name, xs, math.Sqrt(float64(s2)))
		checkMoments(t, name, xs, 0, float64(s2))
	}
}

// fillFrom runs fill on a bulk child of r.
func fillFrom(g *tableGauss, r *rng.Rand, dst []float64, step float64) {
	g.fill(&bitbuf{r: r.Bulk()}, newWordQueue(), dst, step, false)
}

// Noise is AddTo's release on the zero vector, on both paths, and AddTo
// of v is g·round(v/g) plus that noise under the same seed.
func TestGaussianVectorNoise(t *testing.T) {
	for _, d := range []int{3, bulkMinDim + 5} {
		m, err := NewGaussianVector(1.1, 1, d)
		if err != nil {
			t.Fatal(err)
		}
		noise, v := make([]float64, d), make([]float64, d)
		if err := m.Noise(rng.Seeded(4), noise); err != nil {
			t.Fatal(err)
		}
		for i := range v {
			v[i] = float64(i%7) * 0.013
		}
		want := make([]float64, d)
		for i, x := range v {
			want[i] = m.g*math.Round(x/m.g) + noise[i]
		}
		if err := m.AddTo(rng.Seeded(4), v); err != nil {
			t.Fatal(err)
		}
		for i := range v {
			if v[i] != want[i] {
				t.Fatalf("d=%d: AddTo[%d] = %v, g·round(v/g) + Noise = %v", d, i, v[i], want[i])
			}
		}
		if err := m.Noise(rng.Seeded(4), noise[1:]); err == nil {
			t.Errorf("d=%d: Noise accepted a short vector", d)
		}
	}
}
