package mech

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/dpal-dev/dpal/dp/rng"
	"gonum.org/v1/gonum/stat/distuv"
)

func mustTable(t *testing.T, num, den uint64) *tableGauss {
	t.Helper()
	g, err := newTableGauss(num, den)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func drawTable(g *tableGauss, seed uint64, n int) ([]int64, map[int64]int) {
	b := bitbuf{r: rng.Seeded(seed)}
	xs := make([]int64, n)
	counts := map[int64]int{}
	for i := range xs {
		xs[i] = g.sampleBits(&b)
		counts[xs[i]]++
	}
	return xs, counts
}

// The table sampler matches the exact pmf at small and moderate σ, where
// single values can be binned, including a non-integer σ².
func TestTableGaussPMF(t *testing.T) {
	for _, c := range []struct {
		num, den uint64
		n        int
	}{{1, 4, 100000}, {1, 1, 100000}, {5, 2, 100000}, {100, 1, 200000}, {1640, 1, 200000}, {1 << 20, 3, 400000}} {
		g := mustTable(t, c.num, c.den)
		s2 := float64(c.num) / float64(c.den)
		xs, counts := drawTable(g, c.num+c.den, c.n)
		name := "table σ²=" + big.NewRat(int64(c.num), int64(c.den)).RatString()
		checkMoments(t, name, xs, 0, dgVariance(s2))
		w := int64(6*math.Sqrt(s2)) + 3
		chiSquare(t, name, counts, c.n, dgPMF(s2), -w, w)
	}
}

// normalChiSquare bins draws by the quantiles of N(0, σ²): at large σ the
// discrete and continuous laws differ by far less than a bin.
func normalChiSquare(t *testing.T, name string, xs []int64, sigma float64) {
	t.Helper()
	const bins = 40
	std := distuv.Normal{Mu: 0, Sigma: sigma}
	counts := make([]int, bins)
	for _, x := range xs {
		k := int(std.CDF(float64(x)) * bins)
		counts[min(k, bins-1)]++
	}
	var stat float64
	e := float64(len(xs)) / bins
	for _, c := range counts {
		stat += (float64(c) - e) * (float64(c) - e) / e
	}
	if crit := (distuv.ChiSquared{K: bins - 1}).Quantile(1 - chiSqRate); stat > crit {
		t.Errorf("%s: chi-square %.1f > %.1f", name, stat, crit)
	}
}

// Large σ, including block widths beyond the 21 offset bits of the
// proposal word (σ² ≥ 2^56), where the rest of the offset comes from the
// bit buffer: the direction sampler's σ = 2^26 and coarsened DP-SGD noise.
func TestTableGaussLargeSigma(t *testing.T) {
	for _, s2 := range []uint64{1 << 52, 1 << 56, 1 << 60, math.MaxUint64} {
		g := mustTable(t, s2, 1)
		xs, _ := drawTable(g, s2%1000+5, 100000)
		sigma := math.Sqrt(float64(s2))
		name := fmt.Sprintf("table σ²=%d (wBits %d)", s2, g.wBits)
		normalChiSquare(t, name, xs, sigma)
		checkMoments(t, name, xs, 0, float64(s2))
	}
}

// Forcing every bulk proposal through tier 2 (no squeeze), and every
// non-squeezed proposal through the big-number tier 3, leaves the law
// unchanged: at σ² = 30 (blocks of one value) and σ² = 2^20 (blocks of 16).
func TestTableGaussSlowTiers(t *testing.T) {
	const s2 = 30
	g := mustTable(t, s2, 1)
	g.squeeze = [tableSize]uint16{}
	_, counts := drawTable(g, 9, 100000)
	chiSquare(t, "tier 2 only", counts, 100000, dgPMF(s2), -40, 40)
	g.exactOnly = true
	_, counts = drawTable(g, 10, 6000)
	chiSquare(t, "tier 3 only", counts, 6000, dgPMF(s2), -40, 40)

	wide := mustTable(t, 1<<20, 1)
	if wide.wBits == 0 {
		t.Fatal("σ² = 2^20 should have blocks wider than 1")
	}
	wide.squeeze = [tableSize]uint16{}
	xs, _ := drawTable(wide, 11, 100000)
	normalChiSquare(t, "tier 2 only, σ = 1024", xs, 1024)
	wide.exactOnly = true
	xs, _ = drawTable(wide, 12, 6000)
	normalChiSquare(t, "tier 3 only, σ = 1024", xs, 1024)
}

// The tail item's law. Its real weight is so small that no test would see
// an accepted tail draw, so the envelope is tightened to c_t ≈ f(n0) (z
// rescaled; only the tail item is used) and the accepted n ≥ n0 are
// compared with f restricted to the tail, in bins of a fifth of f's
// e-folding length there; tier 3 alone is checked too.
func TestTableGaussTail(t *testing.T) {
	for _, c := range []struct {
		s2    uint64
		exact bool
		n     int
	}{{1 << 20, false, 50000}, {16320, false, 50000}, {1 << 40, false, 50000}, {1 << 20, true, 1500}} {
		g := mustTable(t, c.s2, 1)
		if float64(g.n0) < 8*math.Sqrt(float64(c.s2)) {
			t.Fatalf("σ² = %d: n0 = %d is below 8σ", c.s2, g.n0)
		}
		scale := math.Ldexp(2, int(g.tBits)-int(g.wBits)) // tail envelope mass per unit height
		f0 := g.f(float64(g.n0))
		g.z = float64(g.weight[tailItem]) / (f0 * scale) * (1 - 1e-6)
		g.logc[tailItem] = math.Log(float64(g.weight[tailItem]) / (g.z * scale))
		g.exactOnly = c.exact

		x0, s2 := float64(g.n0), float64(c.s2)
		width := s2 / x0 / 5
		const bins = 30
		var want [bins + 1]float64
		var total float64
		step := math.Max(1, math.Floor(width/50))
		for n := x0; n < x0+200*width; n += step {
			var w float64
			for k := 0.0; k < step; k++ {
				w += math.Exp(-((n+k)*(n+k) - x0*x0) / (2 * s2))
			}
			want[min(int((n-x0)/width), bins)] += w
			total += w
		}
		counts := map[int64]int{}
		b := bitbuf{r: rng.Seeded(c.s2)}
		for hits := 0; hits < c.n; {
			if m, ok := g.tail(&b, b.r.Uint64()>>48); ok {
				counts[int64(min(int((float64(m)-x0)/width), bins))]++
				hits++
			}
		}
		pmf := func(k int64) float64 { return want[k] / total }
		chiSquare(t, fmt.Sprintf("tail σ²=%d exact=%v", c.s2, c.exact), counts, c.n, pmf, 0, bins)
	}
}

// refRho returns an upper bound of ρ(n) tight to about prec bits.
func refRho(g *tableGauss, n, item, i uint64, prec uint) *big.Float {
	x, r := g.exactRatio(n, item, i)
	_, hi := expNegInterval(x, prec)
	return new(big.Float).SetPrec(prec).SetMode(big.ToPositiveInf).Mul(hi, new(big.Float).SetPrec(prec).SetMode(big.ToPositiveInf).SetRat(r))
}

// The tables are valid envelopes, checked for every block against an
// upper bound of ρ: the alias reproduces the weights exactly, ρ ≤ 1 at each bulk
// block's left end and at the tail blocks' starts, the squeeze is below ρ
// at each block's right end, and n0·Wt ≥ σ²·ln 2 holds exactly.
func TestTableGaussTables(t *testing.T) {
	cases := [][2]uint64{{1, 3}, {30, 1}, {1 << 20, 3}, {1 << 52, 1}, {math.MaxUint64, math.MaxUint64 >> 2}}
	ln2, _ := new(big.Rat).SetString("0.69314718055994530942") // > ln 2
	one := big.NewFloat(1)
	for _, nd := range cases {
		g := mustTable(t, nd[0], nd[1])
		var total [tableSize]uint64
		for i := range tableSize {
			total[i] += uint64(g.prob[i])
			total[g.alias[i]] += 1<<coinBits - uint64(g.prob[i])
		}
		var sum uint64
		for i := range tableSize {
			if total[i] != g.weight[i] {
				t.Fatalf("σ²=%d/%d: alias gives item %d weight %d, want %d", nd[0], nd[1], i, total[i], g.weight[i])
			}
			sum += g.weight[i]
		}
		if sum != 1<<(tableBits+coinBits) {
			t.Fatalf("weights sum to %d", sum)
		}
		for j := range uint64(bulkBlocks) {
			if rho := refRho(g, j<<g.wBits, j, 0, 64); rho.Cmp(one) > 0 {
				t.Fatalf("σ²=%d/%d: block %d: envelope below f (ρ = %v)", nd[0], nd[1], j, rho)
			}
			x, r := g.exactRatio((j+1)<<g.wBits-1, j, 0)
			lo, _ := expNegInterval(x, 64)
			rho := new(big.Float).Mul(lo, new(big.Float).SetRat(r))
			if sq := new(big.Float).SetMantExp(big.NewFloat(float64(g.squeeze[j])), -squeezeBits); sq.Cmp(rho) > 0 {
				t.Fatalf("σ²=%d/%d: block %d: squeeze %v above ρ %v", nd[0], nd[1], j, sq, rho)
			}
		}
		for i := range uint64(20) {
			if n := g.n0 + i<<g.tBits; n <= g.nMax {
				if rho := refRho(g, n, tailItem, i, 64); rho.Cmp(one) > 0 {
					t.Fatalf("σ²=%d/%d: tail block %d: ρ = %v", nd[0], nd[1], i, rho)
				}
			}
		}
		lhs := new(big.Int).Mul(new(big.Int).SetUint64(g.n0), new(big.Int).Lsh(new(big.Int).SetUint64(nd[1]), g.tBits))
		if new(big.Rat).SetInt(lhs).Cmp(new(big.Rat).Mul(ln2, new(big.Rat).SetInt(new(big.Int).SetUint64(nd[0])))) < 0 {
			t.Errorf("σ²=%d/%d: tail blocks do not halve the envelope", nd[0], nd[1])
		}
	}
}

// wordSource replays given words, then a fixed PCG stream.
type wordSource struct {
	words []uint64
	next  int
	rest  *rand.PCG
}

func (s *wordSource) Uint64() uint64 {
	if s.next < len(s.words) {
		s.next++
		return s.words[s.next-1]
	}
	return s.rest.Uint64()
}

// Decisions at U = ρ ± 2^e for e down to −260 are right in tiers 2 and 3,
// in bulk and tail blocks: the margins and the big-number bracket never
// decide wrongly, however close U is to ρ.
func TestTableGaussDecisions(t *testing.T) {
	pick := rand.New(rand.NewPCG(7, 8))
	for _, nd := range [][2]uint64{{1, 4}, {30, 1}, {5, 2}, {16321, 1}, {1 << 52, 1}, {math.MaxUint64, 7}} {
		g := mustTable(t, nd[0], nd[1])
		for trial := range 15 {
			var n, item, i uint64
			if trial%3 == 0 && g.nMax >= g.n0 {
				item, i = tailItem, pick.Uint64N(6)
				if n = g.n0 + i<<g.tBits + pick.Uint64N(1<<g.tBits); n > g.nMax {
					continue
				}
			} else {
				lim := uint64(bulkBlocks)
				if g.wBits == 0 {
					lim = 40 // blocks of one value: stay where f is not 0
				}
				item = pick.Uint64N(lim)
				n = item<<g.wBits + pick.Uint64N(1<<g.wBits)
			}
			rho := refRho(g, n, item, i, 400)
			for _, e := range []int{-2, -20, -40, -43, -45, -50, -53, -64, -100, -200, -260} {
				for _, sign := range []float64{1, -1} {
					u := new(big.Float).SetPrec(600).Add(rho, new(big.Float).SetMantExp(big.NewFloat(sign*(1+pick.Float64())), e))
					if u.Sign() <= 0 || u.Cmp(big.NewFloat(1)) >= 0 || rho.Sign() == 0 {
						continue
					}
					words := fractionWords(u, 5)
					for _, exact := range []bool{false, true} {
						g.exactOnly = exact
						src := &wordSource{words: append([]uint64{words[0] << squeezeBits}, words[1:]...), rest: rand.NewPCG(1, 1)}
						b := bitbuf{r: rng.FromSource(src)}
						if got := g.accept(&b, n, item, i, words[0]>>(64-squeezeBits)); got != (sign < 0) {
							t.Fatalf("σ²=%d/%d n=%d item=%d U=ρ%+g·2^%d exact=%v: accepted %v", nd[0], nd[1], n, item, sign, e, exact, got)
						}
					}
					g.exactOnly = false
				}
			}
		}
	}
}

// fractionWords returns the first k 64-bit words of u ∈ (0, 1)'s binary
// expansion.
func fractionWords(u *big.Float, k int) []uint64 {
	m, _ := new(big.Float).SetMantExp(u, 64*k).Int(nil)
	words := make([]uint64, k)
	mask := new(big.Int).SetUint64(math.MaxUint64)
	for j := k - 1; j >= 0; j-- {
		words[j] = new(big.Int).And(m, mask).Uint64()
		m.Rsh(m, 64)
	}
	return words
}

func TestExpNegInterval(t *testing.T) {
	for _, x := range []*big.Rat{big.NewRat(0, 1), big.NewRat(1, 3), big.NewRat(1, 2), big.NewRat(7, 1), big.NewRat(1000001, 1000), big.NewRat(1<<20, 1)} {
		for _, prec := range []uint{64, 128, 512} {
			lo, hi := expNegInterval(x, prec)
			if lo.Cmp(hi) > 0 {
				t.Fatalf("exp(-%v): lo > hi", x)
			}
			xf, _ := x.Float64()
			want := math.Exp(-xf)
			l, _ := lo.Float64()
			h, _ := hi.Float64()
			if want > 0 && (math.Abs(l-want) > 1e-14*want || math.Abs(h-want) > 1e-14*want) {
				t.Errorf("exp(-%v) in [%v, %v], want %v", x, l, h, want)
			}
			width := new(big.Float).Sub(hi, lo)
			width.Quo(width, hi)
			if width.Cmp(new(big.Float).SetMantExp(big.NewFloat(1), -int(prec))) > 0 {
				t.Errorf("exp(-%v) at prec %d: relative width %v", x, prec, width)
			}
		}
	}
	// exp(−1) against its published digits, beyond float64.
	lo, hi := expNegInterval(big.NewRat(1, 1), 160)
	e1 := new(big.Float).SetPrec(400)
	e1.SetString("0.36787944117144232159552377016146086744581113103176783450783680169746149574489980335714727434591964375")
	if lo.Cmp(e1) > 0 || hi.Cmp(e1) < 0 {
		t.Errorf("exp(-1) bracket [%v, %v] misses %v", lo, hi, e1)
	}
}

// expNegIntervalRat is expNegInterval as first written, its partial sums
// term by term in big.Rat (a gcd at every operation): the reference the
// integer version must match bit for bit.
func expNegIntervalRat(x *big.Rat, prec uint) (lo, hi *big.Float) {
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
	return squareOut(sum, prev, wp, s)
}

// TestExpNegIntervalMatchesRat: the integer partial sums give exactly the
// bounds of the big.Rat ones, at the ratios the sampler forms (n²·den /
// 2num, n up to 2^11, σ² from 1/4 to 2^64) and edge values, at the
// precisions it uses.
func TestExpNegIntervalMatchesRat(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	xs := []*big.Rat{big.NewRat(0, 1), big.NewRat(1, 2), big.NewRat(1<<22, 1), big.NewRat(1<<22+1, 2)}
	for range 60 {
		n := new(big.Int).SetUint64(r.Uint64N(1 << 11))
		num, den := r.Uint64()>>r.UintN(64), 1+r.Uint64N(8)
		nn := new(big.Int).Mul(n, n)
		nn.Mul(nn, new(big.Int).SetUint64(den))
		d := new(big.Int).SetUint64(max(num, 1))
		x := new(big.Rat).SetFrac(nn, d.Lsh(d, 1))
		if x.Cmp(big.NewRat(1<<22, 1)) <= 0 {
			xs = append(xs, x)
		}
	}
	if len(xs) < 40 {
		t.Fatalf("only %d ratios in range", len(xs))
	}
	for _, x := range xs {
		for _, prec := range []uint{64, 400} {
			lo, hi := expNegInterval(x, prec)
			wlo, whi := expNegIntervalRat(x, prec)
			if lo.Cmp(wlo) != 0 || hi.Cmp(whi) != 0 || lo.Prec() != wlo.Prec() || hi.Prec() != whi.Prec() {
				t.Fatalf("exp(−%v) at prec %d: [%v, %v], big.Rat gives [%v, %v]", x, prec, lo, hi, wlo, whi)
			}
		}
	}
}

// TestExpNegIntervalAllocs (issue 24): the big-number bracket stays a few
// dozen allocations (66 at 64 bits, 92 at 400 for x ≈ 36; the big.Rat
// version made 858 and 2,299, and its gcds were most of the table tests'
// time: 25 s of dp/mech's 35).
func TestExpNegIntervalAllocs(t *testing.T) {
	g := mustTable(t, 1<<20, 3)
	x, _ := g.exactRatio(5000, 3, 0)
	for _, prec := range []uint{64, 400} {
		if a := testing.AllocsPerRun(10, func() { expNegInterval(x, prec) }); a > 200 {
			t.Errorf("exp(−%s) at %d bits: %v allocations per call", x.FloatString(3), prec, a)
		}
	}
}

func TestNewTableGaussRange(t *testing.T) {
	for _, nd := range [][2]uint64{{0, 1}, {1, 0}, {1, 5}} {
		if _, err := newTableGauss(nd[0], nd[1]); err == nil {
			t.Errorf("σ² = %d/%d accepted", nd[0], nd[1])
		}
	}
}

func BenchmarkTableGauss(b *testing.B) {
	for _, s2 := range []uint64{1640, 1 << 52} {
		g, _ := newTableGauss(s2, 1)
		b.Run(big.NewInt(int64(s2)).String(), func(b *testing.B) {
			bb := bitbuf{r: rng.Seeded(1)}
			var s int64
			for b.Loop() {
				s += g.sampleBits(&bb)
			}
			_ = s
		})
	}
}

func BenchmarkNewTableGauss(b *testing.B) {
	for b.Loop() {
		if _, err := newTableGauss(1640, 1); err != nil {
			b.Fatal(err)
		}
	}
}

// DP-SGD noise on a huge model coarsens the grid so that σ exceeds 2^28
// grid steps, the regime where block offsets need the bit buffer: the
// released noise must still have variance Sigma()².
func TestGaussianVectorCoarsened(t *testing.T) {
	const d = 1 << 20
	m, err := NewGaussianVector(64, 1, d)
	if err != nil {
		t.Fatal(err)
	}
	if m.dg.tab == nil || m.dg.tab.wBits <= offsetBits {
		t.Fatalf("expected the wide-block regime, got table %v", m.dg.tab != nil)
	}
	v := make([]float64, d)
	if err := m.AddTo(rng.Seeded(13), v); err != nil {
		t.Fatal(err)
	}
	var s2 float64
	for _, x := range v {
		s2 += x * x
	}
	sig := m.Sigma()
	if got := s2 / d; math.Abs(got-sig*sig) > zTol*math.Sqrt(2.0/d)*sig*sig {
		t.Errorf("variance %v, want %v", got, sig*sig)
	}
}

// Any σ² the constructor accepts gives exact alias weights and draws within
// the truncation bound, without hanging.
func FuzzTableGauss(f *testing.F) {
	for _, nd := range [][2]uint64{{1, 4}, {30, 1}, {1 << 52, 1}, {math.MaxUint64, 1}, {math.MaxUint64, 3}} {
		f.Add(nd[0], nd[1], uint64(1))
	}
	f.Fuzz(func(t *testing.T, num, den, seed uint64) {
		g, err := newTableGauss(num, den)
		if err != nil {
			if num != 0 && den != 0 && float64(num)/float64(den) >= 0.25 {
				t.Fatalf("σ² = %d/%d refused: %v", num, den, err)
			}
			return
		}
		var sum uint64
		for _, w := range g.weight {
			sum += w
		}
		if sum != 1<<(tableBits+coinBits) {
			t.Fatalf("σ² = %d/%d: weights sum to %d", num, den, sum)
		}
		bound := max(g.nMax, g.n0-1)
		b := bitbuf{r: rng.Seeded(seed)}
		for range 50 {
			x := g.sampleBits(&b)
			if x < -int64(bound) || x > int64(bound) {
				t.Fatalf("σ² = %d/%d: draw %d beyond %d", num, den, x, bound)
			}
		}
	})
}
