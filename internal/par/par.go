// Package par owns spreading a step's independent tasks over the cores.
//
// For hands tasks out one at a time to whichever goroutine is free: the
// caller itself and up to GOMAXPROCS−1 helpers. A core that is busy with
// other work (a DP-SGD step's noise for the next step, another process on
// a shared machine) simply takes fewer tasks, so the split adapts to what
// the cores are doing instead of waiting for a fixed share. Results must
// not depend on which goroutine ran a task: tasks write disjoint memory,
// and any reduction over tasks is done afterwards in task order.
package par

import (
	"runtime"
	"sync/atomic"
)

// For calls f(i) for every i in [0, n) and returns when all calls have
// returned. With one core, or one task, it calls them in order on the
// caller's goroutine.
func For(n int, f func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		for i := range n {
			f(i)
		}
		return
	}
	var next, left atomic.Int64
	left.Store(int64(n))
	done := make(chan struct{})
	work := func() {
		for {
			i := int(next.Add(1) - 1)
			if i >= n {
				return
			}
			f(i)
			if left.Add(-1) == 0 {
				close(done)
			}
		}
	}
	// A helper that starts after the caller has taken every task finds
	// none and returns at once: nobody waits for a helper to be scheduled.
	for range workers - 1 {
		go work()
	}
	work()
	<-done
}

// Chunks is For over [0, n) cut into pieces of at most size (≥ 1): f gets
// each piece's bounds.
func Chunks(n, size int, f func(lo, hi int)) {
	For((n+size-1)/size, func(i int) {
		f(i*size, min((i+1)*size, n))
	})
}
