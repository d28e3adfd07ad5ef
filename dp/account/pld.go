package account

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/dsp/fourier"
)

// ErrNoFiniteEpsilon is returned (wrapped) when δ is below the
// probability of an infinite privacy loss, so no ε achieves it.
var ErrNoFiniteEpsilon = errors.New("no finite epsilon")

// pldMaxBins caps the length of any grid: PLDMaxPoints, lowered only by
// tests (to exercise coarsening on small grids).
var pldMaxBins = PLDMaxPoints

// ErrGridTooLong is returned (wrapped) when a privacy-loss grid would
// exceed its length limit: the losses span too wide a range for the step.
var ErrGridTooLong = errors.New("grid too long")

// DefaultPLDStep is the default width Δ of the privacy-loss grid: the
// finest step PLDOptions{} uses (a grid that would exceed PLDMaxPoints
// there is computed on a coarser step; see PLDOptions.Coarsen).
const DefaultPLDStep = 1e-4

// PLDMaxPoints caps the length of any privacy-loss grid: 4 Mi points,
// 32 MB each; a query at this length holds several of them and their FFT
// buffers at once (340–420 MB resident for a subsampled Gaussian's two
// directions, 480 MB with a tilted query).
const PLDMaxPoints = 1 << 22

const (
	// pldTruncMass is the mass a composed distribution may drop from each
	// end to keep its grid short, and the bound on the mass that wraps round
	// in a k-fold self-composition; it goes to δ, never lost.
	pldTruncMass = 1e-24
	// pldMinStep and pldMaxStep bound the grid width.
	pldMinStep, pldMaxStep = 1e-7, 1.0
)

// grid is a measure on the privacy losses (lo+i)·step, i = 0…len(mass)−1,
// plus an atom at +∞. Each mass is known to within ±noise: FFT rounding,
// estimated where it arises (see fftNoise) and carried through later
// convolutions; δ bounds count it against themselves.
type grid struct {
	lo    int
	mass  []float64
	inf   float64
	noise float64
	// tiltLog and tiltLam, for a grid computed tilted (see tiltSource),
	// make the allowance at loss l noise·e^{tiltLog − tiltLam·l}.
	tiltLog, tiltLam float64
}

// nz is the allowance of entry i.
func (g grid) nz(i int, step float64) float64 {
	if g.tiltLam == 0 {
		return g.noise
	}
	return g.noise * math.Exp(g.tiltLog-g.tiltLam*float64(g.lo+i)*step)
}

// PLD is the privacy-loss distribution of one direction of a neighbouring
// relation: the law of L = log(dP/dQ)(o) for o ~ P, (P, Q) being a
// dominating pair (Meiser & Mohammadi 2018; Koskela, Jälkö & Honkela
// 2020; Doroshenko et al. 2022). The hockey-stick divergence is
//
//	δ(ε) = E_P[(1 − e^{ε−L})₊] + P(L = +∞),
//
// and composing mechanisms adds their independent losses, so it convolves
// their distributions. A PLD holds two grids of width Δ:
//
//   - Upper, the "connect-the-dots" pessimistic discretisation of
//     Doroshenko et al. 2022 (Sec. 3): each bin's mass is split between its
//     two grid points so that the pair stays a valid pair whose δ(ε) equals
//     the true one at every grid ε and lies above it in between; it
//     dominates the true pair, so compositions stay upper bounds. Tails cut
//     off go up (to the +∞ atom or the lowest point), never lost.
//   - Lower, a sound optimistic bound: the pair merged bin by bin (a
//     post-processing, so dominated by the true pair), each bin's exact loss
//     l rounded down to the grid with its rounding error U = l − ⌊l⌋ ∈ [0, Δ)
//     remembered in total. For a composition ΣL ≥ ΣL↓ + ΣU, and ΣU of
//     independent terms is at least E[ΣU] − Δ·√(k·ln(1/η)/2) but with
//     probability η (Hoeffding), so
//     δ(ε) ≥ δ↓(ε − E[ΣU] + Δ√(k ln(1/η)/2)) − η for every η, the best η
//     being searched. Rounding down alone (dp_accounting's optimistic
//     estimate) loses about kΔ/2 in ε; the correction leaves O(Δ√k).
//
// Floating-point rounding in the FFT (about 1e-16 of the largest mass per
// entry, so it matters only for δ far below 1e-10) is estimated from the
// negative entries it leaves and charged to both bounds as ±noise per
// entry; see docs/accounting-pld.md.
type PLD struct {
	step  float64
	upper grid
	lower grid
	// mean is a lower bound on E[ΣU], the lower grid's summed rounding.
	mean float64
	// rounds is the number of roundings in ΣU (each U ∈ [0, Δ)).
	rounds float64
	// slack bounds the mass the lower grid may hold in excess (wrapped
	// round in a self-composition); it is subtracted from its δ.
	slack float64
	// src, for a k-fold self-composition of one exact grid pair, lets a
	// query recompute the law tilted where rounding would dominate δ.
	src *tiltSource
}

