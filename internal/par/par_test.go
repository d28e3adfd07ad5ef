package par

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
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

// For may be called from several goroutines at once and from inside a
// task: each call still runs each of its tasks once.
func TestForConcurrentAndNested(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	var wg sync.WaitGroup
	var total atomic.Int64
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				For(3, func(int) {
					For(5, func(int) { total.Add(1) })
				})
			}
		}()
	}
	wg.Wait()
	if got, want := total.Load(), int64(4*50*3*5); got != want {
		t.Fatalf("%d tasks ran, want %d", got, want)
	}
}

// Background returns body's error; more is called only while body runs
// (never on one core), never after Background returns.
func TestBackground(t *testing.T) {
	for _, procs := range []int{1, 2} {
		t.Run(fmt.Sprintf("procs=%d", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			var calls, after atomic.Int64
			var over atomic.Bool
			more := func() bool {
				if over.Load() {
					after.Add(1)
				}
				calls.Add(1)
				return calls.Load() < 1000
			}
			want := errors.New("body's error")
			err := Background(more, func() error {
				for range 20 {
					For(4, func(int) { time.Sleep(10 * time.Microsecond) })
				}
				return want
			})
			over.Store(true)
			if err != want {
				t.Errorf("Background returned %v, want %v", err, want)
			}
			if procs == 1 && calls.Load() != 0 {
				t.Errorf("more called %d times on one core", calls.Load())
			}
			time.Sleep(time.Millisecond)
			if after.Load() != 0 {
				t.Errorf("more called %d times after Background returned", after.Load())
			}
		})
	}
}

func BenchmarkForEmpty(b *testing.B) {
	for range b.N {
		For(8, func(int) {})
	}
}
