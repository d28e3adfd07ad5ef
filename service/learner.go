package service

import (
	"bytes"
	"compress/flate"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dpal-dev/dpal/active/stream"
	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/session"
)

// learnerMeta is a learner's stored settings.
type learnerMeta struct {
	Name    string        `json:"name"`
	Config  stream.Config `json:"config"`
	Budget  float64       `json:"budget"`
	Created time.Time     `json:"created"`
	// BudgetReachedAt is the event count when the label budget was used
	// up (0: not yet); later events are not screened and spend nothing.
	BudgetReachedAt int `json:"budget_reached_at,omitempty"`
	// MaxOpen bounds the open label requests (0, in a store written
	// before the bound: defaultMaxOpen); Open counts them (in memory,
	// those being committed too; in the store, those committed); Masked
	// counts the selections masked because the queue was full.
	MaxOpen int `json:"max_open_requests,omitempty"`
	Open    int `json:"open,omitempty"`
	Masked  int `json:"masked,omitempty"`
	// PendingOutside says the checkpoint leaves the open requests out
	// (stream.Learner.SaveStateWithoutPending): they are the <name>/open
	// index's, restored from there.
	PendingOutside bool `json:"pending_outside,omitempty"`
}

// maxOpen is the learner's bound on open requests.
func (m learnerMeta) maxOpen() int {
	if m.MaxOpen > 0 {
		return m.MaxOpen
	}
	return defaultMaxOpen
}

// requestRecord is one label request: the record the annotator sees, its
// claim and its label.
type requestRecord struct {
	ID        uint64    `json:"id"`
	At        time.Time `json:"at,omitzero"` // when the request was made
	X         []float64 `json:"x"`
	Record    string    `json:"record,omitempty"`
	ClaimedBy string    `json:"claimed_by,omitempty"`
	ClaimedAt time.Time `json:"claimed_at,omitzero"`
	Label     float64   `json:"label,omitempty"`
	// LabelledAtUpdate is the update count when the label arrived: the
	// record entered an update iff the count has grown since.
	LabelledAtUpdate int `json:"labelled_at_update,omitempty"`
}

// releaseRecord is one stored release (T_i, w_{T_i}).
type releaseRecord struct {
	Observation int       `json:"observation"`
	Update      int       `json:"update"`
	W           []float64 `json:"w"`
	Time        time.Time `json:"time"`
}

// recordRef locates a client's record id.
type recordRef struct {
	Learner string `json:"learner"`
	Event   uint64 `json:"event"`
}

// claimTTL is how long a claim keeps a request from other annotators.
const claimTTL = 15 * time.Minute

// nameRE is a learner name: it appears in URLs, bucket names and metrics.
var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// hosted is one learner with its ledger; mu serialises everything that
// touches the learner, so a checkpoint is always a consistent state.
type hosted struct {
	// name, dim and created are meta's, fixed: read without a lock.
	name    string
	dim     int
	created time.Time
	store   *Store
	log     *slog.Logger
	met     *metrics

	// loadMu guards the lazy load (ensure): a learner is restored from
	// its checkpoint when first called, not at start; loadErr keeps a
	// failed load's error.
	loadMu  sync.Mutex
	loadErr error

	mu   sync.Mutex
	meta learnerMeta
	l    *stream.Learner
	led  *ledger.Ledger
	// broken is set by an internal error (a failed commit, a learner
	// error other than a bad event or the budget): the in-memory learner
	// may be ahead of the store, so the learner refuses everything until
	// a restart restores it from its checkpoint.
	broken error
	// isBroken is broken != nil, read without h.mu (a replica replaces
	// a broken learner it owns by one restored from the store).
	isBroken atomic.Bool
	commitQueue
	inflightKeys   map[string]bool // idempotency keys being committed
	settled        settledKeys     // idempotency keys whose commit ended
	inflightLabels map[uint64]bool // labels being committed
	// claims holds the claim time of the open requests claimed, for the
	// unclaimed count.
	claims map[uint64]time.Time
	// token is the fencing token of the lease under which this replica
	// holds the learner, and fence the check that every transaction
	// changing it makes (replica.go); nil with a store of one process.
	token int64
	fence func(kvTx) error
	// kafkaNext is the next offset of each Kafka partition fed to the
	// learner (kafkaKey → offset), as committed with its events; nil
	// until the first records (kafkagroup.go), read and changed under mu.
	kafkaNext map[string]int64
}

// setBroken marks the learner broken by err (h.mu held).
func (h *hosted) setBroken(err error) {
	h.broken = err
	h.isBroken.Store(true)
}