// Step returns the grid width Δ.
func (p *PLD) Step() float64 { return p.step }

// Len returns the number of grid points held (upper + lower).
func (p *PLD) Len() int { return len(p.upper.mass) + len(p.lower.mass) }

func validateStep(step float64) error {
	if !(step >= pldMinStep && step <= pldMaxStep) {
		return fmt.Errorf("PLD grid step must lie in [%v, %v], got %v", pldMinStep, pldMaxStep, step)
	}
	return nil
}

// GridTooLongError says how long a grid would have been: Points at Step,
// over Limit (PLDMaxPoints). It wraps ErrGridTooLong.
type GridTooLongError struct {
	Points, Limit int
	Step          float64
}

func (e *GridTooLongError) Error() string {
	return fmt.Sprintf("PLD grid would need %d points at step %v (limit %d): raise the step: %v", e.Points, e.Step, e.Limit, ErrGridTooLong)
}

func (e *GridTooLongError) Unwrap() error { return ErrGridTooLong }

// checkLen refuses grids longer than pldMaxBins.
func checkLen(n int, step float64) error {
	if n > pldMaxBins {
		return &GridTooLongError{Points: n, Limit: pldMaxBins, Step: step}
	}
	return nil
}

// Compose returns the PLD of p followed by o (both on the same grid).
func (p *PLD) Compose(o *PLD) (*PLD, error) {
	if p.step != o.step {
		return nil, fmt.Errorf("PLD composition needs one grid step, got %v and %v", p.step, o.step)
	}
	up, err := convolve(p.upper, o.upper, p.step)
	if err != nil {
		return nil, err
	}
	low, err := convolve(p.lower, o.lower, p.step)
	if err != nil {
		return nil, err
	}
	out := &PLD{step: p.step, upper: up, lower: low, mean: p.mean + o.mean, rounds: p.rounds + o.rounds, slack: p.slack + o.slack}
	out.trim()
	return out, nil
}

// Times returns the PLD of k independent uses of p: one FFT of a window
// chosen by a Chernoff bound, the k-th power taken by repeated squaring of
// each Fourier coefficient, one inverse FFT. Mass outside the window (at
// most pldTruncMass at each end) wraps round; the upper grid adds it
// where it can only raise δ and the lower grid subtracts it.
func (p *PLD) Times(k int) (*PLD, error) {
	if k < 1 {
		return nil, fmt.Errorf("PLD self-composition needs k >= 1, got %d", k)
	}
	if k == 1 {
		return p.clone(), nil
	}
	up, wrapUp, err := power(p.upper, k, p.step)
	if err != nil {
		return nil, err
	}
	low, wrapLow, err := power(p.lower, k, p.step)
	if err != nil {
		return nil, err
	}
	fk := float64(k)
	out := &PLD{step: p.step, upper: up, lower: low, mean: fk * p.mean, rounds: fk * p.rounds, slack: fk*p.slack + wrapLow}
	if p.src == nil && p.upper.noise == 0 && p.lower.noise == 0 {
		out.src = &tiltSource{upper: p.upper, lower: p.lower, k: k}
	}
	// Upper: mass that left the window may lie anywhere above it.
	out.upper.inf = math.Min(1, out.upper.inf+wrapUp)
	out.trim()
	return out, nil
}

func (p *PLD) clone() *PLD {
	c := *p
	c.upper.mass = append([]float64(nil), p.upper.mass...)
	c.lower.mass = append([]float64(nil), p.lower.mass...)
	return &c
}

