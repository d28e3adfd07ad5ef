package service

import (
	"bytes"
	"time"

	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/session"
)

// commitQueue groups the commits of one learner. A call that changed the
// learner (under hosted.mu) queues its writes; the first caller with no
// commit running becomes the committer and writes every queued call, the
// releases made so far and one checkpoint in one transaction (one fsync
// for many callers), without holding hosted.mu while it waits for the
// disk. Callers that queued meanwhile are answered by the next group.
type commitQueue struct {
	queue      []*commitJob
	committing bool
}

type commitJob struct {
	write  func(tx kvTx) error // the call's own writes
	settle func()              // run under hosted.mu once the group is done
	done   chan commitDone
}

type commitDone struct {
	releases int // releases the group stored
	err      error
}

// enqueue commits write with the learner's state as it stands (h.mu held
// on entry, released on return) and returns once it is durable, with the
// number of releases stored alongside. A failed commit marks the learner
// broken: the state in memory is ahead of the store.
func (h *hosted) enqueue(write func(tx kvTx) error, settle func()) (int, error) {
	j := &commitJob{write: write, settle: settle, done: make(chan commitDone, 1)}
	h.queue = append(h.queue, j)
	if h.committing {
		h.mu.Unlock()
		d := <-j.done
		return d.releases, d.err
	}
	h.committing = true
	for len(h.queue) > 0 {
		group := h.queue
		h.queue = nil
		d := h.commitGroup(group)
		if d.err != nil && h.broken == nil {
			h.setBroken(d.err)
			h.log.Error("commit failed; the learner stops until a restart", "learner", h.name, "err", d.err)
		}
		for _, g := range group {
			g.settle()
			g.done <- d
			d.releases = 0 // counted once, with the group's first call
		}
	}
	h.committing = false
	h.mu.Unlock()
	d := <-j.done
	return d.releases, d.err
}

// commitGroup snapshots the learner under h.mu, then writes the group
// without it. The ledger charges that paid for the releases were
// committed (fsync'd) before their noise was drawn.
func (h *hosted) commitGroup(group []*commitJob) commitDone {
	if h.broken != nil {
		return commitDone{err: errBroken}
	}
	rels := session.TakeReleases(h.l)
	var state bytes.Buffer
	// The open requests are the <name>/open index's (meta.PendingOutside):
	// the checkpoint's size does not grow with the queue.
	if err := h.l.SaveStateWithoutPending(&state); err != nil {
		return commitDone{err: err}
	}
	meta := h.meta
	h.mu.Unlock()
	// The group only writes (enqueue's callers queue writes alone).
	err := h.updateWrites(func(tx kvTx) error {
		rb := bucket(tx, meta.Name, subReleases)
		now := time.Now().UTC()
		for _, r := range rels {
			if err := putJSON(rb, ledger.Uint64Key(uint64(r.Update)), releaseRecord{r.Observation, r.Update, r.W, now}); err != nil {
				return err
			}
		}
		for _, g := range group {
			if err := g.write(tx); err != nil {
				return err
			}
		}
		if err := putJSON(tx.Bucket(bucketLearners), []byte(meta.Name), meta); err != nil {
			return err
		}
		return tx.Bucket(bucketState).Put([]byte(meta.Name), state.Bytes())
	})
	h.mu.Lock()
	return commitDone{releases: len(rels), err: err}
}
