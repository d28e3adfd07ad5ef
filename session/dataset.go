package session

import (
	"fmt"

	"github.com/dpal-dev/dpal/active/stream"
	"github.com/dpal-dev/dpal/data"
)

// Hooks let a caller watch a dataset run. Every field may be nil.
type Hooks struct {
	// Stop is asked before each event; true ends the run there.
	Stop func() bool
	// Observed is called after each event's selection decision, before
	// its label (if requested) is given.
	Observed func(stream.Decision)
	// Done is called after each event, once its label has been given.
	Done func(stream.Decision)
	// Progress is called with the number of events handled since its
	// last call, every progressEvery events and at the end.
	Progress func(n int)
}

// progressEvery is how often RunDataset reports progress.
const progressEvery = 1024

// RunDataset feeds the rows of set in order to l, answering every label
// request at once with the row's label (the simulated oracle of the
// paper's experiments), then flushes the last FLSW window. A resumed
// learner has seen the first Observed events of order: they are skipped,
// so the caller must have checked (CheckResumedOrder) that order is the
// saved one.
func RunDataset(l *stream.Learner, set *data.Dataset, order []int, h Hooks) error {
	done := min(l.Stats().Observed, len(order))
	n := 0
	report := func() {
		if h.Progress != nil && n > 0 {
			h.Progress(n)
		}
		n = 0
	}
	for _, i := range order[done:] {
		if h.Stop != nil && h.Stop() {
			break
		}
		dec, err := l.Observe(set.X[i])
		if err != nil {
			return fmt.Errorf("%s row %d: %w", set.Name, i, err)
		}
		if h.Observed != nil {
			h.Observed(dec)
		}
		if dec.Request {
			if err := l.Label(dec.ID, set.Y[i]); err != nil {
				return fmt.Errorf("%s row %d: %w", set.Name, i, err)
			}
		}
		if h.Done != nil {
			h.Done(dec)
		}
		if n++; n == progressEvery {
			report()
		}
	}
	report()
	return l.Flush()
}

// Order returns the order of a training stream of n rows: the permutation
// of seed perm (data.Permutation), or the file order when perm is nil.
func Order(n int, perm *uint64) []int {
	if perm != nil {
		return data.Permutation(n, *perm)
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	return order
}
