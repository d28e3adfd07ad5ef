package f32

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// sparseMatrix is a rows×cols matrix (row stride ld) about density
// nonzero, with whole runs of zeros (as an image's background) and zeros
// of both signs.
func sparseMatrix(r *rand.Rand, rows, cols, ld int, density float64) []float32 {
	d := randMatrix(r, rows, cols, ld)
	for i := range d {
		switch {
		case i%ld >= 300 && i%ld < 400: // a zero run across a k-block edge
			d[i] = 0
		case r.Float64() >= density:
			d[i] = float32(math.Copysign(0, float64(d[i])))
		}
	}
	return d
}

// toCSR returns the rows×cols matrix a (row stride lda) in compressed rows.
func toCSR(a []float32, rows, cols, lda int) *CSR {
	var s CSR
	s.Reset()
	for i := range rows {
		if !s.AppendRow(a[i*lda:i*lda+cols], rows*cols) {
			panic("limit")
		}
	}
	return &s
}

// TestSparseGemmSameBits checks SparseGemm against the SIMD route's dense
// product bit for bit, for A given in rows (C = A·B) and through its
// transpose (C = Aᵀ·B, as a layer's weight gradient), over k-blocks, β and
// strides, on any number of cores.
func TestSparseGemmSameBits(t *testing.T) {
	if !CanSparse(64) {
		t.Skip("no SIMD route")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	r := rand.New(rand.NewPCG(3, 4))
	for _, s := range []struct {
		m, n, k int
		density float64
	}{
		{1, 64, 1, 1}, {7, 64, 300, 0.3}, {256, 256, 784, 0.19}, {37, 128, 513, 0.05}, {300, 64, 256, 0.9}, {5, 192, 1000, 0},
	} {
		for _, beta := range []float32{0, 1, 0.5} {
			for _, procs := range []int{1, 2} {
				t.Run(fmt.Sprintf("%dx%dx%d/%v/beta%v/cpu%d", s.m, s.n, s.k, s.density, beta, procs), func(t *testing.T) {
					runtime.GOMAXPROCS(procs)
					lda, ldb, ldc := s.k+3, s.n+5, s.n+7
					a := sparseMatrix(r, s.m, s.k, lda, s.density)
					b := randMatrix(r, s.k, s.n, ldb)
					c0 := randMatrix(r, s.m, s.n, ldc)
					want, got := append([]float32(nil), c0...), append([]float32(nil), c0...)
					Gemm(false, false, s.m, s.n, s.k, 1, a, lda, b, ldb, beta, want, ldc)
					SparseGemm(s.m, s.n, toCSR(a, s.m, s.k, lda), b, ldb, beta, got, ldc)
					sameBits(t, "A·B", got, want)

					// Aᵀ·B' with A m×k: a k×m product over m.
					b2 := randMatrix(r, s.m, s.n, ldb)
					c2 := randMatrix(r, s.k, s.n, ldc)
					want, got = append([]float32(nil), c2...), append([]float32(nil), c2...)
					Gemm(true, false, s.k, s.n, s.m, 1, a, lda, b2, ldb, beta, want, ldc)
					var at CSR
					toCSR(a, s.m, s.k, lda).Transpose(s.k, &at)
					SparseGemm(s.k, s.n, &at, b2, ldb, beta, got, ldc)
					sameBits(t, "Aᵀ·B", got, want)
				})
			}
		}
	}
}

func sameBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s: entry %d is %v, dense product gives %v", what, i, got[i], want[i])
		}
	}
}

// TestAppendRowLimit checks that AppendRow stops past its limit.
func TestAppendRowLimit(t *testing.T) {
	var s CSR
	s.Reset()
	row := make([]float32, 100)
	for i := range row {
		row[i] = 1
	}
	if s.AppendRow(row, 50) {
		t.Fatal("100 nonzeros within a limit of 50")
	}
	s.Reset()
	if !s.AppendRow(row, 100) || s.Rows() != 1 || len(s.Idx) != 100 {
		t.Fatalf("one full row: %d rows, %d entries", s.Rows(), len(s.Idx))
	}
}

