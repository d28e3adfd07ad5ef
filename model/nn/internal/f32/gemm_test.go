package f32

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// reference is the textbook triple loop, accumulated in float64.
func reference(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	for i := range m {
		for j := range n {
			s := 0.0
			for p := range k {
				ai, bi := i*lda+p, p*ldb+j
				if transA {
					ai = p*lda + i
				}
				if transB {
					bi = j*ldb + p
				}
				av, bv := a[ai], b[bi]
				s += float64(av) * float64(bv)
			}
			old := 0.0
			if beta != 0 {
				old = float64(beta) * float64(c[i*ldc+j])
			}
			c[i*ldc+j] = float32(float64(alpha)*s + old)
		}
	}
}

func randMatrix(r *rand.Rand, rows, cols, ld int) []float32 {
	d := make([]float32, (rows-1)*ld+cols)
	for i := range d {
		d[i] = float32(2*r.Float64() - 1)
	}
	return d
}

// routes are the implementations under test: the dispatching Gemm with
// and without its SIMD route (the same one on machines without it).
func routes(t testing.TB) map[string]gemmFunc {
	t.Cleanup(func() { SetSIMD(true) })
	out := map[string]gemmFunc{"blas32": Blas32}
	for name, f := range simdRoutes() {
		out[name] = f
	}
	return out
}

func TestGemmAgainstReference(t *testing.T) {
	sizes := [][3]int{
		{1, 1, 1}, {7, 5, 3}, {6, 16, 256}, {13, 33, 300}, {100, 17, 513},
		{257, 10, 784}, {5, 300, 1}, {130, 140, 128}, {4, 3, 0}, {0, 4, 3},
		{37, 4100, 9},
	}
	r := rand.New(rand.NewPCG(1, 2))
	for name, f := range routes(t) {
		for _, s := range sizes {
			m, n, k := s[0], s[1], s[2]
			for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
				for _, ab := range [][2]float32{{1, 0}, {1, 1}, {-0.5, 0.3}} {
					id := fmt.Sprintf("%s/%dx%dx%d/tA=%v,tB=%v/alpha=%v,beta=%v", name, m, n, k, tr[0], tr[1], ab[0], ab[1])
					t.Run(id, func(t *testing.T) {
						check(t, r, f, tr[0], tr[1], m, n, k, ab[0], ab[1])
					})
				}
			}
		}
	}
}

