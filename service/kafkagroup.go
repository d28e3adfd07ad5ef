package service

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dpal-dev/dpal/dp/ledger"
)

// Kafka across replicas. Every replica's consumer is a member of the
// learner's consumer group, and Kafka assigns each member some of the
// topic's partitions. The learner lives in one process, its lease
// owner's (replica.go), so a member that does not own it sends each
// poll's records (per partition: offsets and values) to the owner, on
// an internal endpoint that only replicas can call (a peer credential:
// see newPeerCred). The owner ingests a poll under the learner's lock:
// it drops every record whose offset is below the partition's stored
// next offset, and commits the new next offsets in the same transaction
// as the events (fenced by its lease, like every learner commit). The
// member commits the group's offsets to Kafka only after the owner
// acknowledged.
//
// Exactly once, when a partition moves: the stored next offset n of a
// partition only grows, and only with the events below it, in one
// transaction; the owner acknowledges a batch only once the commit
// that covers its records is durable (a batch whose records were seen
// but whose commit is under way waits behind it), and a member commits
// the group's offset c of a partition only after that, so c ≤ n; a
// member reads a partition in order from c or from its own last poll.
// So every record reaches the owner at least once (a member that fails
// to deliver a poll does not commit it, and whoever reads the partition
// next starts at or below it), and a record offered twice — by two
// members racing on a partition during a rebalance, or resent after a
// lost answer or to a new owner — finds n above its offset the second
// time, under the lock that orders the commits, and is dropped. A
// commit by an owner that lost the lease is refused by the fence: its
// sender is answered an error, and resends to the new owner, which
// restored n from the store.

// kafkaBatch is one poll's records of a topic, as a member sends them to
// the learner's owner.
type kafkaBatch struct {
	Topic      string          `json:"topic"`
	Partitions []kafkaPartRecs `json:"partitions"`
}

// kafkaPartRecs are one partition's records, in offset order.
type kafkaPartRecs struct {
	Partition int32    `json:"partition"`
	Offsets   []int64  `json:"offsets"`
	Values    [][]byte `json:"values"`
}

// kafkaAnswer is the owner's acknowledgement of a batch.
type kafkaAnswer struct {
	Accepted int `json:"accepted"`
	Rejected int `json:"rejected"`
	// Skipped counts the records dropped as already ingested.
	Skipped int `json:"skipped"`
}

// errNothingNew ends an ingestPicked whose records were all ingested
// already.
var errNothingNew = errors.New("nothing new")

// batchOf is a poll's records as a batch, with the records to commit to
// the group once it is acknowledged.
func batchOf(topic string, fetches kgo.Fetches) (kafkaBatch, []*kgo.Record) {
	b := kafkaBatch{Topic: topic}
	var recs []*kgo.Record
	fetches.EachPartition(func(p kgo.FetchTopicPartition) {
		if len(p.Records) == 0 {
			return
		}
		pr := kafkaPartRecs{Partition: p.Partition}
		for _, r := range p.Records {
			pr.Offsets = append(pr.Offsets, r.Offset)
			pr.Values = append(pr.Values, r.Value)
			recs = append(recs, r)
		}
		b.Partitions = append(b.Partitions, pr)
	})
	return b, recs
}

// split cuts b into batches of at most limit bytes of values each (a
// record larger than limit alone), keeping each partition's order.
func (b kafkaBatch) split(limit int) []kafkaBatch {
	var out []kafkaBatch
	cur, size := kafkaBatch{Topic: b.Topic}, 0
	for _, p := range b.Partitions {
		pr := kafkaPartRecs{Partition: p.Partition}
		for i, v := range p.Values {
			if size > 0 && size+len(v) > limit {
				if len(pr.Offsets) > 0 {
					cur.Partitions = append(cur.Partitions, pr)
				}
				out = append(out, cur)
				cur, size, pr = kafkaBatch{Topic: b.Topic}, 0, kafkaPartRecs{Partition: p.Partition}
			}
			pr.Offsets, pr.Values = append(pr.Offsets, p.Offsets[i]), append(pr.Values, v)
			size += len(v)
		}
		if len(pr.Offsets) > 0 {
			cur.Partitions = append(cur.Partitions, pr)
		}
	}
	if len(cur.Partitions) > 0 {
		out = append(out, cur)
	}
	return out
}