// trim drops negligible ends of both grids, soundly: the upper grid moves
// its low end (mass and noise allowance) up to the first kept point and
// its high end to +∞, cutting there only what the allowance leaves below
// pldTruncMass; the lower grid drops both ends (a lower bound may lose
// mass).
func (p *PLD) trim() {
	up := p.upper.mass
	a := trimLow(up, 0)
	b := trimHigh(up, p.upper.noise)
	if a < b {
		var low, high float64
		for _, m := range up[:a] {
			low += m + p.upper.noise
		}
		for _, m := range up[b:] {
			high += m + p.upper.noise
		}
		up[a] += low
		p.upper = grid{lo: p.upper.lo + a, mass: up[a:b], inf: math.Min(1, p.upper.inf+high), noise: p.upper.noise}
	}
	lw := p.lower.mass
	a, b = trimLow(lw, 0), trimHigh(lw, 0)
	if a < b {
		p.lower = grid{lo: p.lower.lo + a, mass: lw[a:b], inf: p.lower.inf, noise: p.lower.noise}
	}
}

// trimLow returns the first index a such that m[:a], each entry counted
// with noise, holds at most pldTruncMass.
func trimLow(m []float64, noise float64) int {
	a, s := 0, 0.0
	for a < len(m) && s+m[a]+noise <= pldTruncMass {
		s += m[a] + noise
		a++
	}
	return a
}

// trimHigh returns the end b such that m[b:], each entry counted with
// noise, holds at most pldTruncMass.
func trimHigh(m []float64, noise float64) int {
	b, s := len(m), 0.0
	for b > 0 && s+m[b-1]+noise <= pldTruncMass {
		s += m[b-1] + noise
		b--
	}
	return b
}

// convolve returns the law of the sum of independent draws from a and b.
// Short grids are convolved directly, long ones by FFT; rounding below
// zero is cut off.
func convolve(a, b grid, step float64) (grid, error) {
	inf := a.inf + b.inf - a.inf*b.inf
	na, nb := len(a.mass), len(b.mass)
	if na == 0 || nb == 0 {
		return grid{lo: a.lo + b.lo, inf: inf}, nil
	}
	// Each output entry sums input entries against the other grid's
	// masses: ±noise_a·Σb ± noise_b·Σa (+ noise_a·noise_b·n, negligible
	// but kept).
	noise := a.noise*(sum(b.mass)+float64(nb)*b.noise) + b.noise*sum(a.mass)
	n := na + nb - 1
	if err := checkLen(n, step); err != nil {
		return grid{}, err
	}
	out := grid{lo: a.lo + b.lo, mass: make([]float64, n), inf: inf, noise: noise}
	if float64(na)*float64(nb) <= 1<<20 {
		for i, x := range a.mass {
			if x == 0 {
				continue
			}
			row := out.mass[i : i+nb]
			for j, y := range b.mass {
				row[j] += x * y
			}
		}
		out.noise += directErr(min(na, nb), maxAbs(out.mass))
		return out, nil
	}
	var rounding float64
	out.mass, rounding = fftConvolve(a.mass, b.mass, n)
	out.noise += rounding
	return out, nil
}

// fftConvolve returns the first n entries of the convolution of the
// non-negative a and b (n ≥ len(a)+len(b)−1) by FFT, entries rounded below
// 0 set to 0, and a certified bound on each entry's error (convolveErr).
func fftConvolve(a, b []float64, n int) ([]float64, float64) {
	size := fftSize(n)
	fft := fourier.NewFFT(size)
	ca := fft.Coefficients(nil, padded(a, size))
	cb := fft.Coefficients(nil, padded(b, size))
	bound := convolveErr(ca, cb, size, sum(a), sum(b))
	for i := range ca {
		ca[i] *= cb[i]
	}
	seq := fft.Sequence(nil, ca)
	out := make([]float64, n)
	for i := range out {
		out[i] = seq[i] / float64(size)
	}
	bound += divisionErr(maxAbs(out))
	clipNegative(out)
	return out, bound
}

func sum(m []float64) float64 {
	var s float64
	for _, x := range m {
		s += x
	}
	return s
}

