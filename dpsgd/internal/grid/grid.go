// Package grid owns DP-SGD's per-coordinate release arithmetic: the clipped
// sum (float32, as model/nn's products leave it) rounded to the discrete
// Gaussian's grid, plus the noise, times 1/b,
//
//	out[i] = (g·round(v_i/g) + z_i)/b,   round = math.Round,
//
// the output of mech.GaussianVector.AddTo scaled by the expected batch
// size. On amd64 with AVX it runs four coordinates per instruction in
// assembly, with the same IEEE operations in the same order as the Go loop
// (no fused multiply-add), so both give the same bits; elsewhere, or under
// the purego build tag, it runs in Go.
package grid

import "math"

// NoisyMean sets out[i] = (g·round(sum[i]·ig) + z[i])·ib for every i
// (len(out) and len(z) ≥ len(sum)), where ig = 1/g is exact (g a power of
// two) and round is math.Round. out may be z itself: each z[i] is read
// before out[i] is written. It returns the index of a non-finite
// sum[i], or −1 when all are finite; out is then unspecified.
func NoisyMean(out []float64, sum []float32, z []float64, g, ig, ib float64) int {
	n := 0
	if simd {
		n = len(sum) &^ 3
		if n > 0 && !noisyMeanAVX(&out[0], &sum[0], &z[0], n, g, ig, ib) {
			return firstNonFinite(sum[:n])
		}
	}
	if k := noisyMeanGo(out[n:], sum[n:], z[n:], g, ig, ib); k >= 0 {
		return n + k
	}
	return -1
}

// noisyMeanGo is NoisyMean in Go.
func noisyMeanGo(out []float64, sum []float32, z []float64, g, ig, ib float64) int {
	out, z = out[:len(sum)], z[:len(sum)]
	for i, v32 := range sum {
		v := float64(v32) + 0 // −0 as +0
		if v-v != 0 {         // NaN or ±Inf
			return i
		}
		out[i] = (g*round(v*ig) + z[i]) * ib
	}
	return -1
}

// firstNonFinite is the index of sum's first NaN or ±Inf, or −1.
func firstNonFinite(sum []float32) int {
	for i, v := range sum {
		if v-v != 0 {
			return i
		}
	}
	return -1
}

// round is math.Round (halves away from zero) for finite x but −0 (it
// gives +0), built from truncation, which amd64 does in one instruction
// where math.Round takes a dozen: with t = trunc(x), x − t is exact, so is
// doubling it, and trunc(2(x − t)) is ±1 exactly when |x − t| ≥ 1/2 (with
// the sign of x), else ±0.
func round(x float64) float64 {
	t := math.Trunc(x)
	return t + math.Trunc(2*(x-t))
}
