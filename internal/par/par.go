// Package par owns spreading a step's independent tasks over the cores.
//
// For hands tasks out one at a time to whichever goroutine is free: the
// caller itself and up to GOMAXPROCS−1 helpers. A core that is busy with
// other work (a DP-SGD step's noise for the next step, another process on
// a shared machine) simply takes fewer tasks, so the split adapts to what
// the cores are doing instead of waiting for a fixed share. Results must
// not depend on which goroutine ran a task: tasks write disjoint memory,
// and any reduction over tasks is done afterwards in task order.
//
// The helpers are long-lived goroutines, not spawned per call: a DP-SGD
// step of a few milliseconds makes half a dozen calls, and waking a parked
// thread for each (tens of microseconds, often more than a task) left a
// fifth of the second core idle. Between calls a helper does background
// work if the program gave it some (Background: DP-SGD draws the next
// steps' noise there), so the gaps between calls are filled rather than
// spun through; with none left it stays awake for idleSpin, then parks.
// The caller, once its own tasks are done, also does background work while
// it waits for the helpers' last tasks.
package par

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// idleSpin is how long a helper with nothing to do stays awake before
// parking, and waitSpin how long the caller polls for the helpers' last
// tasks before parking: a task is at most a few hundred microseconds, and
// both are short enough that spinning costs little on a busy machine.
const (
	idleSpin = 50 * time.Microsecond
	waitSpin = 200 * time.Microsecond
)

// round is one call's tasks.
type round struct {
	n          int
	f          func(i int)
	next, left atomic.Int64
	done       chan struct{} // closed when the last task has returned
}

// work runs the round's tasks until none is left to take, and reports
// whether it ran any.
func (r *round) work() bool {
	ran := false
	for {
		i := int(r.next.Add(1) - 1)
		if i >= r.n {
			return ran
		}
		r.f(i)
		ran = true
		if r.left.Add(-1) == 0 {
			close(r.done)
		}
	}
}

// wait returns when every task of r has returned: doing background work
// or polling for up to waitSpin (the last tasks are short), then parked.
func (r *round) wait() {
	for start := time.Now(); time.Since(start) < waitSpin; {
		if r.left.Load() == 0 {
			return
		}
		if background() {
			start = time.Now()
		}
	}
	<-r.done
}

var (
	// cur is the round the helpers take tasks from, nil between calls.
	cur atomic.Pointer[round]
	// bg is Background's more, nil outside Background; inBg counts the
	// goroutines that may be calling it.
	bg   atomic.Pointer[func() bool]
	inBg atomic.Int32
	// helpers are the helpers started so far; mu guards starting more.
	helpers atomic.Pointer[[]*helper]
	mu      sync.Mutex
)

// helper is one long-lived goroutine taking tasks from cur.
type helper struct {
	parked atomic.Bool
	wake   chan struct{} // a token: cur has a round (capacity 1)
}

// loop takes tasks while there are any, else does background work, stays
// awake for idleSpin after the last of either, then parks until For or
// Background wakes it.
func (h *helper) loop() {
	for {
		idle := time.Now()
		for time.Since(idle) < idleSpin {
			if r := cur.Load(); (r != nil && r.work()) || background() {
				idle = time.Now()
				continue
			}
			runtime.Gosched()
		}
		h.parked.Store(true)
		// A round published before parked was set finds parked false and
		// sends nothing: look once more before sleeping.
		if r := cur.Load(); r != nil && r.next.Load() < int64(r.n) {
			if !h.parked.CompareAndSwap(true, false) {
				<-h.wake // For claimed the wake-up: take its token
			}
			continue
		}
		<-h.wake
	}
}

// ensure starts helpers until there are k, and returns the first k.
func ensure(k int) []*helper {
	if hs := helpers.Load(); hs != nil && len(*hs) >= k {
		return (*hs)[:k]
	}
	mu.Lock()
	defer mu.Unlock()
	var hs []*helper
	if p := helpers.Load(); p != nil {
		hs = *p
	}
	for len(hs) < k {
		h := &helper{wake: make(chan struct{}, 1)}
		hs = append(hs, h)
		go h.loop()
	}
	helpers.Store(&hs)
	return hs[:k]
}

// For calls f(i) for every i in [0, n) and returns when all calls have
// returned. With one core, or one task, it calls them in order on the
// caller's goroutine. Calls from several goroutines at once, or from
// inside a task, are allowed: the one that finds the helpers taken spreads
// its tasks over goroutines of its own.
func For(n int, f func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		for i := range n {
			f(i)
		}
		return
	}
	r := &round{n: n, f: f, done: make(chan struct{})}
	r.left.Store(int64(n))
	hs := ensure(workers - 1)
	if !cur.CompareAndSwap(nil, r) {
		spawned(r, workers)
		return
	}
	wake(hs)
	r.work()
	r.wait()
	cur.Store(nil)
}

// wake wakes the parked helpers of hs.
func wake(hs []*helper) {
	for _, h := range hs {
		if h.parked.CompareAndSwap(true, false) {
			h.wake <- struct{}{}
		}
	}
}

// Background calls body and returns what it returns; meanwhile the
// helpers (and For's caller while it waits for them) call more whenever
// they have no task, until it reports false (nothing to do for now; it
// is called again after the next For). more must do a short piece of
// work (tens of microseconds: a helper looks for For tasks only between
// calls) and be safe to call from several goroutines at once. Background
// returns once no call of more is under way. With one core, or while
// another Background is running, more is never called: body must get its
// work done without it (more is an optimisation, never a necessity).
func Background(more func() bool, body func() error) error {
	procs := runtime.GOMAXPROCS(0)
	if procs <= 1 || !bg.CompareAndSwap(nil, &more) {
		return body()
	}
	wake(ensure(procs - 1))
	defer func() {
		bg.Store(nil)
		for inBg.Load() != 0 {
			runtime.Gosched()
		}
	}()
	return body()
}

// background calls Background's more, if any, and reports whether it did
// some work.
func background() bool {
	inBg.Add(1)
	defer inBg.Add(-1)
	if f := bg.Load(); f != nil {
		return (*f)()
	}
	return false
}

// spawned runs r on the caller and workers−1 goroutines started for it.
// A goroutine that starts after the caller has taken every task finds
// none and returns at once: nobody waits for it to be scheduled.
func spawned(r *round, workers int) {
	for range workers - 1 {
		go r.work()
	}
	r.work()
	<-r.done
}

// Chunks is For over [0, n) cut into pieces of at most size (≥ 1): f gets
// each piece's bounds.
func Chunks(n, size int, f func(lo, hi int)) {
	For((n+size-1)/size, func(i int) {
		f(i*size, min((i+1)*size, n))
	})
}