// ingestKafka ingests the records of b not ingested yet, with the
// partitions' new next offsets in the same transaction; the check and
// the commit are ordered by h.mu (ingestPicked), so a record offered
// twice is ingested once.
func (h *hosted) ingestKafka(b kafkaBatch) (kafkaAnswer, error) {
	var ans kafkaAnswer
	res, err := h.ingestPicked("", nil, func() ([]event, func(kvTx) error, error) {
		if err := h.loadKafkaNext(); err != nil {
			return nil, nil, err
		}
		var evs []event
		next := map[string]int64{}
		for _, p := range b.Partitions {
			k := string(kafkaKey(h.name, b.Topic, p.Partition))
			from := h.kafkaNext[k]
			for i, off := range p.Offsets {
				if off < from {
					ans.Skipped++ // accepted before: by another member, or before a crash
					continue
				}
				for _, ev := range parseEvents(p.Values[i], false, h.dim) {
					ev.line = int(off) // the operator log names the record by offset
					evs = append(evs, ev)
				}
				from = off + 1
				next[k] = from
			}
		}
		switch {
		case len(next) == 0 && h.committing:
			// The records were seen but their commit is still under way:
			// the answer waits behind it (an empty commit queued after
			// it), so that a member never commits the group's offsets
			// past records that a failed commit then loses.
			return nil, nil, nil
		case len(next) == 0:
			return nil, nil, errNothingNew
		}
		// Set before the commit: a failed commit breaks the learner,
		// which is then replaced (adopt) or refuses everything.
		for k, off := range next {
			h.kafkaNext[k] = off
		}
		return evs, func(tx kvTx) error {
			kb := tx.Bucket(bucketKafka)
			for k, off := range next {
				if err := kb.Put([]byte(k), ledger.Uint64Key(uint64(off))); err != nil {
					return err
				}
			}
			return nil
		}, nil
	})
	if err != nil || res == nil {
		return ans, err
	}
	var r ingestResult
	if err := json.Unmarshal(res, &r); err != nil {
		return ans, err
	}
	ans.Accepted, ans.Rejected = r.Accepted, r.Rejected
	return ans, nil
}