// updateWrites is update for an fn that only writes (Put, Delete, and
// Bucket of existing buckets): on PostgreSQL, one round trip (pgKV.runWrites).
func (h *hosted) updateWrites(fn func(kvTx) error) error {
	if p, ok := h.store.db.(*pgKV); ok {
		return p.runWrites(h.fenced(fn))
	}
	return h.update(fn)
}

// update runs fn in a transaction that changes the learner: with
// replicas, only while the learner's lease carries h.token.
func (h *hosted) update(fn func(kvTx) error) error {
	return h.store.db.Update(h.fenced(fn))
}

// fenced is fn after the lease's fence, if any.
func (h *hosted) fenced(fn func(kvTx) error) func(kvTx) error {
	return func(tx kvTx) error { return withFence(h.fence, fn)(tx) }
}

// ensure restores the learner and its ledger if this is its first call
// since the start (a store of many learners starts without restoring
// any). Every path to h.l and h.led goes through it.
func (h *hosted) ensure() error {
	h.loadMu.Lock()
	defer h.loadMu.Unlock()
	if h.l != nil || h.loadErr != nil {
		return h.loadErr
	}
	err := h.openLedger()
	if err == nil {
		h.mu.Lock()
		err = h.restore()
		h.mu.Unlock()
	}
	if err != nil {
		h.loadErr = err
		if h.log != nil {
			h.log.Error("learner could not be restored", "learner", h.name, "err", err)
		}
		return h.loadErr
	}
	if h.met != nil {
		h.met.spent(h.name, h.led)
	}
	return nil
}

// ledger returns the learner's ledger, opening it (not the learner) if
// need be: the officer's ledger and metrics read it without restoring
// the learner.
func (h *hosted) ledger() (*ledger.Ledger, error) {
	h.loadMu.Lock()
	defer h.loadMu.Unlock()
	if err := h.openLedger(); err != nil {
		return nil, err
	}
	if h.store.shared { // other replicas may have charged it
		if err := h.led.Refresh(); err != nil {
			return nil, fmt.Errorf("learner %s: %w", h.name, err)
		}
	}
	return h.led, nil
}

// openLedger opens the ledger once (h.loadMu held).
func (h *hosted) openLedger() error {
	if h.led != nil {
		return nil
	}
	led, err := h.store.openLedger(h.name, account.Budget{})
	if err != nil {
		return fmt.Errorf("learner %s: %w", h.name, err)
	}
	h.mu.Lock()
	h.led = led
	h.mu.Unlock()
	return nil
}

// newHosted returns a hosted learner around meta and its ledger.
func newHosted(s *Store, meta learnerMeta, led *ledger.Ledger) *hosted {
	return &hosted{name: meta.Name, dim: meta.Config.Dim, created: meta.Created, store: s, meta: meta, led: led, inflightKeys: map[string]bool{}, inflightLabels: map[uint64]bool{},
		claims: map[uint64]time.Time{}}
}

// usable refuses calls to a broken learner.
func (h *hosted) usable() error {
	if h.broken != nil {
		return errBroken
	}
	return nil
}

// openLedger opens a learner's ledger in the store: a new one with the
// budget (ε per record, and the δ its updates need), an existing one
// (budget.Epsilon 0) with the budget it stored.
func (s *Store) openLedger(name string, budget account.Budget) (*ledger.Ledger, error) {
	b := budget
	if budget.Epsilon == 0 {
		b = account.Budget{}
	}
	return ledger.Open(s.ledgerStore(name), b)
}

// createLearner creates, charges nothing, and checkpoints a new learner
// (with replicas, under the lease token and fence the caller took).
func (s *Store) createLearner(spec learnerSpec, token int64, fence func(kvTx) error) (*hosted, error) {
	name, cfg, budget := spec.Name, spec.Config, spec.Budget
	err := s.db.Update(func(tx kvTx) error {
		if err := lockTx(tx, "learner/"+name); err != nil {
			return err
		}
		if tx.Bucket(bucketLearners).Get([]byte(name)) != nil {
			return errExists
		}
		if err := dropLearnerBuckets(tx, name); err != nil {
			return err
		}
		return learnerBuckets(tx, name)
	})
	if err != nil {
		return nil, err
	}
	// The budget's δ is the learner's own (stream.Config.LedgerDelta);
	// its ε may exceed the per-record ε (decodeCreate).
	led, err := s.openLedger(name, account.Budget{Epsilon: budget, Delta: cfg.LedgerDelta()})
	if err != nil {
		return nil, err
	}
	l, err := session.Start(cfg, rng.Secure(), led, session.StreamInfo{Mode: session.ModeService})
	if err != nil {
		return nil, err
	}
	h := newHosted(s, learnerMeta{Name: name, Config: cfg, Budget: budget, Created: time.Now().UTC(),
		MaxOpen: spec.MaxOpen, PendingOutside: true}, led)
	h.l, h.token, h.fence = l, token, fence
	var state bytes.Buffer
	if err := l.SaveStateWithoutPending(&state); err != nil {
		return nil, err
	}
	err = h.update(func(tx kvTx) error {
		if err := putJSON(tx.Bucket(bucketLearners), []byte(name), h.meta); err != nil {
			return err
		}
		return tx.Bucket(bucketState).Put([]byte(name), state.Bytes())
	})
	return h, err
}