// power returns the k-fold convolution of g restricted to a window outside
// which each tail holds at most pldTruncMass (a Chernoff bound on the
// sum), and that bound on the mass outside.
func power(g grid, k int, step float64) (grid, float64, error) {
	inf := -math.Expm1(float64(k) * math.Log1p(-g.inf))
	if g.inf >= 1 {
		inf = 1
	}
	n := len(g.mass)
	if n == 0 {
		return grid{lo: k * g.lo, inf: inf}, 0, nil
	}
	wlo, whi := chernoffWindow(g, k, step)
	if whi < wlo { // the k-fold finite mass is itself below the truncation
		return grid{lo: k * g.lo, inf: inf}, 2 * pldTruncMass, nil
	}
	width := whi - wlo + 1
	if err := checkLen(width, step); err != nil {
		return grid{}, 0, err
	}
	seq, rounding := fftPower(g, k, wlo, width)
	// Input noise ν spreads to at most k·ν·(Σm + nν)^{k−1} per entry.
	total := sum(g.mass) + float64(n)*g.noise
	noise := 0.0
	if g.noise > 0 {
		noise = float64(k) * g.noise * math.Pow(total, float64(k-1))
	}
	out := grid{lo: wlo, mass: seq, inf: inf}
	out.noise = noise + rounding
	full := k*(n-1) + 1
	if width >= full { // nothing left the window
		return out, 0, nil
	}
	return out, 2 * pldTruncMass, nil
}

// fftPower returns the k-fold convolution of g at the sum indices wlo …
// wlo+width−1, computed circularly (mass outside wraps round), and a
// certified bound on each entry's floating-point error against the exact
// circular k-fold (powerErr); entries rounded below 0 are set to 0.
func fftPower(g grid, k, wlo, width int) ([]float64, float64) {
	size := fftSize(max(width, len(g.mass)))
	fft := fourier.NewFFT(size)
	c := fft.Coefficients(nil, padded(g.mass, size))
	bound := powerErr(c, size, k, sum(g.mass))
	// |z|^k below e^{−745} is 0 in float64 anyway (powerErr counts it as
	// underflow): most coefficients of a k-fold window are.
	cut := math.Exp(-745 / float64(k))
	cut2 := cut * cut
	for i, z := range c {
		if real(z)*real(z)+imag(z)*imag(z) >= cut2 {
			c[i] = cpow(z, k)
		} else {
			c[i] = 0
		}
	}
	seq := fft.Sequence(nil, c)
	out := make([]float64, width)
	base := k * g.lo // the sum's index, less base, is its position mod size
	for t := range out {
		out[t] = seq[(wlo+t-base)%size] / float64(size)
	}
	bound += divisionErr(maxAbs(out))
	clipNegative(out)
	return out, bound
}

// chernoffMargin covers the rounding of the Chernoff bounds' logarithms
// (k times a few u times their magnitude: below 1e-6 for every grid and
// count allowed).
const chernoffMargin = 1e-3

// chernoffWindow returns the index range [lo, hi] of the k-fold sum
// outside which each tail has mass at most pldTruncMass (see chernoff).
func chernoffWindow(g grid, k int, step float64) (int, int) {
	c := newChernoff(g, k, step)
	logTol := math.Log(pldTruncMass) - chernoffMargin
	bestHi, bestLo := float64(c.hi), float64(c.lo)
	for _, lam := range c.lams {
		if h := (c.fk*logMGF(c.top, c.logM, lam) - logTol) / lam; h < bestHi {
			bestHi = h
		}
		if h := (logTol - c.fk*logMGF(c.bottom, c.logM, -lam)) / lam; h > bestLo {
			bestLo = h
		}
	}
	wlo, whi := int(math.Floor(bestLo)), int(math.Ceil(bestHi))
	return max(wlo, c.lo), min(whi, c.hi)
}

// chernoff bounds the tails of the k-fold sum S of g:
// P(S ≥ h) ≤ M(λ)^k e^{−λh} for λ > 0 and P(S ≤ h) ≤ M(−λ)^k e^{λh},
// M being g's (unnormalised) moment generating function in index units,
// minimised over λ = 2^e/Δ' for e = −8…12 per unit of loss (any λ gives a
// valid bound; the grid only costs width). Masses are bucketed by w
// points, each bucket's put at its top (for λ > 0) or bottom (λ < 0): M
// only grows, so the bounds stay valid, at n/w exponentials per λ.
type chernoff struct {
	fk          float64
	lo, hi      int
	top, bottom []float64
	logM, lams  []float64
}

func newChernoff(g grid, k int, step float64) chernoff {
	c := chernoff{fk: float64(k), lo: k * g.lo, hi: k * (g.lo + len(g.mass) - 1)}
	w := max(1, len(g.mass)/4096)
	for i := 0; i < len(g.mass); i += w {
		var s float64
		for _, x := range g.mass[i:min(i+w, len(g.mass))] {
			s += x
		}
		if s > 0 {
			c.bottom, c.top = append(c.bottom, float64(g.lo+i)), append(c.top, float64(g.lo+min(i+w, len(g.mass))-1))
			c.logM = append(c.logM, math.Log(s))
		}
	}
	for e := -8; e <= 12; e++ {
		c.lams = append(c.lams, math.Pow(2, float64(e))*step)
	}
	return c
}