// BenchmarkSparseGemm times the MLP's two first-layer products at batch
// 256 on MNIST-like input (19 % nonzero): the forward X·W and the weight
// gradient Xᵀ·G, in GFLOPS of the dense products they replace.
func BenchmarkSparseGemm(b *testing.B) {
	if !CanSparse(256) {
		b.Skip("no SIMD route")
	}
	r := rand.New(rand.NewPCG(1, 2))
	x := sparseMatrix(r, 256, 784, 784, 0.19)
	w := randMatrix(r, 784, 256, 256)
	g := randMatrix(r, 256, 256, 256)
	xs := toCSR(x, 256, 784, 784)
	var xt CSR
	xs.Transpose(784, &xt)
	z := make([]float32, 784*256)
	dense := 2 * 256 * 256 * 784.0
	b.Run("forward", func(b *testing.B) {
		for b.Loop() {
			SparseGemm(256, 256, xs, w, 256, 0, z, 256)
		}
		b.ReportMetric(dense*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOPS")
	})
	b.Run("gradient", func(b *testing.B) {
		for b.Loop() {
			SparseGemm(784, 256, &xt, g, 256, 0, z, 256)
		}
		b.ReportMetric(dense*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOPS")
	})
	b.Run("transpose", func(b *testing.B) {
		for b.Loop() {
			xs.Transpose(784, &xt)
		}
	})
	b.Run("csr", func(b *testing.B) {
		for b.Loop() {
			xs.Reset()
			for i := range 256 {
				xs.AppendRow(x[i*784:(i+1)*784], 256*784)
			}
			xs.Transpose(784, &xt)
		}
	})
}

// TestAppendRowRoutes checks the SIMD route of AppendRow against the Go
// one on rows with zeros of both signs, NaN and lengths off 16.
func TestAppendRowRoutes(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{0, 5, 16, 17, 784, 801} {
		row := sparseMatrix(r, 1, n, n, 0.3)
		if n > 3 {
			row[3] = float32(math.NaN())
		}
		var got, want CSR
		got.Reset()
		got.AppendRow(row, n)
		appendNonzerosGo(&want, row, 0)
		if len(got.Idx) != len(want.Idx) {
			t.Fatalf("n=%d: %d nonzeros, want %d", n, len(got.Idx), len(want.Idx))
		}
		for i := range want.Idx {
			if got.Idx[i] != want.Idx[i] || math.Float32bits(got.Val[i]) != math.Float32bits(want.Val[i]) {
				t.Fatalf("n=%d entry %d: (%d, %v), want (%d, %v)", n, i, got.Idx[i], got.Val[i], want.Idx[i], want.Val[i])
			}
		}
	}
}

// TestAppendRowSq checks AppendRowSq against AppendRow and Copy's norm.
func TestAppendRowSq(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{16, 784, 800} {
		row := sparseMatrix(r, 1, n, n, 0.2)
		var got, want CSR
		got.Reset()
		want.Reset()
		sq, ok := got.AppendRowSq(row, row)
		if !ok {
			t.Skip("no AVX-512F")
		}
		want.AppendRow(row, n)
		wantSq := Copy(make([]float32, n), row)
		if math.Float64bits(sq) != math.Float64bits(wantSq) {
			t.Fatalf("n=%d: norm %v, Copy gives %v", n, sq, wantSq)
		}
		if !slices.Equal(got.Idx, want.Idx) || !slices.Equal(got.Val, want.Val) || !slices.Equal(got.Ptr, want.Ptr) {
			t.Fatalf("n=%d: entries differ from AppendRow's", n)
		}
	}
	var s CSR
	s.Reset()
	if _, ok := s.AppendRowSq(make([]float32, 17), make([]float32, 17)); ok || s.Rows() != 0 {
		t.Fatal("a row of 17 taken")
	}
}
