package mech

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/bits"

	"github.com/dpal-dev/dpal/dp/rng"
)

// The samplers in this file follow Canonne, Kamath and Steinke, "The
// Discrete Gaussian for Differential Privacy" (NeurIPS 2020), Algorithms
// 1–3. They use only integer comparisons of uniformly random integers with
// rational parameters, so their output distributions are exactly the stated
// ones given a uniform bit source: no floating-point transcendental function
// is evaluated on the sampling path (Mironov 2012 shows how those leak).
//
// The uint64 paths never allocate; math/big is used only when a parameter
// does not fit 64 bits.

// bitbuf is a buffer of uniform random bits drawn from r a word at a time.
// The Bernoulli draws below compare random bits lazily with the binary
// expansion of their probability, a byte (or a bit) at a time, instead of
// spending a whole word per draw; since every bit is uniform and independent
// the result is still exact. A bitbuf lives for one sampler call, and unused
// buffered bits are discarded.
type bitbuf struct {
	r *rng.Rand
	w uint64
	n uint
}

func (b *bitbuf) bit() uint64 {
	if b.n == 0 {
		b.refill()
	}
	b.n--
	return b.w >> b.n & 1
}

// refill is kept out of line so that bit inlines into the hot loops.
//
//go:noinline
func (b *bitbuf) refill() { b.w, b.n = b.r.Uint64(), 64 }

// uniform returns an integer uniform in [0, n), n ≥ 1, taking bits from the
// buffer when n is a small power of two.
func (b *bitbuf) uniform(n uint64) uint64 {
	if n&(n-1) == 0 {
		k := uint(bits.TrailingZeros64(n))
		if k <= 32 {
			if b.n < k {
				b.refill()
			}
			b.n -= k
			return b.w >> b.n & (n - 1)
		}
	}
	return b.r.Uint64N(n)
}

// bern returns true with probability num/den (den > 0) by comparing a
// uniform binary fraction U with p = num/den eight binary digits at a time:
// the next digits of p are ⌊rem·2^8/den⌋, the first differing chunk decides
// (probability 255/256 per chunk), and equality of U with p's whole finite
// expansion means U ≥ p.
func (b *bitbuf) bern(num, den uint64) bool {
	if num >= den {
		return true
	}
	rem := num
	for rem != 0 {
		q, r := bits.Div64(rem>>56, rem<<8, den)
		if u := b.byte(); u != q {
			return u < q
		}
		rem = r
	}
	return false
}

func (b *bitbuf) byte() uint64 {
	if b.n < 8 {
		b.refill()
	}
	b.n -= 8
	return b.w >> b.n & 0xff
}

// bernFloat returns true with probability exactly p ∈ (0, 1). A float64 p
// is the dyadic rational mant·2^-(zeros+53): random bytes are checked
// against p's leading zero bits (a 1 bit means U > p), then the next
// zeros%8+53 random bits, read as an integer u, decide U < p ⟺ u < mant.
func (b *bitbuf) bernFloat(p float64) bool {
	frac, exp := math.Frexp(p)
	mant := uint64(math.Ldexp(frac, 53))
	zeros := uint(-exp)
	for ; zeros >= 8; zeros -= 8 {
		if b.byte() != 0 {
			return false
		}
	}
	return b.take(zeros+53) < mant
}

// take returns k uniform random bits, 1 ≤ k ≤ 64, refilling (and dropping
// the buffered remainder) when fewer than k are buffered.
func (b *bitbuf) take(k uint) uint64 {
	if b.n < k {
		b.refill()
	}
	b.n -= k
	return b.w >> b.n & (^uint64(0) >> (64 - k))
}

// expFrac is Algorithm 1 of CKS 2020 for γ = num/den ∈ [0, 1]: K is the
// first k with A_k = 0, where A_k ~ Bernoulli(γ/k); return K odd.
// Bernoulli(γ/k) is one draw of Bernoulli(num/(den·k)) while den·k fits in
// 64 bits, else Bernoulli(num/den) ∧ Bernoulli(1/k); both are exact.
func (b *bitbuf) expFrac(num, den uint64) bool {
	k := uint64(1)
	for {
		var a bool
		if hi, dk := bits.Mul64(den, k); hi == 0 {
			a = b.bern(num, dk)
		} else {
			a = b.bern(num, den) && b.bern(1, k)
		}
		if !a {
			return k&1 == 1
		}
		k++
	}
}

