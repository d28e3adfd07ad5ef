package grid

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// round agrees with math.Round bit for bit on finite values but −0: at and
// around every half, at integers, across binades and at the largest values.
func TestRound(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	xs := []float64{0, 0.5, 1.5, 2.5, 0.49999999999999994, 1 << 52, 1<<52 + 1, 1 << 53, math.MaxFloat64, math.SmallestNonzeroFloat64, 4503599627370495.5}
	for range 100000 {
		xs = append(xs, math.Ldexp(2*r.Float64()-1, r.IntN(120)-60), float64(r.IntN(2000)-1000)/2)
	}
	for _, x := range xs {
		for _, v := range []float64{x, -x, math.Nextafter(x, 0), math.Nextafter(x, math.Inf(1)), -math.Nextafter(x, math.Inf(1))} {
			if (v == 0 && math.Signbit(v)) || math.IsInf(v, 0) {
				continue
			}
			if got, want := round(v), math.Round(v); math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("round(%v) = %v, want %v", v, got, want)
			}
		}
	}
}

// NoisyMean equals the formula with math.Round bit for bit, on both routes,
// for every length (the assembly's tail), with halves, ±0 and huge values
// in the sum, and finds the first non-finite coordinate.
func TestNoisyMean(t *testing.T) {
	on := simd
	defer func() { simd = on }()
	r := rand.New(rand.NewPCG(1, 2))
	const g = 1.0 / (1 << 21)
	for _, route := range []bool{true, false} {
		simd = route && on
		for _, n := range []int{0, 1, 3, 4, 5, 8, 13, 1000} {
			t.Run(fmt.Sprintf("simd=%v/%d", simd, n), func(t *testing.T) {
				sum, z := make([]float32, n), make([]float64, n)
				for i := range sum {
					switch i % 5 {
					case 0: // an exact half of the grid
						sum[i] = float32((float64(r.IntN(2000)-1000) + 0.5) * g)
					case 1:
						sum[i] = float32(math.Copysign(0, float64(r.IntN(2)-1)))
					case 2:
						sum[i] = float32(math.Ldexp(2*r.Float64()-1, r.IntN(60)-40))
					default:
						sum[i] = float32(2*r.Float64() - 1)
					}
					z[i] = g * float64(r.IntN(1<<22)-1<<21)
				}
				out := make([]float64, n+1)
				out[n] = 7
				if k := NoisyMean(out, sum, z, g, 1/g, 1.0/256); k != -1 {
					t.Fatalf("non-finite at %d", k)
				}
				for i, v := range sum {
					want := (g*math.Round(float64(v)/g+0) + z[i]) / 256
					if math.Float64bits(out[i]) != math.Float64bits(want+0) && !(want == 0 && out[i] == 0) {
						t.Fatalf("out[%d] = %v, want %v (sum %v)", i, out[i], want, v)
					}
				}
				if out[n] != 7 {
					t.Fatal("wrote past len(sum)")
				}
				for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(-1))} {
					if n > 0 {
						at := n / 2
						s := append([]float32(nil), sum...)
						s[at] = bad
						if n > 2 {
							s[n-1] = bad
						}
						if k := NoisyMean(out, s, z, g, 1/g, 1.0/256); k != at {
							t.Errorf("%v at %d: reported %d", bad, at, k)
						}
					}
				}
			})
		}
	}
}
