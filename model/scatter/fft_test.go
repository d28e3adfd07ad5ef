package scatter

import (
	"math"
	"math/cmplx"
	"math/rand/v2"
	"testing"
)

func TestFFT1MatchesDFT(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	const lanes = 3
	for n := 1; n <= 40; n++ {
		f := newFFT1(n)
		src := make([]complex128, n*lanes)
		for i := range src {
			src[i] = complex(rng.NormFloat64(), rng.NormFloat64())
		}
		for _, inv := range []bool{false, true} {
			got := make([]complex128, n*lanes)
			f.transform(got, src, lanes, inv)
			sign := -1.0
			if inv {
				sign = 1
			}
			for k := range n {
				for v := range lanes {
					var want complex128
					for j := range n {
						want += src[j*lanes+v] * cmplx.Exp(complex(0, sign*2*math.Pi*float64(j*k%n)/float64(n)))
					}
					if d := cmplx.Abs(got[k*lanes+v] - want); d > 1e-12*float64(n) {
						t.Fatalf("n = %d, inverse %v, coefficient %d lane %d: %v, want %v", n, inv, k, v, got[k*lanes+v], want)
					}
				}
			}
		}
	}
}
