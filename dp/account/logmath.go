package account

import "math"

// logAdd returns log(e^a + e^b) without overflow.
func logAdd(a, b float64) float64 {
	if a < b {
		a, b = b, a
	}
	if math.IsInf(b, -1) {
		return a
	}
	return a + math.Log1p(math.Exp(b-a))
}

// logSub returns log(e^a − e^b) for a ≥ b; -Inf when they are equal.
func logSub(a, b float64) float64 {
	if math.IsInf(b, -1) {
		return a
	}
	if b >= a {
		return math.Inf(-1)
	}
	d := b - a
	// log(1 − e^d): log1p for d near −∞, log(−expm1) near 0 (Mächler 2012).
	if d > -math.Ln2 {
		return a + math.Log(-math.Expm1(d))
	}
	return a + math.Log1p(-math.Exp(d))
}

// erfcx returns the scaled complementary error function e^{x²}·erfc(x)
// for x ≥ 0 with a few ulp of relative error. Below 10, e^{x²} is evaluated
// as e^{hi}·(1 + lo) with x² = hi + lo split exactly by a fused
// multiply-add; from 10 on, the asymptotic series of Abramowitz–Stegun
// 7.1.23 with 16 terms (its error is below the first omitted term,
// 33!!/(2x²)^17 < 1e-20) is both exact to double precision and cheaper.
func erfcx(x float64) float64 {
	if x < 10 {
		hi := x * x
		lo := math.FMA(x, x, -hi)
		return math.Erfc(x) * math.Exp(hi) * (1 + lo)
	}
	inv := 1 / (2 * x * x)
	s, term := 1.0, 1.0
	for k := 1; k <= 16; k++ {
		term *= -float64(2*k-1) * inv
		s += term
	}
	return s / (x * math.SqrtPi)
}

// logFactorialTable holds log(n!) for the integer binomial expansion,
// built once; orders beyond it fall back to math.Lgamma.
var logFactorialTable = func() []float64 {
	t := make([]float64, 4096)
	for k := 1; k < len(t); k++ {
		t[k] = t[k-1] + math.Log(float64(k))
	}
	return t
}()

// logFactorial returns log(n!) for n ≥ 0.
func logFactorial(n int) float64 {
	if n < len(logFactorialTable) {
		return logFactorialTable[n]
	}
	v, _ := math.Lgamma(float64(n) + 1)
	return v
}

// LogBinomial returns log C(n, k) for integers 0 ≤ k ≤ n, from a table of
// log n! below 4096 and math.Lgamma above (exported for the binomial tails
// computed outside this package, such as Li–Qardaji–Su's δ).
func LogBinomial(n, k int) float64 {
	return logFactorial(n) - logFactorial(k) - logFactorial(n-k)
}

// logSum accumulates Σ e^v as s·e^m, m the largest term so far: terms far
// apart in scale neither overflow nor lose the large ones.
type logSum struct{ m, s float64 }

func newLogSum() logSum { return logSum{m: math.Inf(-1)} }

// add adds e^v (nothing for v = −∞).
func (l *logSum) add(v float64) {
	switch {
	case math.IsInf(v, -1):
	case v > l.m:
		l.s = l.s*math.Exp(l.m-v) + 1
		l.m = v
	default:
		l.s += math.Exp(v - l.m)
	}
}

// log returns log Σ e^v, −∞ for no terms.
func (l logSum) log() float64 { return l.m + math.Log(l.s) }
