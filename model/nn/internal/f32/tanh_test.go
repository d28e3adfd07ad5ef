package f32

import (
	"math"
	"os"
	"testing"
)

// tanhWant is Tanh's definition.
func tanhWant(v float32) float32 { return float32(math.Tanh(float64(v))) }

// sameFloat reports equal bits, or both NaN.
func sameFloat(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || (a != a && b != b)
}

// checkTanh runs Tanh over src and compares every value with tanhWant.
func checkTanh(t *testing.T, src []float32) {
	t.Helper()
	dst := make([]float32, len(src))
	Tanh(dst, src)
	bad := 0
	for i, v := range src {
		if w := tanhWant(v); !sameFloat(dst[i], w) {
			if bad++; bad <= 5 {
				t.Errorf("Tanh(%g) = %g (%#08x), want %g (%#08x)", v, dst[i], math.Float32bits(dst[i]), w, math.Float32bits(w))
			}
		}
	}
	if bad > 5 {
		t.Errorf("%d values differ in all", bad)
	}
}

func TestTanh(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	special := []float32{0, float32(math.Copysign(0, -1)), inf, -inf, nan, -nan,
		math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32, 0x1p-126, 0x1p-121, 0x1p-119, -0x1p-119,
		1e-10, 1e-5, 0.1, 0.1732, 0.3465, 0.3466, 0.5, 0.625, 1, 2, 5, 9, 9.01, 9.02, 9.49, 9.5, 9.51, 10, 20,
		1e10, math.MaxFloat32, -math.MaxFloat32, -0.5, -1, -9.01, -1e30}
	for _, c := range []struct {
		name string
		src  []float32
	}{
		{"special", special},
		{"special-offset", special[1:]},
		{"tail", special[:7]},
		{"empty", nil},
		{"sweep", sweep(0, 1<<32, 997)},
		// Around the clamp and the 2⁻¹²⁰ threshold, every value.
		{"near-9.5", sweep(uint64(math.Float32bits(9.4)), uint64(math.Float32bits(9.6)), 1)},
		{"near-tiny", sweep(uint64(math.Float32bits(0x1p-121)), uint64(math.Float32bits(0x1p-119)), 1)},
	} {
		t.Run(c.name, func(t *testing.T) { checkTanh(t, c.src) })
	}
}

// sweep returns the float32s whose bits are lo, lo+step, … below hi.
func sweep(lo, hi, step uint64) []float32 {
	var out []float32
	for b := lo; b < hi; b += step {
		out = append(out, math.Float32frombits(uint32(b)))
	}
	return out
}

// TestTanhAll compares Tanh with its definition on every float32 (a few
// minutes): set DPAL_TANH_ALL=1 to run it.
func TestTanhAll(t *testing.T) {
	if os.Getenv("DPAL_TANH_ALL") == "" {
		t.Skip("set DPAL_TANH_ALL=1 to check all 2³² inputs")
	}
	const chunk = 1 << 20
	for lo := uint64(0); lo < 1<<32; lo += chunk {
		checkTanh(t, sweep(lo, lo+chunk, 1))
		if t.Failed() {
			t.Fatalf("stopped in the chunk from %#x", lo)
		}
	}
}

func BenchmarkTanh(b *testing.B) {
	src := sweep(uint64(math.Float32bits(-3)), uint64(math.Float32bits(-3))+4096*997, 997)
	for i := range src {
		src[i] = float32(math.Mod(float64(i)*0.618034, 6) - 3) // spread over ±3
	}
	dst := make([]float32, len(src))
	b.Run("Tanh", func(b *testing.B) {
		for b.Loop() {
			Tanh(dst, src)
		}
	})
	b.Run("math.Tanh", func(b *testing.B) {
		for b.Loop() {
			tanhGo(dst, src)
		}
	})
}