// highTail bounds P(S ≥ h).
func (c chernoff) highTail(h int) float64 {
	best := 0.0
	for _, lam := range c.lams {
		best = math.Min(best, c.fk*logMGF(c.top, c.logM, lam)-lam*float64(h))
	}
	return math.Exp(best + chernoffMargin)
}

// lowTail bounds P(S ≤ h).
func (c chernoff) lowTail(h int) float64 {
	best := 0.0 // log of the bound, ≤ log 1
	for _, lam := range c.lams {
		best = math.Min(best, c.fk*logMGF(c.bottom, c.logM, -lam)+lam*float64(h))
	}
	return math.Exp(best + chernoffMargin)
}

// logMGF is log Σ e^{logM_i + λ·idx_i}.
func logMGF(idx, logM []float64, lam float64) float64 {
	m := math.Inf(-1)
	for i, x := range idx {
		m = math.Max(m, logM[i]+lam*x)
	}
	var s float64
	for i, x := range idx {
		s += math.Exp(logM[i] + lam*x - m)
	}
	return m + math.Log(s)
}

// cpow returns z^k by repeated squaring.
func cpow(z complex128, k int) complex128 {
	r := complex(1, 0)
	for k > 0 {
		if k&1 == 1 {
			r *= z
		}
		z *= z
		k >>= 1
	}
	return r
}

// fftSize returns the smallest n' ≥ n of the form 2^a, 3·2^a or 5·2^a:
// lengths gonum's FFT handles fast, whose factorisation (into 4s, a 2 and
// a 3 or 5) stays within its 13 factors for every grid pldMaxBins allows.
func fftSize(n int) int {
	best := 1
	for best < n {
		best *= 2
	}
	for _, m := range []int{3, 5} {
		v := m
		for v < n {
			v *= 2
		}
		best = min(best, v)
	}
	return best
}

func padded(m []float64, size int) []float64 {
	out := make([]float64, size)
	copy(out, m)
	return out
}

// delta returns Σ_{l>ε} max(0, m + side·noise)·(1 − e^{ε−l}) + inf:
// side = +1 bounds δ from above, −1 from below.
func (g grid) delta(step, eps, side float64) float64 {
	d := g.inf
	for i := len(g.mass) - 1; i >= 0; i-- {
		l := float64(g.lo+i) * step
		if l <= eps {
			break
		}
		d += math.Max(0, g.mass[i]+side*g.nz(i, step)) * -math.Expm1(eps-l)
	}
	return d
}

// epsilon returns the smallest ε ≥ from with g.delta(ε, side) ≤ target, exactly
// (δ is e^ε-linear between grid points), or +Inf when the infinite-loss
// atom alone exceeds target. Scanning down from the top it keeps
// A = inf + Σ_{i>j} m_i and C = Σ_{i>j} m_i e^{l_j − l_i}, so that
// δ(ε) = A − C·e^{ε−l_j} on (l_j, l_{j+1}].
func (g grid) epsilon(step, target, from, side float64) float64 {
	if g.inf > target {
		return math.Inf(1)
	}
	a, c := g.inf, 0.0
	shrink := math.Exp(-step)
	for j := len(g.mass) - 1; j >= -1; j-- {
		l := float64(g.lo+j) * step
		if l <= from || j == -1 {
			if c == 0 || a-c*math.Exp(from-l) <= target {
				return from
			}
			return math.Max(from, l+math.Log((a-target)/c))
		}
		if a-c > target {
			return l + math.Log((a-target)/c)
		}
		m := math.Max(0, g.mass[j]+side*g.nz(j, step)) // true masses are ≥ 0
		a += m
		c = (c + m) * shrink
	}
	return from
}

// noiseDelta is the part of g's upper bound on δ(ε) that is FFT rounding
// allowance.
func (g grid) noiseDelta(step, eps float64) float64 {
	var d float64
	for i := len(g.mass) - 1; i >= 0 && float64(g.lo+i)*step > eps; i-- {
		d += g.nz(i, step)
	}
	return d
}

