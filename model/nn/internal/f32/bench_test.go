package f32

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkGemm times each route on the products of a DP-SGD step at batch
// 256 (MLP 784-256-10 and logistic regression 784-10), named
// m×n×k/op: C is m×n and T marks a transposed operand.
func BenchmarkGemm(b *testing.B) {
	shapes := []struct {
		m, n, k int
		tA, tB  bool
	}{
		{256, 256, 784, false, false}, // MLP forward X·W
		{784, 256, 256, true, false},  // MLP ∇W = Xᵀ·G
		{256, 10, 256, false, false},  // MLP output layer
		{256, 10, 784, false, false},  // logreg forward
		{784, 10, 256, true, false},   // logreg ∇W
		{50176, 16, 64, false, false}, // CNN conv1 forward (U·W, 196 positions)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for name, f := range routes(b) {
		for _, s := range shapes {
			op := map[[2]bool]string{{false, false}: "NN", {true, false}: "TN", {false, true}: "NT", {true, true}: "TT"}[[2]bool{s.tA, s.tB}]
			b.Run(fmt.Sprintf("%s/%dx%dx%d/%s", name, s.m, s.n, s.k, op), func(b *testing.B) {
				lda, ldb := s.k, s.n
				if s.tA {
					lda = s.m
				}
				if s.tB {
					ldb = s.k
				}
				a := randMatrix(r, s.m*s.k/lda, lda, lda)
				x := randMatrix(r, s.k*s.n/ldb, ldb, ldb)
				c := make([]float32, s.m*s.n)
				for b.Loop() {
					f(s.tA, s.tB, s.m, s.n, s.k, 1, a, lda, x, ldb, 0, c, s.n)
				}
				b.ReportMetric(float64(2*s.m*s.n*s.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOPS")
			})
		}
	}
}