// check runs f and the reference on one random case, with strides wider
// than the matrices, and compares every entry of C and its padding.
func check(t *testing.T, r *rand.Rand, f gemmFunc, tA, tB bool, m, n, k int, alpha, beta float32) {
	ra, ca := m, k
	if tA {
		ra, ca = k, m
	}
	rb, cb := k, n
	if tB {
		rb, cb = n, k
	}
	lda, ldb, ldc := ca+3, cb+1, n+2
	a := randMatrix(r, max(ra, 1), ca, lda)
	b := randMatrix(r, max(rb, 1), cb, ldb)
	c := randMatrix(r, max(m, 1), n, ldc)
	if beta == 0 {
		for i := range c {
			c[i] = float32(math.NaN()) // β = 0 must ignore C
		}
	}
	want := append([]float32(nil), c...)
	reference(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, want, ldc)
	f(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	tol := 1e-5 * math.Sqrt(float64(k)+1)
	for i := range m {
		for j := range ldc {
			idx := i*ldc + j
			if idx >= len(c) {
				break
			}
			got, exp := float64(c[idx]), float64(want[idx])
			if j >= n {
				if !(got == exp || math.IsNaN(got) && math.IsNaN(exp)) {
					t.Fatalf("C[%d,%d] outside the matrix changed: %v → %v", i, j, exp, got)
				}
				continue
			}
			if math.Abs(got-exp) > tol*(1+math.Abs(exp)) {
				t.Fatalf("C[%d,%d] = %v, want %v", i, j, got, exp)
			}
		}
	}
}

func TestSetSIMD(t *testing.T) {
	defer SetSIMD(true)
	if SetSIMD(false) || Route() != "blas32" {
		t.Fatalf("SetSIMD(false) left route %q", Route())
	}
	on := SetSIMD(true)
	if on != (Route() != "blas32") {
		t.Fatalf("SetSIMD(true) = %v with route %q", on, Route())
	}
}

// TestConvert checks Convert and Copy: the float32 values, nothing written
// past len(src), and the sum of squares of src.
func TestConvert(t *testing.T) {
	defer SetSIMD(true)
	r := rand.New(rand.NewPCG(3, 4))
	copyVia := func(dst []float32, src []float64) float64 {
		src32 := make([]float32, len(src))
		for i, v := range src {
			src32[i] = float32(v)
			src[i] = float64(src32[i]) // the sum Copy returns is of these
		}
		return Copy(dst, src32)
	}
	for _, simd := range []bool{true, false} {
		SetSIMD(simd)
		for _, n := range []int{0, 1, 7, 8, 9, 16, 31, 784} {
			for name, f := range map[string]func([]float32, []float64) float64{"Convert": Convert, "Copy": copyVia} {
				t.Run(fmt.Sprintf("%s/%s/%d", name, Route(), n), func(t *testing.T) {
					src := make([]float64, n)
					for i := range src {
						src[i] = 4*r.Float64() - 2
					}
					dst := make([]float32, n+1)
					dst[n] = 7 // beyond src: untouched
					got := f(dst, src)
					want := 0.0
					for i, v := range src {
						want += v * v
						if dst[i] != float32(v) {
							t.Fatalf("dst[%d] = %v, want %v", i, dst[i], float32(v))
						}
					}
					if dst[n] != 7 {
						t.Fatal("wrote past len(src)")
					}
					if math.Abs(got-want) > 1e-12*(1+want) {
						t.Fatalf("Σ src² = %v, want %v", got, want)
					}
				})
			}
		}
	}
}

// TestSqNorm: both routes give the same bits (same sums, same order) for
// every tail length, close to the exact value.
func TestSqNorm(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{0, 1, 3, 4, 5, 9, 256, 783} {
		x := make([]float32, n)
		want := 0.0
		for i := range x {
			x[i] = float32(math.Ldexp(2*r.Float64()-1, r.IntN(20)-10))
			want += float64(x[i]) * float64(x[i])
		}
		got := SqNorm(x)
		if g := sqNormGo(x); math.Float64bits(got) != math.Float64bits(g) {
			t.Errorf("n = %d: SqNorm %v, Go route %v", n, got, g)
		}
		if math.Abs(got-want) > 1e-12*want {
			t.Errorf("n = %d: SqNorm %v, want %v", n, got, want)
		}
	}
}

// TestGemmSameOnAnyCoreCount checks that splitting C over the cores leaves
// every entry bit-for-bit as one core computes it (seeded runs repeat), for
// a product split by panels of B and for ones split by rows of C, with
// several kc blocks (k > 256) and a ragged last task.
func TestGemmSameOnAnyCoreCount(t *testing.T) {
	for _, c := range []struct {
		m, n, k int
		tA, tB  bool
	}{
		{70, 200, 300, false, false},  // few rows: split by panels of B
		{256, 256, 784, false, false}, // the MLP's forward product
		{784, 256, 256, true, false},  // the MLP's weight gradient
		{200, 30, 700, false, true},   // narrow C, B transposed
		{3000, 16, 64, false, false},  // a convolution's: tasks of many mc blocks
		{64, 16, 5000, true, false},   // a convolution's weight gradient: 3 row tasks
	} {
		t.Run(fmt.Sprintf("%dx%dx%d", c.m, c.n, c.k), func(t *testing.T) {
			r := rand.New(rand.NewPCG(5, 6))
			ra, ca, rb, cb := c.m, c.k, c.k, c.n
			if c.tA {
				ra, ca = ca, ra
			}
			if c.tB {
				rb, cb = cb, rb
			}
			a, b := randMatrix(r, ra, ca, ca), randMatrix(r, rb, cb, cb)
			run := func(procs int) []float32 {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
				out := make([]float32, c.m*c.n)
				Gemm(c.tA, c.tB, c.m, c.n, c.k, 1, a, ca, b, cb, 0, out, c.n)
				return out
			}
			one := run(1)
			for _, procs := range []int{2, 4} {
				if got := run(procs); !slices.Equal(one, got) {
					t.Fatalf("C differs between one core and %d", procs)
				}
			}
		})
	}
}

// FuzzGemm checks every route against the reference on fuzzed shapes,
// transposes and scalars (sizes kept small: the reference is cubic).
func FuzzGemm(f *testing.F) {
	f.Add(uint8(7), uint8(17), uint8(9), false, true, int8(2), int8(0), uint64(1))
	f.Add(uint8(13), uint8(130), uint8(1), true, false, int8(-1), int8(3), uint64(2))
	f.Add(uint8(0), uint8(5), uint8(0), true, true, int8(1), int8(1), uint64(3))
	f.Fuzz(func(t *testing.T, m, n, k uint8, tA, tB bool, alpha, beta int8, seed uint64) {
		r := rand.New(rand.NewPCG(seed, 7))
		for name, g := range routes(t) {
			t.Run(name, func(t *testing.T) {
				check(t, r, g, tA, tB, int(m%40), int(n), int(k%70), float32(alpha)/2, float32(beta)/2)
			})
		}
	})
}
