package account

import (
	"errors"
	"math"
)

// tiltSource is the one-step pair of grids of a k-fold self-composition,
// kept so that a query for a small δ can recompute the k-fold law
// exponentially tilted. FFT rounding is about 2⁻⁵² of the largest entry
// everywhere, which swamps a tail holding δ ≈ 1e-15. Convolution commutes
// with tilting (m_i ↦ m_i·e^{λ·l_i}), so the k-fold power of the tilted
// one-step law, untilted, is the k-fold law again, but its rounding is now
// relative to the tilted peak, placed where the answer lies: the
// allowance at loss l becomes ν·e^{K − λl}, small above the peak and large
// only far below it, where δ does not look.
// pldMaxTiltBins caps a tilted grid's window (it is cut round the tilted
// law's centre).
const pldMaxTiltBins = 1 << 22

type tiltSource struct {
	upper, lower grid
	k            int
}

// tilted returns the k-fold law of g (the source's upper or lower
// one-step grid) computed tilted by lam, centred near the loss near.
func (ts *tiltSource) tilted(g grid, step, lam, near float64, upper bool) (grid, error) {
	if !(lam > 0) || len(g.mass) == 0 {
		return grid{}, errors.New("no tilt")
	}
	return tiltedPower(g, ts.k, step, lam, near, upper)
}

// lambda finds the tilt λ ∈ (0, 1000] under which the k-fold sum's mean,
// k·Σm_i l_i e^{λl_i}/Σm_i e^{λl_i}, is the loss near (0 if it already is
// above it untilted), by bisection: the tilted mean grows with λ.
func (ts *tiltSource) lambda(near, step float64) float64 {
	mean := func(lam float64) float64 {
		var top float64 = math.Inf(-1)
		for i, m := range ts.upper.mass {
			if m > 0 {
				top = math.Max(top, math.Log(m)+lam*float64(ts.upper.lo+i)*step)
			}
		}
		var s, sl float64
		for i, m := range ts.upper.mass {
			if m > 0 {
				l := float64(ts.upper.lo+i) * step
				w := math.Exp(math.Log(m) + lam*l - top)
				s += w
				sl += w * l
			}
		}
		return float64(ts.k) * sl / s
	}
	if mean(0) >= near {
		return 0
	}
	lo, hi := 0.0, 1000.0
	if mean(hi) < near {
		return hi
	}
	for range 60 {
		mid := (lo + hi) / 2
		if mean(mid) < near {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// tiltedPower returns g's k-fold law computed tilted by λ (see
// tiltSource), with its allowance ν·e^{K − λl}: the FFT's rounding (as in
// powerErr) plus the tilted mass that wraps round (each tail of the tilted
// window holds at most pldTruncMass of it). For an upper grid the untilted
// mass above the window, at most e^{K − λ·top}·pldTruncMass, goes to +∞; a
// lower grid drops it.
func tiltedPower(g grid, k int, step, lam, centreLoss float64, upper bool) (grid, error) {
	n := len(g.mass)
	la := make([]float64, n)
	top := math.Inf(-1)
	for i, m := range g.mass {
		la[i] = math.Inf(-1)
		if m > 0 {
			la[i] = math.Log(m) + lam*float64(g.lo+i)*step
			top = math.Max(top, la[i])
		}
	}
	a := grid{lo: g.lo, mass: make([]float64, n)}
	var sum float64
	for i := range la {
		a.mass[i] = math.Exp(la[i] - top)
		sum += a.mass[i]
	}
	for i := range a.mass {
		a.mass[i] /= sum
	}
	logK := float64(k) * (top + math.Log(sum))
	wlo, whi := chernoffWindow(a, k, step)
	if whi < wlo {
		return grid{}, errors.New("empty tilted window")
	}
	// A window too wide for the budget is cut round the tilted law's
	// centre: the tilted mass outside wraps round, at most the Chernoff
	// tails of it, and joins ν; the untilted mass above goes to +∞ (upper).
	var cut, above float64
	if whi-wlo+1 > pldMaxTiltBins {
		centre := int(math.Round(centreLoss / step))
		wlo = max(wlo, centre-pldMaxTiltBins/2)
		whi = min(whi, wlo+pldMaxTiltBins-1)
		c := newChernoff(a, k, step)
		high := c.highTail(whi + 1)
		cut = c.lowTail(wlo-1) + high
		above = high
	}
	width := whi - wlo + 1
	if err := checkLen(width, step); err != nil {
		return grid{}, err
	}
	r, rounding := fftPower(a, k, wlo, width)
	// The allowance is itself rounded when untilted (relative error of a
	// few u times its exponent, < 1e-9).
	// Relative errors: each tilted input mass is off by at most θ, so the
	// k-fold by (1+θ)^k − 1; each entry's untilting adds its own.
	grow := math.Expm1(float64(k) * math.Log1p(tiltInErr(g, lam, step, top, n)))
	nu := (rounding + 2*pldTruncMass + cut) * (1 + grow) * (1 + 1e-9)
	out := grid{lo: wlo, mass: make([]float64, width), noise: nu, tiltLog: logK, tiltLam: lam}
	side := 1.0
	if !upper {
		side = -1
	}
	for t, x := range r {
		if x > 0 {
			e := math.Log(x) + logK - lam*float64(wlo+t)*step
			rel := grow + expErr(math.Abs(math.Log(x))+math.Abs(logK)+math.Abs(lam*float64(wlo+t)*step))
			out.mass[t] = math.Min(1, math.Exp(e)*(1+side*rel))
		}
	}
	out.inf = -math.Expm1(float64(k) * math.Log1p(-g.inf))
	if upper {
		out.inf = math.Min(1, out.inf+math.Exp(logK-lam*float64(whi)*step)*(pldTruncMass+above))
	}
	return out, nil
}

// expErr bounds the relative error of e^x computed from a sum of terms of
// total magnitude mag, each rounded (a few u each, times the magnitude,
// plus exp's own).
func expErr(mag float64) float64 {
	return 8 * unitRoundoff * (mag + 1)
}

// tiltInErr bounds the relative error θ of every tilted, normalised
// one-step mass e^{log m + λl − top}/Σ: the exponent's rounding (expErr)
// and the sum's (γ_n).
func tiltInErr(g grid, lam, step, top float64, n int) float64 {
	var mag float64
	for i, m := range g.mass {
		if m > 0 {
			mag = math.Max(mag, math.Abs(math.Log(m))+math.Abs(lam*float64(g.lo+i)*step))
		}
	}
	return expErr(mag+math.Abs(top)) + gamma(n+1)
}