// etas are the Hoeffding failure probabilities tried, relative to the δ
// in question (absolute ones for Delta).
var etas = []float64{1e-1, 1e-2, 1e-3, 1e-4, 1e-6, 1e-8, 1e-10, 1e-13}

// shift returns the sound shift of the lower grid at failure probability
// eta: E[ΣU] − Δ·√(k·ln(1/η)/2).
func (p *PLD) shift(eta float64) float64 {
	return p.mean - p.step*math.Sqrt(p.rounds*math.Log(1/eta)/2)
}

// Delta returns lower and upper bounds on δ(ε) for ε ≥ 0.
func (p *PLD) Delta(eps float64) (lower, upper float64, err error) {
	if !(eps >= 0) || math.IsInf(eps, 1) {
		return 0, 0, fmt.Errorf("epsilon must be finite and >= 0, got %v", eps)
	}
	upper = math.Min(1, p.upper.delta(p.step, eps, 1))
	for _, rel := range etas {
		eta := rel * math.Max(upper, 1e-300)
		lower = math.Max(lower, p.lower.delta(p.step, eps-p.shift(eta), -1)-eta-p.slack)
	}
	return math.Min(lower, upper), upper, nil
}

// Epsilon returns lower and upper bounds on the smallest ε with δ(ε) ≤
// delta. The upper bound is +Inf (with an error) when δ is below the mass
// at infinite loss.
func (p *PLD) Epsilon(delta float64) (lower, upper float64, err error) {
	lower, upper, _, err = p.epsilon(delta)
	return lower, upper, err
}

// epsilon is Epsilon, also returning the part of δ at the upper bound that
// is rounding allowance. Where that is over a tenth of δ and p is a k-fold
// self-composition, the law is recomputed tilted towards the answer (see
// tiltSource) and the better bounds kept.
func (p *PLD) epsilon(delta float64) (lower, upper, noise float64, err error) {
	if !(delta >= 0 && delta < 1) {
		return 0, 0, 0, fmt.Errorf("delta must satisfy 0 <= delta < 1, got %v", delta)
	}
	upper = p.upperBound(p.upper, delta)
	lower = p.lowerBound(p.lower, p.slack, delta)
	noise = p.upper.noiseDelta(p.step, upper)
	if p.src != nil && noise > delta/10 && !math.IsInf(upper, 1) {
		// One tilted grid at a time: each can be large.
		lam := p.src.lambda(lower, p.step)
		if up, err := p.src.tilted(p.src.upper, p.step, lam, lower, true); err == nil {
			if up2 := p.upperBound(up, delta); up2 < upper {
				upper, noise = up2, up.noiseDelta(p.step, up2)
			}
		}
		if low, err := p.src.tilted(p.src.lower, p.step, lam, lower, false); err == nil {
			lower = math.Max(lower, p.lowerBound(low, 0, delta))
		}
	}
	lower = math.Min(math.Max(lower, 0), upper)
	if math.IsInf(upper, 1) {
		return lower, upper, noise, fmt.Errorf("delta %v is below the probability %.3g of an infinite privacy loss: %w", delta, p.upper.inf, ErrNoFiniteEpsilon)
	}
	return lower, upper, noise, nil
}

// upperBound is the upper bound on ε at delta from an upper grid. A
// tilted grid knows nothing below its first point, so an answer there is
// no bound (+Inf).
func (p *PLD) upperBound(up grid, delta float64) float64 {
	from := 0.0
	if up.tiltLam != 0 {
		from = math.Max(0, float64(up.lo)*p.step)
	}
	upper := up.epsilon(p.step, delta, from, 1)
	if up.tiltLam != 0 && upper == from {
		return math.Inf(1)
	}
	return upper
}

// lowerBound is the lower bound on ε at delta from a lower grid (slack: its
// excess mass), the best over the Hoeffding failure probabilities; for a
// tilted grid, answers at its first point are no bound and are dropped.
func (p *PLD) lowerBound(low grid, slack, delta float64) float64 {
	var lower float64
	for _, rel := range etas {
		eta := rel * delta
		if eta == 0 {
			eta = 1e-300
		}
		s := p.shift(eta)
		from := -s
		if low.tiltLam != 0 {
			from = math.Max(from, float64(low.lo)*p.step)
		}
		if x := low.epsilon(p.step, delta+eta+slack, from, -1); x > from || low.tiltLam == 0 {
			lower = math.Max(lower, s+x)
		}
	}
	return lower
}
