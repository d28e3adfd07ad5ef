package f32

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// poolInputs are MaxPairs's and MaxKeyPairs's test inputs: ties, signed
// zeros, infinities, NaNs and subnormals, and random data.
func poolInputs() map[string][]float32 {
	r := rand.New(rand.NewPCG(1, 2))
	negZero, inf := float32(math.Copysign(0, -1)), float32(math.Inf(1))
	random := make([]float32, 1000)
	for i := range random {
		random[i] = float32(r.NormFloat64())
	}
	ties := make([]float32, 1000) // few values: many equal pairs
	for i := range ties {
		ties[i] = []float32{-1, negZero, 0, 1, 0.5}[r.IntN(5)]
	}
	zeros := make([]float32, 200) // −0 against +0 in every order
	for i := range zeros {
		zeros[i] = []float32{negZero, 0}[r.IntN(2)]
	}
	special := []float32{0, negZero, inf, -inf, float32(math.NaN()), math.SmallestNonzeroFloat32,
		-math.SmallestNonzeroFloat32, math.MaxFloat32, -math.MaxFloat32, 1, -1, 1, 1, -1, -1, negZero,
		negZero, 0, 0, 2, 3, -2, -3, 0.25, 0.25, inf, inf, -inf}
	return map[string][]float32{"random": random, "ties": ties, "zeros": zeros, "special": special}
}

// TestMaxPairs compares MaxPairs with its Go definition bit for bit, keys
// and indices, over lengths with and without a tail of fewer than eight.
func TestMaxPairs(t *testing.T) {
	for name, src := range poolInputs() {
		for _, d := range []int{1, 3, 16, 32} {
			for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 100, len(src) - d} {
				if n+d > len(src) || n < 0 {
					continue
				}
				k, a := make([]int32, n), make([]int32, n)
				wk, wa := make([]int32, n), make([]int32, n)
				MaxPairs(k, a, src, d, 7)
				maxPairsGo(wk, wa, src, d, 7)
				if !slices.Equal(k, wk) || !slices.Equal(a, wa) {
					t.Errorf("%s d=%d n=%d: keys %v indices %v, want %v %v", name, d, n, k, a, wk, wa)
				}
			}
		}
	}
}

// TestMaxKeyPairs is TestMaxPairs for MaxKeyPairs, also checking that
// KeyFloat gives back the larger input's bits.
func TestMaxKeyPairs(t *testing.T) {
	for name, src := range poolInputs() {
		k, a := make([]int32, len(src)), make([]int32, len(src))
		for i, v := range src {
			k[i], a[i] = OrderKey(v), int32(3*i+1)
		}
		for _, d := range []int{1, 3, 16, 32} {
			for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 100, len(src) - d} {
				if n+d > len(src) || n < 0 {
					continue
				}
				y, arg := make([]float32, n), make([]int32, n)
				wy, warg := make([]float32, n), make([]int32, n)
				MaxKeyPairs(y, arg, k, a, d)
				maxKeyPairsGo(wy, warg, k, a, d)
				for j := range n {
					if math.Float32bits(y[j]) != math.Float32bits(wy[j]) || arg[j] != warg[j] {
						t.Errorf("%s d=%d n=%d j=%d: %g (%#x) at %d, want %g (%#x) at %d", name, d, n, j,
							y[j], math.Float32bits(y[j]), arg[j], wy[j], math.Float32bits(wy[j]), warg[j])
						break
					}
					if w := src[(warg[j]-1)/3]; math.Float32bits(wy[j]) != math.Float32bits(w) {
						t.Errorf("%s d=%d j=%d: %g, not its argument's %g", name, d, j, wy[j], w)
					}
				}
			}
		}
	}
}

// TestOrderKey checks that keys order floats as < does, −0 below +0.
func TestOrderKey(t *testing.T) {
	vals := []float32{float32(math.Inf(-1)), -math.MaxFloat32, -1, -math.SmallestNonzeroFloat32,
		float32(math.Copysign(0, -1)), 0, math.SmallestNonzeroFloat32, 1, math.MaxFloat32, float32(math.Inf(1))}
	for i := 1; i < len(vals); i++ {
		if OrderKey(vals[i-1]) >= OrderKey(vals[i]) {
			t.Errorf("OrderKey(%g) ≥ OrderKey(%g)", vals[i-1], vals[i])
		}
	}
	for _, v := range vals {
		if KeyFloat(OrderKey(v)) != v || math.Signbit(float64(KeyFloat(OrderKey(v)))) != math.Signbit(float64(v)) {
			t.Errorf("KeyFloat(OrderKey(%g)) = %g", v, KeyFloat(OrderKey(v)))
		}
	}
}
