package nn

import (
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/dpal-dev/dpal/dp/rng"
)

// BenchmarkGemm compares gonum's float64 and float32 GEMM at the MLP's
// forward size (256×784 · 784×256), the measurement behind float64.
func BenchmarkGemm(b *testing.B) {
	const m, k, n = 256, 784, 256
	b.Run("float64", func(b *testing.B) {
		a := blas64.General{Rows: m, Cols: k, Stride: k, Data: make([]float64, m*k)}
		x := blas64.General{Rows: k, Cols: n, Stride: n, Data: make([]float64, k*n)}
		c := blas64.General{Rows: m, Cols: n, Stride: n, Data: make([]float64, m*n)}
		for i := range a.Data {
			a.Data[i] = float64(i%7) - 3
		}
		for i := 0; i < b.N; i++ {
			blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, a, x, 0, c)
		}
		b.ReportMetric(float64(2*m*k*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOPS")
	})
	b.Run("float32", func(b *testing.B) {
		a := blas32.General{Rows: m, Cols: k, Stride: k, Data: make([]float32, m*k)}
		x := blas32.General{Rows: k, Cols: n, Stride: n, Data: make([]float32, k*n)}
		c := blas32.General{Rows: m, Cols: n, Stride: n, Data: make([]float32, m*n)}
		for i := range a.Data {
			a.Data[i] = float32(i%7) - 3
		}
		for i := 0; i < b.N; i++ {
			blas32.Gemm(blas.NoTrans, blas.NoTrans, 1, a, x, 0, c)
		}
		b.ReportMetric(float64(2*m*k*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOPS")
	})
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