// learnerMeta reads the settings of learner name; false when the store
// has none.
func (s *Store) learnerMeta(name string) (learnerMeta, bool, error) {
	var m learnerMeta
	var ok bool
	err := s.db.View(func(tx kvTx) error {
		var err error
		ok, err = getJSON(tx.Bucket(bucketLearners), []byte(name), &m)
		return err
	})
	return m, ok, err
}

// loadLearners returns every learner's shell: its settings, restored
// later, on its first call (hosted.ensure).
func (s *Store) loadLearners() (map[string]*hosted, error) {
	out := map[string]*hosted{}
	err := s.db.View(func(tx kvTx) error {
		return tx.Bucket(bucketLearners).ForEach(func(k, v []byte) error {
			var m learnerMeta
			if err := jsonUnmarshal(v, &m); err != nil {
				return fmt.Errorf("learner %s: %w", k, err)
			}
			out[m.Name] = newHosted(s, m, nil)
			return nil
		})
	})
	return out, err
}

// restore replaces the in-memory learner by its last checkpoint, with
// fresh secure randomness, and its open requests by the <name>/open
// index. Restore re-makes any charge the checkpoint implies that the
// ledger lacks, so the spend never decreases. A checkpoint written before
// the index (its pending requests inside) is restored as it is and the
// index built from it, once.
func (h *hosted) restore() error {
	var state []byte
	var pend []stream.PendingEvent
	claims := map[uint64]time.Time{}
	err := h.store.db.View(func(tx kvTx) error {
		state = bytes.Clone(tx.Bucket(bucketState).Get([]byte(h.name)))
		var m learnerMeta
		if _, err := getJSON(tx.Bucket(bucketLearners), []byte(h.name), &m); err != nil {
			return err
		}
		h.meta = m
		if !m.PendingOutside {
			return nil
		}
		rq := bucket(tx, m.Name, subRequests)
		return bucket(tx, m.Name, subOpen).ForEach(func(k, _ []byte) error {
			var r requestRecord
			ok, err := getJSON(rq, k, &r)
			if err != nil || !ok {
				return cmpOr(err, fmt.Errorf("open request %d has no record", ledger.KeyUint64(k)))
			}
			pend = append(pend, stream.PendingEvent{ID: r.ID, X: r.X})
			if r.ClaimedBy != "" {
				claims[r.ID] = r.ClaimedAt
			}
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("learner %s: %w", h.name, err)
	}
	if state == nil {
		return fmt.Errorf("learner %s: no checkpoint", h.name)
	}
	cp := session.Checkpoint{State: state, Outside: h.meta.PendingOutside, Pending: pend}
	l, err := session.Resume(cp, rng.Secure(), h.led)
	if err != nil {
		return fmt.Errorf("learner %s: %w", h.name, err)
	}
	h.l, h.claims = l, claims
	if !h.meta.PendingOutside {
		return h.indexOpen()
	}
	return nil
}

// indexOpen moves the open requests of a checkpoint written before the
// <name>/open index into it, and writes the checkpoint without them.
func (h *hosted) indexOpen() error {
	ids := h.l.Pending()
	meta := h.meta
	meta.PendingOutside, meta.Open = true, len(ids)
	var state bytes.Buffer
	if err := h.l.SaveStateWithoutPending(&state); err != nil {
		return err
	}
	now := time.Now().UTC()
	err := h.update(func(tx kvTx) error {
		if err := learnerBuckets(tx, meta.Name); err != nil {
			return err
		}
		rq, open := bucket(tx, meta.Name, subRequests), bucket(tx, meta.Name, subOpen)
		for _, id := range ids {
			var r requestRecord
			if ok, err := getJSON(rq, ledger.Uint64Key(id), &r); err != nil || !ok {
				return cmpOr(err, fmt.Errorf("open request %d has no record", id))
			}
			at := r.At
			if at.IsZero() {
				at = now
			}
			if r.ClaimedBy != "" {
				h.claims[id] = r.ClaimedAt
			}
			if err := open.Put(ledger.Uint64Key(id), ledger.Uint64Key(uint64(at.UnixNano()))); err != nil {
				return err
			}
		}
		if err := putJSON(tx.Bucket(bucketLearners), []byte(meta.Name), meta); err != nil {
			return err
		}
		return tx.Bucket(bucketState).Put([]byte(meta.Name), state.Bytes())
	})
	if err != nil {
		return fmt.Errorf("learner %s: indexing the open requests: %w", meta.Name, err)
	}
	meta.Open = len(ids)
	h.meta = meta
	return nil
}

// event is one parsed input line.
type event struct {
	line   int
	x      []float64
	record string // the client's record id, if any
	field  string // set when the line was rejected: the field at fault
}

// lineResult is the public answer for one input line: acceptance only.
type lineResult struct {
	Line   int    `json:"line"`
	Status string `json:"status"`          // accepted or rejected
	Event  uint64 `json:"event,omitempty"` // the event id of an accepted line
	Error  string `json:"error,omitempty"` // session.RejectedClass
	Field  string `json:"field,omitempty"` // the field at fault, never its value
}

// ingestResult is the answer to an ingest call.
type ingestResult struct {
	Accepted int          `json:"accepted"`
	Rejected int          `json:"rejected"`
	Results  []lineResult `json:"results"`
}

// ingest observes the events in order and commits them, with extra's
// writes (if any) in the same transaction; a replayed idempotency key
// returns the stored answer and observes nothing, unless it came with a
// body whose sum differs from the stored one (errKeyReused). If the
// budget runs out mid-batch, the lines before are accepted and the rest
// rejected as "budget-exhausted".
func (h *hosted) ingest(evs []event, key string, sum []byte, extra func(tx kvTx) error) ([]byte, error) {
	return h.ingestPicked(key, sum, func() ([]event, func(kvTx) error, error) { return evs, extra, nil })
}

// ingestPicked is ingest of the events and extra writes pick returns,
// called under h.mu after the idempotency key's checks: a caller that
// decides which events are new by state the learner's commits change
// (ingestKafka's offsets) decides under the lock that orders those
// commits. pick's errNothingNew ends the call with a nil answer.
func (h *hosted) ingestPicked(key string, sum []byte, pick func() ([]event, func(kvTx) error, error)) ([]byte, error) {
	// The stored answer is read before h.mu is taken, so that the store
	// read (a round trip to PostgreSQL) does not hold up the learner's
	// other calls; a call with the same key that committed meanwhile is
	// seen in h.settled, and the key is read again.
	var prevSum, prev []byte
	var since uint64
	if key != "" {
		since = h.settled.seq.Load()
		var err error
		if prevSum, prev, err = h.storedAnswer(key); err != nil {
			return nil, err
		}
	}
	h.mu.Lock()
	if err := h.usable(); err != nil {
		h.mu.Unlock()
		return nil, err
	}
	if key != "" {
		if prev == nil && h.settled.since(key, since) {
			var err error
			if prevSum, prev, err = h.storedAnswer(key); err != nil {
				h.mu.Unlock()
				return nil, err
			}
		}
		if prev != nil {
			h.mu.Unlock()
			if prevSum != nil && !bytes.Equal(prevSum, sum) {
				return nil, errKeyReused
			}
			return prev, nil
		}
		if h.inflightKeys[key] {
			h.mu.Unlock()
			return nil, errInFlight
		}
	}
	evs, extra, err := pick()
	if err != nil {
		h.mu.Unlock()
		if errors.Is(err, errNothingNew) {
			return nil, nil
		}
		return nil, err
	}
	res, reqs, refs, masked, err := h.observe(evs)
	if err != nil {
		h.setBroken(err)
		h.mu.Unlock()
		return nil, err
	}
	answer, err := jsonBytes(res)
	var stored []byte
	if err == nil && key != "" {
		stored, err = idemValue(sum, answer)
	}
	if err != nil {
		h.setBroken(err) // the learner observed what will not be committed
		h.mu.Unlock()
		return nil, err
	}
	if key != "" {
		h.inflightKeys[key] = true
	}
	rels, err := h.enqueue(func(tx kvTx) error {
		rq, open := bucket(tx, h.name, subRequests), bucket(tx, h.name, subOpen)
		for _, r := range reqs {
			if err := putJSON(rq, ledger.Uint64Key(r.ID), r); err != nil {
				return err
			}
			if err := open.Put(ledger.Uint64Key(r.ID), ledger.Uint64Key(uint64(r.At.UnixNano()))); err != nil {
				return err
			}
		}
		rb := tx.Bucket(bucketRecords)
		for id, ref := range refs {
			if err := putJSON(rb, []byte(id), ref); err != nil {
				return err
			}
		}
		if key != "" {
			if err := bucket(tx, h.name, subIdem).Put([]byte(key), stored); err != nil {
				return err
			}
		}
		if extra != nil {
			return extra(tx)
		}
		return nil
	}, func() {
		if key != "" {
			delete(h.inflightKeys, key)
			h.settled.add(key)
		}
	})
	if err != nil {
		return nil, err
	}
	h.met.ingested(h.name, res.Accepted, res.Rejected, len(reqs), masked, rels)
	h.met.spent(h.name, h.led)
	return answer, nil
}

// observe feeds the events to the learner (h.mu held) and returns the
// answer, the new requests, the client ids and the selections masked
// because the queue was full. Its error is an internal one: the learner
// is then unusable until a restart.
//
// The bound: a selection made while the learner already holds
// meta.maxOpen() open requests is declined at once (stream.Learner.Decline)
// and not published. The draw was made and is charged as any other
// (ε_s, GroupObserved); whether it is masked depends only on the count of
// open requests, a function of the requests already published and of when
// labels arrived, so masking is post-processing (docs/serve.md).
func (h *hosted) observe(evs []event) (ingestResult, []requestRecord, map[string]recordRef, int, error) {
	res := ingestResult{Results: make([]lineResult, len(evs))}
	var reqs []requestRecord
	refs := map[string]recordRef{}
	exhausted := false
	masked := 0
	limit := h.meta.maxOpen()
	now := time.Now().UTC()
	for i, ev := range evs {
		lr := &res.Results[i]
		lr.Line = ev.line
		if ev.field == "" && !exhausted {
			dec, rejected, err := session.Observe(h.l, ev.x)
			switch {
			case rejected:
				ev.field = "x"
			case errors.Is(err, account.ErrBudgetExceeded):
				// Observe left the learner unchanged: what came before stands.
				exhausted = true
			case err != nil:
				return res, nil, nil, 0, fmt.Errorf("learner %s line %d: %w", h.name, ev.line, err)
			default:
				lr.Status, lr.Event = "accepted", dec.ID
				res.Accepted++
				if ev.record != "" {
					refs[ev.record] = recordRef{Learner: h.name, Event: dec.ID}
				}
				if !dec.Request {
					continue
				}
				if h.meta.BudgetReachedAt == 0 && h.l.Stats().BudgetReached {
					h.meta.BudgetReachedAt = int(dec.ID)
				}
				if h.l.Stats().Pending > limit {
					if err := h.l.Decline(dec.ID); err != nil {
						return res, nil, nil, 0, fmt.Errorf("learner %s line %d: %w", h.name, ev.line, err)
					}
					masked++
					h.meta.Masked++
					continue
				}
				reqs = append(reqs, requestRecord{ID: dec.ID, At: now, X: ev.x, Record: ev.record})
				h.meta.Open++
				continue
			}
		}
		res.Rejected++
		if exhausted {
			lr.Status, lr.Error = "rejected", "budget-exhausted"
			continue
		}
		lr.Status, lr.Error, lr.Field = "rejected", session.RejectedClass, ev.field
		h.log.Warn("event rejected", "learner", h.name, "line", ev.line, "field", ev.field)
	}
	return res, reqs, refs, masked, nil
}

// storedAnswer returns the body sum and the answer stored under an
// idempotency key (nil, nil: none; a nil sum: stored before sums were).
func (h *hosted) storedAnswer(key string) ([]byte, []byte, error) {
	v, err := readOne(h.store.db, []byte(h.name+subIdem), []byte(key))
	if err != nil {
		return nil, nil, fmt.Errorf("learner %s: reading an idempotency key: %w", h.name, err)
	}
	if len(v) <= sha256.Size || v[0] != idemDeflated {
		return nil, v, nil
	}
	answer, err := io.ReadAll(flate.NewReader(bytes.NewReader(v[1+sha256.Size:])))
	if err != nil {
		return nil, nil, fmt.Errorf("learner %s: stored answer of an idempotency key: %w", h.name, err)
	}
	return v[1 : 1+sha256.Size], answer, nil
}

// settledKeys remembers the last idempotency keys whose commit ended
// (add and since with hosted.mu held; seq read without it), numbered
// from 1 by seq. The ring is made on the first add: a learner that is
// not called costs nothing.
type settledKeys struct {
	seq  atomic.Uint64
	ring *[settledRing]string
}

// settledRing bounds the keys remembered: a call that waited for more
// commits than this between its read and hosted.mu reads again.
const settledRing = 1024

func (k *settledKeys) add(key string) {
	if k.ring == nil {
		k.ring = new([settledRing]string)
	}
	n := k.seq.Load() + 1
	k.ring[n%settledRing] = key
	k.seq.Store(n)
}

// since reports whether key may have settled after number from: it did,
// or too many keys settled since to tell.
func (k *settledKeys) since(key string, from uint64) bool {
	n := k.seq.Load()
	if n-from >= settledRing {
		return true
	}
	for i := from + 1; i <= n; i++ {
		if k.ring[i%settledRing] == key {
			return true
		}
	}
	return false
}

// idemDeflated marks a stored idempotency value that holds its body's
// sum and then the answer, deflated (an answer of 1000 lines is 45 KB of
// JSON, about 2 KB deflated); a bare answer starts with '{'.
const idemDeflated = 2

// idemValue is what an idempotency key stores: the body's sum, if any,
// then the answer.
func idemValue(sum, answer []byte) ([]byte, error) {
	if sum == nil {
		return answer, nil
	}
	b := bytes.NewBuffer(make([]byte, 0, 1+len(sum)+len(answer)/8+64))
	b.WriteByte(idemDeflated)
	b.Write(sum)
	w := deflaters.Get().(*flate.Writer)
	defer deflaters.Put(w)
	w.Reset(b)
	_, err := w.Write(answer)
	if err == nil {
		err = w.Close()
	}
	return b.Bytes(), err
}

// deflaters reuses flate writers: a new one allocates about 1 MB, more
// than a single event's whole request costs otherwise.
var deflaters = sync.Pool{New: func() any {
	w, err := flate.NewWriter(nil, flate.BestSpeed)
	if err != nil {
		panic(err) // BestSpeed is a valid level
	}
	return w
}}

// bodySum is the SHA-256 of an events body and how it was read.
func bodySum(body []byte, oneJSON bool) []byte {
	h := sha256.New()
	if oneJSON {
		h.Write([]byte("json\n"))
	} else {
		h.Write([]byte("lines\n"))
	}
	h.Write(body)
	return h.Sum(nil)
}

// request reads one committed request record.
func (h *hosted) request(id uint64) (requestRecord, error) {
	var r requestRecord
	var ok bool
	err := h.store.db.View(func(tx kvTx) error {
		var err error
		ok, err = getJSON(bucket(tx, h.name, subRequests), ledger.Uint64Key(id), &r)
		return err
	})
	if err == nil && !ok {
		err = errNoRequest
	}
	return r, err
}

// claim reserves request id for the annotator who and returns its record.
// It holds h.mu through its own transaction; a label being committed is
// in inflightLabels, so a claim never overwrites it.
func (h *hosted) claim(id uint64, who string) (requestRecord, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r, err := h.labelable(id)
	if err != nil {
		return r, err
	}
	if err := claimable(r, who); err != nil {
		return r, err
	}
	r.ClaimedBy, r.ClaimedAt = who, time.Now().UTC()
	err = h.update(func(tx kvTx) error {
		return putJSON(bucket(tx, h.name, subRequests), ledger.Uint64Key(id), r)
	})
	if err == nil {
		h.claims[id] = r.ClaimedAt
	}
	return r, err
}

// claimable refuses a labelled request or one another annotator claimed
// less than claimTTL ago.
func claimable(r requestRecord, who string) error {
	switch {
	case r.Label != 0:
		return errLabelled
	case r.ClaimedBy != "" && r.ClaimedBy != who && time.Since(r.ClaimedAt) < claimTTL:
		return errClaimed
	}
	return nil
}

// label gives request id the label y and commits it with any release the
// label triggers. The caller must hold a live claim on it; an admin
// (anyClaim) may also label a request nobody holds.
func (h *hosted) label(id uint64, y float64, who string, anyClaim bool) error {
	h.mu.Lock()
	r, err := h.labelable(id)
	if err == nil {
		err = mayLabel(r, who, anyClaim)
	}
	if err != nil {
		h.mu.Unlock()
		return err
	}
	r.LabelledAtUpdate = h.l.Stats().Updates
	if err := h.l.Label(id, y); err != nil {
		h.setBroken(err)
		h.mu.Unlock()
		return err
	}
	r.Label, r.ClaimedBy = y, who
	h.inflightLabels[id] = true
	h.meta.Open--
	rels, err := h.enqueue(func(tx kvTx) error {
		if err := bucket(tx, h.name, subOpen).Delete(ledger.Uint64Key(id)); err != nil {
			return err
		}
		return putJSON(bucket(tx, h.name, subRequests), ledger.Uint64Key(id), r)
	}, func() { delete(h.inflightLabels, id); delete(h.claims, id) })
	if err != nil {
		return err
	}
	h.met.labelled(h.name, rels)
	h.met.spent(h.name, h.led)
	return nil
}

// mayLabel admits the label of r by who: who holds a live claim on it,
// or (anyClaim, an admin) nobody else does.
func mayLabel(r requestRecord, who string, anyClaim bool) error {
	live := r.ClaimedBy != "" && time.Since(r.ClaimedAt) < claimTTL
	switch {
	case r.Label != 0:
		return errLabelled
	case live && r.ClaimedBy == who:
		return nil
	case live:
		return errClaimed
	case anyClaim:
		return nil
	}
	return errNotClaimed
}

// labelable reads request id if it is open (h.mu held).
func (h *hosted) labelable(id uint64) (requestRecord, error) {
	if err := h.usable(); err != nil {
		return requestRecord{}, err
	}
	if h.inflightLabels[id] {
		return requestRecord{}, errLabelled
	}
	return h.request(id)
}

// pendingView is one open request as an annotator lists it: no record.
type pendingView struct {
	ID      uint64 `json:"id"`
	Claimed bool   `json:"claimed"`
}

// pending lists up to limit open requests after id after, from the
// <name>/open index: its cost is the page's, not the queue's.
func (h *hosted) pending(after uint64, limit int) ([]pendingView, error) {
	out := []pendingView{}
	err := h.store.db.View(func(tx kvTx) error {
		rq := bucket(tx, h.name, subRequests)
		c := bucket(tx, h.name, subOpen).Cursor()
		for k, _ := c.Seek(ledger.Uint64Key(after + 1)); k != nil && len(out) < limit; k, _ = c.Next() {
			var r requestRecord
			ok, err := getJSON(rq, k, &r)
			if err != nil || !ok {
				return cmpOr(err, fmt.Errorf("open request %d has no record", ledger.KeyUint64(k)))
			}
			out = append(out, pendingView{ID: r.ID, Claimed: r.ClaimedBy != "" && time.Since(r.ClaimedAt) < claimTTL})
		}
		return nil
	})
	return out, err
}

// queueState reports the learner's queue of open requests: its size, bound,
// the age of its oldest request, the selections masked, and how many
// open requests no live claim holds.
func (h *hosted) queueState() (queueView, int, error) {
	h.mu.Lock()
	q := queueView{Open: h.meta.Open, Max: h.meta.maxOpen(), Masked: h.meta.Masked}
	claimed := 0
	for id, at := range h.claims {
		if time.Since(at) < claimTTL {
			claimed++
		} else {
			delete(h.claims, id)
		}
	}
	h.mu.Unlock()
	err := h.store.db.View(func(tx kvTx) error {
		if k, v := bucket(tx, h.name, subOpen).Cursor().First(); k != nil {
			q.OldestAgeSeconds = max(0, time.Since(time.Unix(0, int64(ledger.KeyUint64(v)))).Seconds())
		}
		return nil
	})
	return q, max(0, q.Open-claimed), err
}

// releases lists up to limit stored releases after update after.
func (h *hosted) releases(after uint64, limit int) ([]releaseRecord, error) {
	out := []releaseRecord{}
	err := h.store.db.View(func(tx kvTx) error {
		c := bucket(tx, h.name, subReleases).Cursor()
		for k, v := c.Seek(ledger.Uint64Key(after + 1)); k != nil && len(out) < limit; k, v = c.Next() {
			var r releaseRecord
			if err := jsonUnmarshal(v, &r); err != nil {
				return err
			}
			out = append(out, r)
		}
		return nil
	})
	return out, err
}

// modelView is the currently published model.
type modelView struct {
	Learner     string    `json:"learner"`
	Update      int       `json:"update"`
	Observation int       `json:"observation"`
	W           []float64 `json:"w"`
}

func (h *hosted) model() (modelView, error) {
	h.mu.Lock()
	w, upd := h.l.Weights(), h.l.Stats().Updates
	h.mu.Unlock()
	m := modelView{Learner: h.name, Update: upd, W: w}
	if upd > 0 {
		rels, err := h.releases(uint64(upd-1), 1)
		if err != nil {
			return m, err
		}
		if len(rels) == 1 {
			m.Observation = rels[0].Observation
		}
	}
	return m, nil
}

// budgetView is a learner's spend against its budget.
type budgetView struct {
	Learner string                `json:"learner"`
	Budget  account.Budget        `json:"budget"`
	Groups  []ledger.GroupSummary `json:"groups"`
	Stats   stream.Stats          `json:"stats"`
	Queue   queueView             `json:"queue"`
	// Series is each group's ε per record after each of its ledger
	// entries, composed as the ledger composes them: the officer's chart.
	Series map[string][]spendPoint `json:"series"`
}

// spendPoint is a group's ε per record after one ledger entry.
type spendPoint struct {
	Time    time.Time `json:"time"`
	Epsilon float64   `json:"epsilon"`
}

func (h *hosted) budget() (budgetView, error) {
	h.mu.Lock()
	st := h.l.Stats()
	h.mu.Unlock()
	q, _, err := h.queueState()
	if err != nil {
		return budgetView{}, err
	}
	series, err := spendSeries(h.led)
	return budgetView{Learner: h.name, Budget: h.led.Budget(), Groups: h.led.Summary(), Stats: st, Queue: q, Series: series}, err
}

// spendSeries replays led's entries into a ledger in memory and reads
// each group's composed ε after every entry that touched it (summing the
// entries' ε would miss zCDP and Rényi parts).
func spendSeries(led *ledger.Ledger) (map[string][]spendPoint, error) {
	entries, err := led.Entries()
	if err != nil {
		return nil, err
	}
	meta := led.Meta()
	replay, err := ledger.New(meta.Budget, ledger.WithConversion(meta.Conversion))
	if err != nil {
		return nil, err
	}
	out := map[string][]spendPoint{}
	for _, e := range entries {
		if _, err := replay.Record(ledger.Charge{Groups: e.Groups, Loss: e.Loss, Once: e.Once, Note: e.Note}); err != nil {
			return nil, fmt.Errorf("replaying ledger entry %d: %w", e.Seq, err)
		}
		for _, g := range e.Groups {
			eps, _ := replay.Spent(g)
			out[g] = append(out[g], spendPoint{Time: e.Time, Epsilon: eps})
		}
	}
	return out, nil
}

// recordEpsilonView is what one record has spent.
type recordEpsilonView struct {
	Record  string  `json:"record"`
	Learner string  `json:"learner"`
	Event   uint64  `json:"event"`
	Group   string  `json:"group,omitempty"` // the ledger group the record belongs to
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
}

// recordEpsilon says what event id has spent: ε_s if it was screened
// (GroupObserved), ε_s + ε_g if its label entered an update
// (GroupBatched), as the ledger holds them; 0 after the label budget.
func (h *hosted) recordEpsilon(record string, id uint64) (recordEpsilonView, error) {
	v := recordEpsilonView{Record: record, Learner: h.name, Event: id}
	h.mu.Lock()
	st, reached := h.l.Stats(), h.meta.BudgetReachedAt
	h.mu.Unlock()
	if id == 0 || id > uint64(st.Observed) {
		return v, errNoRecord
	}
	r, err := h.request(id)
	switch {
	case err == nil && r.Label != 0 && st.Updates > r.LabelledAtUpdate:
		v.Group = stream.GroupBatched
	case err != nil && !errors.Is(err, errNoRequest):
		return v, err
	case reached == 0 || id <= uint64(reached):
		v.Group = stream.GroupObserved
	}
	if v.Group != "" {
		v.Epsilon, v.Delta = h.led.Spent(v.Group)
	}
	return v, nil
}

// lookupRecord finds a client's record id, or reads a default id
// "learner:event" (the name of every event without a client id).
func (s *Store) lookupRecord(id string) (recordRef, error) {
	if name, ev, ok := strings.Cut(id, ":"); ok {
		n, err := strconv.ParseUint(ev, 10, 64)
		if err != nil || !nameRE.MatchString(name) {
			return recordRef{}, errNoRecord
		}
		return recordRef{Learner: name, Event: n}, nil
	}
	var ref recordRef
	var ok bool
	err := s.db.View(func(tx kvTx) error {
		var err error
		ok, err = getJSON(tx.Bucket(bucketRecords), []byte(id), &ref)
		return err
	})
	if err == nil && !ok {
		err = errNoRecord
	}
	return ref, err
}

// queueView is a learner's queue of open label requests.
type queueView struct {
	Open             int     `json:"open"`
	Max              int     `json:"max"`
	OldestAgeSeconds float64 `json:"oldest_age_seconds"`
	Masked           int     `json:"masked"`
}
