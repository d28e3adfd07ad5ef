package par

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
)

func TestFor(t *testing.T) {
	for _, procs := range []int{1, 2, 4} {
		for _, n := range []int{0, 1, 2, 3, 17, 1000} {
			t.Run(fmt.Sprintf("procs=%d/n=%d", procs, n), func(t *testing.T) {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
				hits := make([]atomic.Int32, n)
				For(n, func(i int) { hits[i].Add(1) })
				for i := range hits {
					if h := hits[i].Load(); h != 1 {
						t.Fatalf("task %d ran %d times", i, h)
					}
				}
			})
		}
	}
}

func TestChunks(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	for _, c := range []struct{ n, size int }{{0, 3}, {1, 3}, {10, 3}, {12, 3}, {5, 10}} {
		t.Run(fmt.Sprintf("n=%d/size=%d", c.n, c.size), func(t *testing.T) {
			got := make([]atomic.Int32, c.n)
			Chunks(c.n, c.size, func(lo, hi int) {
				if hi-lo > c.size || hi <= lo {
					t.Errorf("piece [%d, %d) of size %d", lo, hi, c.size)
				}
				for i := lo; i < hi; i++ {
					got[i].Add(1)
				}
			})
			for i := range got {
				if got[i].Load() != 1 {
					t.Fatalf("index %d covered %d times", i, got[i].Load())
				}
			}
		})
	}
}

func BenchmarkForEmpty(b *testing.B) {
	for range b.N {
		For(8, func(int) {})
	}
}
