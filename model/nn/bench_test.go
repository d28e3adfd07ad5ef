package nn

import (
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/model/nn/internal/f32"
)

// BenchmarkGemm compares gonum's float64 GEMM with the float32 routes
// (package f32's SIMD kernels, and blas32: gonum's, or OpenBLAS under the
// openblas tag) on the MLP's products at batch 256: the forward X·W
// (256×784 · 784×256), the gradient Xᵀ·G (784×256 · 256×256) and the
// output layer (256×256 · 256×10).
func BenchmarkGemm(b *testing.B) {
	shapes := []struct {
		name    string
		m, n, k int
		tA      bool
	}{
		{"forward-256x256x784", 256, 256, 784, false},
		{"gradient-784x256x256", 784, 256, 256, true},
		{"output-256x10x256", 256, 10, 256, false},
	}
	gflops := func(b *testing.B, m, n, k int) {
		b.ReportMetric(float64(2*m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOPS")
	}
	for _, s := range shapes {
		b.Run("gonum-float64/"+s.name, func(b *testing.B) {
			ra, ca := s.m, s.k
			if s.tA {
				ra, ca = s.k, s.m
			}
			a := blas64.General{Rows: ra, Cols: ca, Stride: ca, Data: make([]float64, s.m*s.k)}
			x := blas64.General{Rows: s.k, Cols: s.n, Stride: s.n, Data: make([]float64, s.k*s.n)}
			c := blas64.General{Rows: s.m, Cols: s.n, Stride: s.n, Data: make([]float64, s.m*s.n)}
			for i := range a.Data {
				a.Data[i] = float64(i%7) - 3
			}
			tA := blas.NoTrans
			if s.tA {
				tA = blas.Trans
			}
			for b.Loop() {
				blas64.Gemm(tA, blas.NoTrans, 1, a, x, 0, c)
			}
			gflops(b, s.m, s.n, s.k)
		})
	}
	defer f32.SetSIMD(f32.Route() != "blas32")
	for _, simd := range []bool{true, false} {
		if f32.SetSIMD(simd) != simd {
			continue
		}
		route := f32.Route()
		if route == "blas32" {
			route += "-" + blas32Impl
		}
		for _, s := range shapes {
			b.Run(route+"/"+s.name, func(b *testing.B) {
				ra, ca := s.m, s.k
				if s.tA {
					ra, ca = s.k, s.m
				}
				a := matrix{ra, ca, make([]float32, s.m*s.k)}
				x := matrix{s.k, s.n, make([]float32, s.k*s.n)}
				c := matrix{s.m, s.n, make([]float32, s.m*s.n)}
				for i := range a.d {
					a.d[i] = float32(i%7) - 3
				}
				for b.Loop() {
					gemm(s.tA, false, 1, a, x, 0, c)
				}
				gflops(b, s.m, s.n, s.k)
			})
		}
	}
}

// BenchmarkClippedGrad times one clipped sum (forward, backward, norms,
// weighted products) per architecture at batch 256; ex/s is examples per
// second.
func BenchmarkClippedGrad(b *testing.B) {
	for _, c := range []struct {
		name string
		spec Spec
	}{
		{"logreg-784-10", Spec{Arch: LogReg, Inputs: 784, Classes: 10}},
		{"mlp-784-256-10", Spec{Arch: MLP, Inputs: 784, Classes: 10, Hidden: []int{256}, Activation: ReLU}},
		{"cnn-mnist", Spec{Arch: CNN, Inputs: 784, Classes: 10, Image: [3]int{28, 28, 1}}},
	} {
		b.Run(c.name, func(b *testing.B) {
			r := rng.Seeded(1)
			n, _ := New(c.spec, r)
			rows, labels := testBatch(r, c.spec, 256)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := n.ClippedGrad(rows, labels, 1, r); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(256*float64(b.N)/b.Elapsed().Seconds(), "ex/s")
		})
	}
}
