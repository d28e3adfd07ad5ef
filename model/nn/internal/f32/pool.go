package f32

import "math"

// OrderKey maps a float32's bits to an int32 with the same order (for
// non-NaN values; −0 sorts below +0), so that a maximum can be taken with
// integer comparisons: branch-free in Go, and eight lanes to a YMM register.
func OrderKey(v float32) int32 {
	b := int32(math.Float32bits(v))
	return b ^ (b >> 31 & 0x7fffffff)
}

// KeyFloat inverts OrderKey.
func KeyFloat(k int32) float32 {
	return math.Float32frombits(uint32(k ^ (k >> 31 & 0x7fffffff)))
}

// MaxPairs sets, for each j < len(k), k[j] to the larger OrderKey of
// src[j] and src[j+d] and a[j] to its index plus base: base+j, or
// base+j+d when src[j+d]'s key is strictly larger (the first wins ties).
// src must hold len(k)+d values and a len(k). Where the CPU has AVX2 (and
// not under the purego tag) an assembly loop does eight lanes at a time,
// with the same results bit for bit.
func MaxPairs(k, a []int32, src []float32, d int, base int32) {
	a, src = a[:len(k)], src[:len(k)+d]
	i := 0
	if poolSIMD {
		if n := len(k) &^ 7; n > 0 {
			maxPairsAVX2(&k[0], &a[0], &src[0], n, d, int(base))
			i = n
		}
	}
	maxPairsGo(k[i:], a[i:], src[i:], d, base+int32(i))
}

// maxPairsGo is MaxPairs's definition, one value at a time.
func maxPairsGo(k, a []int32, src []float32, d int, base int32) {
	a, src = a[:len(k)], src[:len(k)+d]
	for j := range k {
		kl, kr, al := OrderKey(src[j]), OrderKey(src[j+d]), base+int32(j)
		if kr > kl {
			kl, al = kr, al+int32(d)
		}
		k[j], a[j] = kl, al
	}
}

// MaxKeyPairs sets, for each j < len(y), y[j] to the float of the larger
// of the keys k[j] and k[j+d] and arg[j] to a[j], or a[j+d] when k[j+d]
// is strictly larger (the first wins ties). k and a must hold len(y)+d
// values and arg len(y). Like MaxPairs, it has an AVX2 route with the same
// results.
func MaxKeyPairs(y []float32, arg, k, a []int32, d int) {
	arg, k, a = arg[:len(y)], k[:len(y)+d], a[:len(y)+d]
	i := 0
	if poolSIMD {
		if n := len(y) &^ 7; n > 0 {
			maxKeyPairsAVX2(&y[0], &arg[0], &k[0], &a[0], n, d)
			i = n
		}
	}
	maxKeyPairsGo(y[i:], arg[i:], k[i:], a[i:], d)
}

// maxKeyPairsGo is MaxKeyPairs's definition, one value at a time.
func maxKeyPairsGo(y []float32, arg, k, a []int32, d int) {
	arg, k, a = arg[:len(y)], k[:len(y)+d], a[:len(y)+d]
	for j := range y {
		ku, au := k[j], a[j]
		if kd := k[j+d]; kd > ku {
			ku, au = kd, a[j+d]
		}
		y[j], arg[j] = KeyFloat(ku), au
	}
}