// loadKafkaNext reads the learner's stored next offsets (h.mu held), once
// per hosted learner: from then on only its own commits change them
// (another replica's are fenced off while it holds the lease).
func (h *hosted) loadKafkaNext() error {
	if h.kafkaNext != nil {
		return nil
	}
	m := map[string]int64{}
	prefix := h.name + "/"
	err := h.store.db.View(func(tx kvTx) error {
		return tx.Bucket(bucketKafka).ForEach(func(k, v []byte) error {
			if strings.HasPrefix(string(k), prefix) {
				m[string(k)] = int64(ledger.KeyUint64(v))
			}
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("learner %s: reading the Kafka offsets: %w", h.name, err)
	}
	h.kafkaNext = m
	return nil
}

// deliver has the learner's owner ingest b: this replica's learner, or
// with replicas the owner's, retried (to whoever owns the learner by
// then) until it is acknowledged, ctx ends or the replica stops.
func (s *Server) deliver(ctx context.Context, learner, cred string, b kafkaBatch) error {
	if s.rep == nil {
		h, err := s.kafkaLearner(learner)
		if err != nil {
			return err
		}
		_, err = h.ingestKafka(b)
		return err
	}
	wait := 20 * time.Millisecond
	for {
		err := s.deliverOnce(ctx, learner, cred, b)
		var fatal *peerRefusal
		switch {
		case err == nil, ctx.Err() != nil, errors.Is(err, errReplicaStopping), errors.As(err, &fatal):
			return err
		}
		s.log.Warn("kafka: delivering records to the learner's owner failed; retrying", "learner", learner, "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, s.rep.ttl/2)
	}
}

// deliverOnce ingests b here if this replica owns the learner (taking
// its lease if free), else sends it to the owner.
func (s *Server) deliverOnce(ctx context.Context, learner, cred string, b kafkaBatch) error {
	owner, err := s.locate(learner, false)
	if err != nil {
		return err
	}
	if owner != "" {
		return s.sendKafka(ctx, owner, learner, cred, b)
	}
	h, err := s.kafkaLearner(learner)
	if err != nil {
		return err
	}
	ans, err := h.ingestKafka(b)
	if err == nil && ans.Skipped > 0 {
		s.log.Info("kafka: records ingested already were dropped", "learner", learner, "records", ans.Skipped)
	}
	return err
}

// kafkaLearner is the hosted learner name, restored.
func (s *Server) kafkaLearner(name string) (*hosted, error) {
	s.mu.RLock()
	h, ok := s.learners[name]
	s.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("kafka: no learner %q", name)
	}
	if err := h.ensure(); err != nil {
		return nil, fmt.Errorf("kafka: %w", err)
	}
	return h, nil
}

// kafkaPeerPath is the internal endpoint a member sends a batch to; it
// is not in the public API (openapi.json): only replicas can call it.
const kafkaPeerPath = "/internal/kafka/learners/"

// peerRefusal is the owner's refusal of a batch that a retry would not
// change (a learner it does not know, a malformed batch, a refused
// credential): the consumer stops.
type peerRefusal struct {
	status int
	msg    string
}

func (e *peerRefusal) Error() string {
	return fmt.Sprintf("the learner's owner refused the records: %d %s", e.status, e.msg)
}

// sendKafka posts b to the owner at addr, through the forwarding
// transport of replica.go, in pieces within the owner's events body
// limit (every replica is started with the same limits).
func (s *Server) sendKafka(ctx context.Context, addr, learner, cred string, b kafkaBatch) error {
	p, err := s.rep.proxy(addr)
	if err != nil {
		return err
	}
	cl := &http.Client{Transport: p.Transport, Timeout: time.Minute}
	// JSON's base64 makes values 4/3 as long; the rest is small.
	for _, piece := range b.split(int(s.opts.MaxEventsBody / 2)) {
		body, err := json.Marshal(piece)
		if err != nil {
			return err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(addr, "/")+kafkaPeerPath+url.PathEscape(learner), bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+cred)
		req.Header.Set("Content-Type", "application/json")
		resp, err := cl.Do(req)
		if err != nil {
			return err
		}
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusOK:
		case resp.StatusCode >= 500, resp.StatusCode == http.StatusRequestTimeout, resp.StatusCode == http.StatusTooManyRequests:
			return fmt.Errorf("the learner's owner %s answered %d: %s", addr, resp.StatusCode, bytes.TrimSpace(msg))
		default:
			return &peerRefusal{status: resp.StatusCode, msg: string(bytes.TrimSpace(msg))}
		}
	}
	return nil
}

// servePeerKafka is the owner's side of sendKafka: with a peer
// credential, a batch for a learner this replica owns (or can take) is
// ingested; a learner owned elsewhere is answered 503, never forwarded
// again (the sender asks the lease anew and retries).
func (s *Server) servePeerKafka(w http.ResponseWriter, r *http.Request) {
	cred, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || !s.store.isPeerCred(cred) {
		writeError(w, &apiError{status: http.StatusUnauthorized, msg: "missing or unknown replica credential"})
		return
	}
	name := r.PathValue("name")
	if !s.learnerExists(name) {
		writeError(w, &apiError{status: http.StatusNotFound, msg: "no learner " + name})
		return
	}
	body, err := s.readBody(w, r, s.opts.MaxEventsBody)
	if err != nil {
		writeError(w, err)
		return
	}
	var b kafkaBatch
	if err := json.Unmarshal(body, &b); err != nil || !b.valid() {
		writeError(w, &apiError{status: http.StatusBadRequest, msg: "malformed Kafka batch"})
		return
	}
	retry := func(msg string) {
		w.Header().Set("Retry-After", "1")
		writeError(w, &apiError{status: http.StatusServiceUnavailable, msg: msg})
	}
	owner, err := s.locate(name, false)
	switch {
	case err != nil:
		retry("taking the learner's lease failed; retry")
		return
	case owner != "":
		retry("this replica does not own the learner (its owner is " + owner + "); retry")
		return
	}
	h, err := s.kafkaLearner(name)
	if err != nil {
		retry(err.Error())
		return
	}
	ans, err := h.ingestKafka(b)
	if err != nil {
		// Fenced, broken, the store unreachable: the sender retries, to
		// the new owner if the lease moved.
		s.log.Warn("kafka: ingesting a replica's records failed", "learner", name, "err", err)
		retry("ingesting failed; retry")
		return
	}
	if ans.Skipped > 0 {
		s.log.Info("kafka: records ingested already were dropped", "learner", name, "records", ans.Skipped)
	}
	writeJSON(w, http.StatusOK, ans)
}

// valid reports whether every partition has as many values as offsets,
// in increasing order.
func (b kafkaBatch) valid() bool {
	for _, p := range b.Partitions {
		if len(p.Offsets) != len(p.Values) {
			return false
		}
		for i := 1; i < len(p.Offsets); i++ {
			if p.Offsets[i] <= p.Offsets[i-1] {
				return false
			}
		}
	}
	return true
}

// routePeers registers the replica-to-replica endpoints (a shared store
// only).
func (s *Server) routePeers() {
	if s.rep != nil {
		s.mux.HandleFunc("POST "+kafkaPeerPath+"{name}", s.servePeerKafka)
	}
}

// Peer credentials. A member sends records to the owner with a secret
// of its own, made when its consumer starts: 32 random bytes, of which
// the store keeps only the SHA-256 (bucket peers), as it does of tokens,
// so a copy of the database (a backup) holds no usable credential; the
// consumer deletes it when it stops. Only a process that can write the
// store can make one, and such a process can make tokens of any role
// already. A killed consumer leaves its hash behind, which nobody can
// use (the secret died with the process); the next process at its
// address drops it (dropDeadPeers).
var bucketPeers = []byte("peers")

// peerPrefix marks peer credentials (for secret scanners).
const peerPrefix = tokenPrefix + "replica_"

// newPeerCred makes and stores a peer credential for replica id.
func (s *Store) newPeerCred(id string) (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	cred := peerPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	err := s.db.Update(func(tx kvTx) error {
		pb, err := tx.CreateBucketIfNotExists(bucketPeers)
		if err != nil {
			return err
		}
		if err := dropDeadPeers(pb, id); err != nil {
			return err
		}
		return putJSON(pb, []byte(hashToken(cred)), peerRecord{Replica: id, Created: time.Now().UTC()})
	})
	if err != nil {
		return "", fmt.Errorf("store %s: making the replica credential: %w", s.path, err)
	}
	return cred, nil
}

// peerRecord is what the store keeps beside a peer credential's hash.
type peerRecord struct {
	Replica string    `json:"replica"`
	Created time.Time `json:"created"`
}

// dropDeadPeers deletes the credentials of earlier processes at this
// replica's address (a replica id is its advertised URL, '#' and a
// random suffix per process): two processes cannot listen at one
// address, so those are dead ones, killed before they could delete
// their own. Without it, every kill would leave a row behind for good.
func dropDeadPeers(pb kvBucket, id string) error {
	addr, _, ok := strings.Cut(id, "#")
	if !ok {
		return nil
	}
	var dead [][]byte
	c := pb.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		var r peerRecord
		if json.Unmarshal(v, &r) == nil && r.Replica != id && strings.HasPrefix(r.Replica, addr+"#") {
			dead = append(dead, slices.Clone(k))
		}
	}
	for _, k := range dead {
		if err := pb.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// deletePeerCred deletes cred's hash.
func (s *Store) deletePeerCred(cred string) error {
	return s.db.Update(func(tx kvTx) error {
		pb := tx.Bucket(bucketPeers)
		if pb == nil {
			return nil
		}
		return pb.Delete([]byte(hashToken(cred)))
	})
}

// isPeerCred reports whether the store holds cred's hash (false on an
// error).
func (s *Store) isPeerCred(cred string) bool {
	if !strings.HasPrefix(cred, peerPrefix) {
		return false
	}
	found := false
	_ = s.db.View(func(tx kvTx) error {
		pb := tx.Bucket(bucketPeers)
		found = pb != nil && pb.Get([]byte(hashToken(cred))) != nil
		return nil
	})
	return found
}
