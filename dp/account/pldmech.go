package account

import (
	"fmt"
	"math"
)

// pldTailZ is the standard-normal quantile beyond which a Gaussian
// mechanism's outcome tail is cut from the grid (Φ(−11.5) ≈ 6e-31); the
// cut mass is never lost (see discretise).
const pldTailZ = 11.5

// atom is a privacy-loss value with its P and Q probabilities.
type atom struct{ loss, p, q float64 }

// continuous is the continuous part of a privacy-loss distribution.
type continuous interface {
	// mass returns P(L ∈ (a, b]) and Q(L ∈ (a, b]) over the part, for
	// −∞ ≤ a < b ≤ +∞.
	mass(a, b float64) (p, q float64)
	// span returns the losses outside which each tail of P over the part
	// is negligible (about 1e-30).
	span() (lo, hi float64)
}

// lossDist is a dominating pair (P, Q) seen through its privacy loss:
// atoms, an optional continuous part, P(L = +∞), and P-mass known only to
// lie below (tailLo) or above (tailHi) everything else.
type lossDist struct {
	atoms          []atom
	cont           continuous
	inf            float64
	tailLo, tailHi float64
}

// discretise builds the PLD of d on the grid of width step (see PLD for
// the two discretisations). Bin k is ((k−1)Δ, kΔ]; its merged loss
// l = log(P_k/Q_k) lies in it, d = l − (k−1)Δ ∈ (0, Δ].
func discretise(d lossDist, step float64) (*PLD, error) {
	if err := validateStep(step); err != nil {
		return nil, err
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, a := range d.atoms {
		lo, hi = math.Min(lo, a.loss), math.Max(hi, a.loss)
	}
	if d.cont != nil {
		a, b := d.cont.span()
		lo, hi = math.Min(lo, a), math.Max(hi, b)
	}
	if lo > hi { // all mass at +∞ or in the tails
		lo, hi = 0, 0
	}
	if math.IsInf(lo, 0) || math.IsInf(hi, 0) || math.IsNaN(lo) || math.IsNaN(hi) {
		return nil, fmt.Errorf("privacy losses span [%v, %v]: no finite grid holds them", lo, hi)
	}
	k0, k1 := int(math.Floor(lo/step))-2, int(math.Ceil(hi/step))+1
	if err := checkLen(k1-k0+1, step); err != nil {
		return nil, err
	}
	n := k1 - k0 + 1
	bp, bq := make([]float64, n), make([]float64, n) // bin k ↔ index k−k0
	if d.cont != nil {
		for k := k0 + 1; k <= k1; k++ {
			bp[k-k0], bq[k-k0] = d.cont.mass(float64(k-1)*step, float64(k)*step)
		}
	}
	for _, a := range d.atoms {
		k := int(math.Ceil(a.loss / step))
		for float64(k-1)*step >= a.loss {
			k--
		}
		for float64(k)*step < a.loss {
			k++
		}
		bp[k-k0] += a.p
		bq[k-k0] += a.q
	}
	tailLo, tailHi := d.tailLo, d.tailHi
	if d.cont != nil {
		p, _ := d.cont.mass(math.Inf(-1), float64(k0)*step)
		tailLo += p
		p, _ = d.cont.mass(float64(k1)*step, math.Inf(1))
		tailHi += p
	}
	up := grid{lo: k0, mass: make([]float64, n), inf: math.Min(1, d.inf+tailHi)}
	low := grid{lo: k0, mass: make([]float64, n), inf: d.inf}
	var mean float64
	// Tail mass below lo moves up to a point above lo (upper grid), that
	// above hi down to a point below hi (lower grid).
	up.mass[3] += tailLo
	low.mass[n-3] += tailHi
	expm1Step := math.Expm1(-step)
	for i := 1; i < n; i++ {
		p, q := bp[i], bq[i]
		if p <= 0 {
			continue
		}
		// The upper grid splits the bin between its points; the lower one
		// rounds down and remembers by how much. Without q (underflow) the
		// loss is only known to lie in the bin: up to the top, down to the
		// bottom with no rounding credit.
		frac, dist := 1.0, 0.0
		if q > 0 {
			dist = math.Min(math.Max(math.Log(p/q)-float64(k0+i-1)*step, 0), step)
			frac = math.Expm1(-dist) / expm1Step
		}
		up.mass[i] += p * frac
		up.mass[i-1] += p * (1 - frac)
		low.mass[i-1] += p
		mean += p * dist
	}
	out := &PLD{step: step, upper: up, lower: low, mean: mean, rounds: 1}
	out.trim()
	return out, nil
}

// phiDiff returns Φ(b) − Φ(a) for a ≤ b, from the side of the smaller
// tail, so that it keeps its relative precision.
func phiDiff(a, b float64) float64 {
	switch {
	case a >= b:
		return 0
	case a >= 0:
		return 0.5 * (math.Erfc(a/math.Sqrt2) - math.Erfc(b/math.Sqrt2))
	case b <= 0:
		return 0.5 * (math.Erfc(-b/math.Sqrt2) - math.Erfc(-a/math.Sqrt2))
	}
	return 1 - 0.5*math.Erfc(b/math.Sqrt2) - 0.5*math.Erfc(-a/math.Sqrt2)
}

// subGauss is the privacy loss of the Poisson-subsampled Gaussian
// mechanism (sampling rate q, noise multiplier σ, ℓ2 sensitivity 1) under
// add/remove adjacency: remove is (P, Q) = ((1−q)N(0,σ²) + qN(1,σ²),
// N(0,σ²)), add is the pair swapped. q = 1 is the Gaussian mechanism.
// The loss of remove at x is log(1 − q + q·e^{(2x−1)/(2σ²)}), increasing in
// x; add's is its negative at the same x.
type subGauss struct {
	q, sigma float64
	add      bool
}

// lossAt is the remove direction's loss at outcome x.
func (g subGauss) lossAt(x float64) float64 {
	t := (2*x - 1) / (2 * g.sigma * g.sigma)
	if g.q == 1 {
		return t
	}
	if t > 700 {
		return math.Log(g.q) + t + math.Log1p((1-g.q)*math.Exp(-t)/g.q)
	}
	return math.Log1p(g.q * math.Expm1(t))
}

// outcome is the x at which the remove direction's loss is l.
func (g subGauss) outcome(l float64) float64 {
	floor := math.Log1p(-g.q)
	switch {
	case math.IsInf(l, -1) || l <= floor:
		return math.Inf(-1)
	case math.IsInf(l, 1):
		return math.Inf(1)
	}
	t := l
	if g.q == 1 {
		// the Gaussian: t = l
	} else if l > 30 {
		t = l - math.Log(g.q) + math.Log1p(-(1-g.q)*math.Exp(-l))
	} else {
		t = math.Log((math.Expm1(l) + g.q) / g.q)
	}
	return g.sigma*g.sigma*t + 0.5
}

func (g subGauss) mass(a, b float64) (float64, float64) {
	if g.add { // −L ∈ [−b, −a)
		a, b = -b, -a
	}
	x1, x2 := g.outcome(a), g.outcome(b)
	s := g.sigma
	noise := phiDiff(x1/s, x2/s)
	mix := (1-g.q)*noise + g.q*phiDiff((x1-1)/s, (x2-1)/s)
	if g.add {
		return noise, mix
	}
	return mix, noise
}

func (g subGauss) span() (float64, float64) {
	lo, hi := g.lossAt(-pldTailZ*g.sigma), g.lossAt(1+pldTailZ*g.sigma)
	if g.add {
		return -hi, -lo
	}
	return lo, hi
}

// replaceDist is the privacy loss of the Poisson-subsampled Gaussian under
// replace-one adjacency (see replace.go): P = (1−q)N(0,σ²) + qN(1,σ²),
// Q = (1−q)N(0,σ²) + qN(−1,σ²), L increasing and odd. The pair is
// symmetric (P(x) = Q(−x)), so both directions have this one law.
type replaceDist struct{ replacePair }

func (d replaceDist) mass(a, b float64) (float64, float64) {
	x1, x2 := d.outcome(a), d.outcome(b)
	s, q := d.sigma, d.q
	noise := phiDiff(x1/s, x2/s)
	p := (1-q)*noise + q*phiDiff((x1-1)/s, (x2-1)/s)
	return p, (1-q)*noise + q*phiDiff((x1+1)/s, (x2+1)/s)
}

// span is the loss range outside which each P-tail holds at most
// Φ(−pldTailZ): both P components lie within [−Zσ, 1+Zσ] up to it.
func (d replaceDist) span() (float64, float64) {
	return d.loss(-pldTailZ * d.sigma), d.loss(1 + pldTailZ*d.sigma)
}

// subLaplace is the privacy loss of the Poisson-subsampled Laplace
// mechanism (rate q, scale b, ℓ1 sensitivity 1) under add/remove
// adjacency: remove is ((1−q)Lap(0,b) + qLap(1,b), Lap(0,b)), add the
// pair swapped; q = 1 is the Laplace mechanism. The remove loss is
// log(1 − q + q·e^{(|x|−|x−1|)/b}): constant for x ≤ 0 and x ≥ 1 (two
// atoms) and increasing in between.
type subLaplace struct {
	q, b float64
	add  bool
}

func (m subLaplace) dist() lossDist {
	e := math.Exp(-1 / m.b)
	lowL, highL := m.lossOf(-1/m.b), m.lossOf(1/m.b)
	lowP, lowQ := ((1-m.q)+m.q*e)/2, 0.5   // x ≤ 0
	highP, highQ := ((1-m.q)*e+m.q)/2, e/2 // x ≥ 1
	atoms := []atom{{lowL, lowP, lowQ}, {highL, highP, highQ}}
	if m.add {
		atoms = []atom{{-lowL, lowQ, lowP}, {-highL, highQ, highP}}
	}
	return lossDist{atoms: atoms, cont: m}
}

// lossOf is log(1 − q + q·e^t), exact at q = 1 and for large |t|.
func (m subLaplace) lossOf(t float64) float64 {
	if m.q == 1 {
		return t
	}
	return logAdd(math.Log1p(-m.q), math.Log(m.q)+t)
}

// outcome is the x ∈ [0, 1] at which the remove loss is l (clamped).
func (m subLaplace) outcome(l float64) float64 {
	if math.IsInf(l, -1) {
		return 0
	}
	if math.IsInf(l, 1) {
		return 1
	}
	t := l // log((e^l − 1 + q)/q), which is l at q = 1
	if m.q < 1 {
		v := math.Expm1(l) + m.q
		if v <= 0 {
			return 0
		}
		t = math.Log(v / m.q)
	}
	return math.Min(math.Max((m.b*t+1)/2, 0), 1)
}

func (m subLaplace) mass(a, b float64) (float64, float64) {
	if m.add {
		a, b = -b, -a
	}
	x1, x2 := m.outcome(a), m.outcome(b)
	if x2 <= x1 {
		return 0, 0
	}
	// Lap(0,b) and Lap(1,b) on (x1, x2) ⊂ [0, 1].
	noise := 0.5 * math.Exp(-x1/m.b) * -math.Expm1(-(x2-x1)/m.b)
	shifted := 0.5 * math.Exp(-(1-x2)/m.b) * -math.Expm1(-(x2-x1)/m.b)
	mix := (1-m.q)*noise + m.q*shifted
	if m.add {
		return noise, mix
	}
	return mix, noise
}

func (m subLaplace) span() (float64, float64) {
	lo, hi := m.lossOf(-1/m.b), m.lossOf(1/m.b)
	if m.add {
		return -hi, -lo
	}
	return lo, hi
}

// approxDist is the dominating pair of any (ε, δ)-DP mechanism (Kairouz,
// Oh & Viswanath 2015; Zhu, Dong & Wang 2022, Prop. 8): losses ε and −ε
// with P-masses (1−δ)e^ε/(1+e^ε) and (1−δ)/(1+e^ε), and +∞ with mass δ.
// δ = 0 is randomized response, which it is exactly.
func approxDist(eps, delta float64) lossDist {
	hi := (1 - delta) / (1 + math.Exp(-eps))
	lo := (1 - delta) / (1 + math.Exp(eps))
	return lossDist{atoms: []atom{{eps, hi, lo}, {-eps, lo, hi}}, inf: delta}
}

// discreteLaplaceDist is the pair of the discrete Laplace mechanism
// P(x) ∝ e^{−|x|/t} on the integers, for an integer sensitivity s:
// (P, P(· − s)), symmetric. The loss at x is (|x−s| − |x|)/t: s/t for
// x ≤ 0, −s/t for x ≥ s and (s − 2x)/t in between.
func discreteLaplaceDist(t float64, s int) lossDist {
	r := math.Exp(-1 / t)
	norm := (1 - r) / (1 + r)
	end := 1 / (1 + r)                   // P(x ≤ 0)
	far := math.Exp(-float64(s)/t) * end // P(x ≥ s)
	atoms := []atom{{float64(s) / t, end, far}, {-float64(s) / t, far, end}}
	for x := 1; x < s; x++ {
		p := norm * math.Exp(-float64(x)/t)
		q := norm * math.Exp(-float64(s-x)/t)
		atoms = append(atoms, atom{float64(s-2*x) / t, p, q})
	}
	return lossDist{atoms: atoms}
}

// discreteGaussianDist is the pair of the discrete Gaussian mechanism
// P(x) ∝ e^{−x²/(2σ²)} on the integers (Canonne, Kamath & Steinke 2020)
// for an integer sensitivity s: (P, P(· − s)); the loss at x is
// (s² − 2sx)/(2σ²). Outcomes beyond 12σ + s go to the tails.
func discreteGaussianDist(sigma float64, s int) lossDist {
	r := int(math.Ceil(12*sigma)) + s + 2
	v := 2 * sigma * sigma
	logW := func(x int) float64 { return -float64(x) * float64(x) / v }
	var z float64
	for x := -r - s; x <= r+s; x++ {
		z += math.Exp(logW(x))
	}
	// Σ_{|x|>R} e^{−x²/2σ²} ≤ 2σ√(2π)·Φ(−(R−1)/σ) and Z ≥ 1.
	tail := 2 * sigma * math.Sqrt(2*math.Pi) * 0.5 * math.Erfc(float64(r-s-1)/sigma/math.Sqrt2)
	var atoms []atom
	for x := -r; x <= r; x++ {
		p := math.Exp(logW(x)) / z
		q := math.Exp(logW(x-s)) / z
		if p == 0 && q == 0 {
			continue
		}
		atoms = append(atoms, atom{float64(s*s-2*s*x) / v, p, q})
	}
	return lossDist{atoms: atoms, tailLo: tail, tailHi: tail}
}

// checkFinitePositive reports whether v is finite and > 0.
func checkFinitePositive(name string, v float64) error {
	if !(v > 0) || math.IsInf(v, 0) {
		return fmt.Errorf("%s must be finite and > 0, got %v", name, v)
	}
	return nil
}