// expOne returns true with probability exp(-1).
func (b *bitbuf) expOne() bool { return b.expFrac(1, 1) }

// exp returns true with probability exp(-num/den), den > 0.
func (b *bitbuf) exp(num, den uint64) bool {
	for i := num / den; i > 0; i-- {
		if !b.expOne() {
			return false
		}
	}
	return b.expFrac(num%den, den)
}

// BernoulliExp returns true with probability exp(-num/den). It needs den > 0
// (den == 0 is treated as γ = +∞ and returns false). Exact: Algorithm 1 of
// Canonne–Kamath–Steinke 2020, splitting γ into ⌊γ⌋ draws of
// Bernoulli(exp(-1)) and one draw for the fractional part.
func BernoulliExp(r *rng.Rand, num, den uint64) bool {
	if den == 0 {
		return false
	}
	b := bitbuf{r: r}
	return b.exp(num, den)
}

// BernoulliFloat returns true with probability exactly p for p in [0, 1]
// (p ≤ 0 and NaN give false, p ≥ 1 gives true). A float64 p is a dyadic
// rational, so comparing a uniform random binary expansion U with p's
// finite expansion decides U < p exactly (at most about one word of
// randomness unless p < 2^-8).
func BernoulliFloat(r *rng.Rand, p float64) bool {
	b := bitbuf{r: r}
	return b.bernFloatAny(p)
}

func (b *bitbuf) bernFloatAny(p float64) bool {
	if !(p > 0) {
		return false
	}
	if p >= 1 {
		return true
	}
	return b.bernFloat(p)
}

// BernoulliExpFloat returns true with probability exactly exp(-gamma) for
// gamma ≥ 0 (+Inf and NaN return false; gamma ≤ 0 returns true).
// The float64 gamma is an exact dyadic rational: its integer part is spent
// as ⌊γ⌋ Bernoulli(exp(-1)) draws (counted with math/big when ⌊γ⌋ ≥ 2^64)
// and its fractional part f runs Algorithm 1 with Bernoulli(f/k) drawn as
// Bernoulli(f) ∧ Bernoulli(1/k).
func BernoulliExpFloat(r *rng.Rand, gamma float64) bool {
	b := bitbuf{r: r}
	return b.expFloat(gamma)
}

func (b *bitbuf) expFloat(gamma float64) bool {
	if math.IsNaN(gamma) || math.IsInf(gamma, 1) {
		return false
	}
	if gamma <= 0 {
		return true
	}
	ip, f := math.Modf(gamma)
	if ip >= 1<<64 {
		count, _ := big.NewFloat(ip).Int(nil)
		one := big.NewInt(1)
		for ; count.Sign() > 0; count.Sub(count, one) {
			if !b.expOne() {
				return false
			}
		}
	} else {
		for i := uint64(ip); i > 0; i-- {
			if !b.expOne() {
				return false
			}
		}
	}
	k := uint64(1)
	for {
		if !b.bernFloatAny(f) || (k > 1 && !b.bern(1, k)) {
			return k&1 == 1
		}
		k++
	}
}

// bernoulliExpBig returns true with probability exp(-num/den) for big
// rationals (den > 0): the slow path when parameters exceed 64 bits.
func bernoulliExpBig(r *rng.Rand, num, den *big.Int) bool {
	b := bitbuf{r: r}
	q, rem := new(big.Int).QuoRem(num, den, new(big.Int))
	one := big.NewInt(1)
	for ; q.Sign() > 0; q.Sub(q, one) {
		if !b.expOne() {
			return false
		}
	}
	u := new(big.Int)
	k := uint64(1)
	for {
		if !bernoulliBig(r, rem, den, u) || (k > 1 && !b.bern(1, k)) {
			return k&1 == 1
		}
		k++
	}
}

// bernoulliBig returns true with probability num/den using scratch u: it
// draws U uniform in [0, den) by rejection on random words.
func bernoulliBig(r *rng.Rand, num, den, u *big.Int) bool {
	if num.Cmp(den) >= 0 {
		return true
	}
	nbits := den.BitLen()
	words := make([]big.Word, (nbits+bits.UintSize-1)/bits.UintSize)
	for {
		for i := range words {
			words[i] = big.Word(r.Uint64())
		}
		if extra := len(words)*bits.UintSize - nbits; extra > 0 {
			words[len(words)-1] >>= uint(extra)
		}
		u.SetBits(words)
		if u.Cmp(den) < 0 {
			return u.Cmp(num) < 0
		}
		words = u.Bits()
	}
}

