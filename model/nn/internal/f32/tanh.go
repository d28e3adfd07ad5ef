package f32

import "math"

// Tanh sets dst[i] = float32(math.Tanh(float64(src[i]))) for every i
// (len(dst) ≥ len(src)): bit for bit the values of that loop, at a
// fraction of its cost where the CPU has AVX2 and FMA (elsewhere, and
// under the purego tag, it is that loop).
//
// The assembly loop first computes each value without branches, in
// float64, four lanes at a time, as
// tanh|x| = e/(e + 2), e = expm1(2|x|), from a Cody–Waite reduction
// 2|x| = k·ln2 + r, |r| ≤ ln2/2, and a degree-11 Taylor polynomial for
// expm1(r) = r + r²·q(r), so that e = 2^k·expm1(r) + (2^k − 1) keeps its
// relative accuracy down to the smallest |x|; |x| is clamped at 9.5, past
// which tanh rounds to ±1 in float32 (tanh 9.5 = 1 − 1.1e-8, and float32's
// neighbour below 1 is 1 − 6e-8). That value is within a few hundred
// float64 ulps of math.Tanh's, so
// its rounding to float32 is math.Tanh's unless it lies within 2¹⁴
// ulps of a midpoint between two float32s (Ziv's rounding test), which
// about one input in 16 000 does: those, NaNs, and inputs below 2⁻¹²⁰ (whose
// tanh may be subnormal in float32, where the midpoints lie elsewhere)
// take math.Tanh itself. TestTanhAll checks every float32 input.
func Tanh(dst, src []float32) {
	dst = dst[:len(src)]
	i := 0
	if tanhSIMD {
		n := len(src) &^ 3
		for i < n {
			i += tanhAVX2(&dst[i], &src[i], n-i)
			if i == n {
				break
			}
			// A lane of the group at i needs math.Tanh.
			tanhGo(dst[i:i+4], src[i:i+4])
			i += 4
		}
	}
	tanhGo(dst[i:], src[i:])
}

// tanhGo is Tanh's definition, one value at a time.
func tanhGo(dst, src []float32) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = float32(math.Tanh(float64(v)))
	}
}