// ErrSamplerParam is returned (wrapped) by Geometric, DiscreteLaplace and
// DiscreteGaussian when a parameter is zero.
var ErrSamplerParam = errors.New("sampler parameters must be >= 1")

// Geometric returns Y ≥ 0 with P(Y = y) ∝ exp(-y·s/t), for t, s ≥ 1; a zero
// argument returns an error wrapping ErrSamplerParam. It is the magnitude part of Algorithm 2 of CKS 2020:
// X = U + t·V with U ~ Uniform{0..t−1} accepted with probability exp(-U/t)
// and V ~ Geometric(1 − e^{-1}), so P(X = x) ∝ exp(-x/t); then Y = ⌊X/s⌋.
// Results beyond MaxInt64 saturate (probability below exp(-2^63·s/t)).
func Geometric(r *rng.Rand, t, s uint64) (uint64, error) {
	if t == 0 || s == 0 {
		return 0, fmt.Errorf("geometric: t = %d, s = %d: %w", t, s, ErrSamplerParam)
	}
	b := bitbuf{r: r}
	return b.geometric(t, s), nil
}

func (b *bitbuf) geometric(t, s uint64) uint64 {
	for {
		u := b.uniform(t)
		if !b.expFrac(u, t) {
			continue
		}
		var v uint64
		for b.expOne() {
			v++
		}
		hi, lo := bits.Mul64(t, v)
		lo, c := bits.Add64(lo, u, 0)
		hi += c
		if hi >= s {
			return math.MaxInt64
		}
		y, _ := bits.Div64(hi, lo, s)
		if y > math.MaxInt64 {
			return math.MaxInt64
		}
		return y
	}
}

// DiscreteLaplace returns an integer X with P(X = x) ∝ exp(-|x|·s/t), i.e.
// the discrete Laplace distribution with scale t/s (CKS 2020, Algorithm 2).
// t and s must be ≥ 1; a zero argument returns an error wrapping
// ErrSamplerParam. Magnitudes beyond MaxInt64 saturate.
func DiscreteLaplace(r *rng.Rand, t, s uint64) (int64, error) {
	if t == 0 || s == 0 {
		return 0, fmt.Errorf("discrete laplace: t = %d, s = %d: %w", t, s, ErrSamplerParam)
	}
	b := bitbuf{r: r}
	return b.laplace(t, s), nil
}

func (b *bitbuf) laplace(t, s uint64) int64 {
	for {
		y := int64(b.geometric(t, s))
		if b.bit() == 0 {
			return y
		}
		if y != 0 {
			return -y
		}
	}
}

// DiscreteGaussian returns an integer X with P(X = x) ∝ exp(-x²/(2σ²)),
// σ² = sigma2Num/sigma2Den > 0 (CKS 2020, Algorithm 3): propose Y from the
// discrete Laplace with scale t = ⌊σ⌋+1 and accept with probability
// exp(-(|Y| − σ²/t)²/(2σ²)). A zero numerator or denominator returns an
// error wrapping ErrSamplerParam.
// The acceptance exponent is kept in uint64 when it fits, else math/big.
func DiscreteGaussian(r *rng.Rand, sigma2Num, sigma2Den uint64) (int64, error) {
	if sigma2Num == 0 || sigma2Den == 0 {
		return 0, fmt.Errorf("discrete gaussian: σ² = %d/%d: %w", sigma2Num, sigma2Den, ErrSamplerParam)
	}
	g := newDGauss(sigma2Num, sigma2Den)
	return g.sample(r), nil
}

// dgauss holds Algorithm 3's precomputed parameters. When σ² = t·m for
// integers t, m (the mechanisms choose σ² that way), σ²/t = m is an integer
// and the acceptance exponent (|Y| − m)²/(2tm) stays small; otherwise the
// general form (|Y|·t·D − N)²/(2·N·D·t²) is used.
type dgauss struct {
	t, m     uint64      // integral form when m > 0
	num, den uint64      // σ² = num/den
	denFast  uint64      // 2·N·D·t² (general form), 0 when it overflows uint64
	tab      *tableGauss // the same law, sampled faster (withTable); may be nil
}

// withTable returns g with a tableGauss for its σ² when one can be built,
// for callers that draw many values (the vector mechanisms); otherwise g
// as it is, still sampled by Algorithm 3. Tables are shared by σ²
// (tableMemo).
func (g dgauss) withTable() dgauss {
	if tableSigma2Range(float64(g.num) / float64(g.den)) {
		if tab, err := theTableMemo.get(g.num, g.den); err == nil {
			g.tab = tab
		}
	}
	return g
}

// newDGauss needs num, den ≥ 1 (checked by its caller).
func newDGauss(num, den uint64) dgauss {
	t := isqrt(num/den) + 1
	if num%den == 0 && (num/den)%t == 0 {
		return newDGaussInt(t, num/den/t)
	}
	g := dgauss{t: t, num: num, den: den}
	d, ok := mulChecked(2*num, den) // 2N fits: N < 2^63 is checked below
	if ok && num < 1<<63 {
		if d, ok = mulChecked(d, t); ok {
			if d, ok = mulChecked(d, t); ok {
				g.denFast = d
			}
		}
	}
	return g
}

// mulChecked returns a·b and whether it fits in uint64.
func mulChecked(a, b uint64) (uint64, bool) {
	hi, lo := bits.Mul64(a, b)
	return lo, hi == 0
}

// newDGaussInt returns the sampler for σ² = t·m, t ≈ σ.
func newDGaussInt(t, m uint64) dgauss {
	return dgauss{t: t, m: m, num: t * m, den: 1}
}

func (g *dgauss) sample(r *rng.Rand) int64 {
	b := bitbuf{r: r}
	return g.sampleBits(&b)
}

func (g *dgauss) sampleBits(b *bitbuf) int64 {
	if g.tab != nil {
		return g.tab.sampleBits(b)
	}
	for {
		y := b.laplace(g.t, 1)
		ay := uint64(y)
		if y < 0 {
			ay = uint64(-y)
		}
		if g.accept(b, ay) {
			return y
		}
	}
}

func (g *dgauss) accept(b *bitbuf, ay uint64) bool {
	if g.m > 0 {
		diff := absDiff(ay, g.m)
		hi, sq := bits.Mul64(diff, diff)
		dhi, den := bits.Mul64(2*g.t, g.m)
		if hi == 0 && dhi == 0 {
			return b.exp(sq, den)
		}
	} else if g.denFast != 0 {
		// (|Y|·t·D − N)²
		phi, p := bits.Mul64(ay, g.t)
		if phi == 0 {
			phi, p = bits.Mul64(p, g.den)
			if phi == 0 {
				diff := absDiff(p, g.num)
				hi, sq := bits.Mul64(diff, diff)
				if hi == 0 {
					return b.exp(sq, g.denFast)
				}
			}
		}
	}
	return g.acceptBig(b.r, ay)
}

func (g *dgauss) acceptBig(r *rng.Rand, ay uint64) bool {
	n := new(big.Int).SetUint64(ay)
	den := new(big.Int).SetUint64(2 * g.t)
	if g.m > 0 {
		n.Sub(n, new(big.Int).SetUint64(g.m))
		den.Mul(den, new(big.Int).SetUint64(g.m)) // 2tm
	} else {
		n.Mul(n, new(big.Int).SetUint64(g.t))
		n.Mul(n, new(big.Int).SetUint64(g.den))
		n.Sub(n, new(big.Int).SetUint64(g.num))
		den.Mul(den, new(big.Int).SetUint64(g.t)) // 2·N·D·t²
		den.Mul(den, new(big.Int).SetUint64(g.num))
		den.Mul(den, new(big.Int).SetUint64(g.den))
	}
	n.Mul(n, n)
	return bernoulliExpBig(r, n, den)
}

func absDiff(a, b uint64) uint64 {
	if a > b {
		return a - b
	}
	return b - a
}

// isqrt returns ⌊√n⌋.
func isqrt(n uint64) uint64 {
	x := uint64(math.Sqrt(float64(n)))
	if x > math.MaxUint32 {
		x = math.MaxUint32
	}
	for x*x > n {
		x--
	}
	for x < math.MaxUint32 && (x+1)*(x+1) <= n {
		x++
	}
	return x
}
