package service

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/dpal-dev/dpal/dp/ledger"
)

// KafkaConfig makes a learner consume a Kafka topic (franz-go): each
// record's value is one event line, or several lines (the events body's
// format).
type KafkaConfig struct {
	Brokers []string `json:"brokers"`
	Topic   string   `json:"topic"`
	// Learner is the learner the events feed; it must exist.
	Learner string `json:"learner"`
	// Group is the consumer group (default "dpal-serve-" + Learner).
	Group string `json:"group,omitempty"`
	// TLS connects to the brokers over TLS (1.2 at least), verifying them
	// against the system's roots, or against the PEM certificates of
	// TLSCA when set (which implies TLS).
	TLS   bool   `json:"tls,omitempty"`
	TLSCA string `json:"tls_ca,omitempty"`
	// SASLMechanism (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512) authenticates
	// as SASLUser with SASLPassword; PLAIN sends the password as is, so
	// use it over TLS only.
	SASLMechanism string `json:"sasl_mechanism,omitempty"`
	SASLUser      string `json:"sasl_user,omitempty"`
	SASLPassword  string `json:"sasl_password,omitempty"`
}

// ConsumeKafka feeds kc.Topic to its learner until ctx ends. Exactly once:
// the next offset of every partition is committed to the store in the
// same transaction as the events it covers, and records below it are
// skipped, so a crash between that commit and the group's offset commit
// replays nothing; the group's offsets (where a restarted consumer starts
// reading) are committed to Kafka only after the events are durably
// accepted, so a crash loses nothing.
func (s *Server) ConsumeKafka(ctx context.Context, kc KafkaConfig) error {
	if s.rep != nil && s.learnerExists(kc.Learner) {
		// With replicas, the consumer runs where the learner is owned;
		// if the lease is lost, its commits are refused and it stops.
		tok, owner, err := s.rep.acquire(kc.Learner)
		if err != nil {
			return fmt.Errorf("kafka: learner %s: taking its lease: %w", kc.Learner, err)
		}
		if owner != "" {
			return fmt.Errorf("kafka: learner %s is owned by the replica at %s: %w", kc.Learner, owner, errNotOwner)
		}
		s.adopt(kc.Learner, tok)
	}
	s.mu.RLock()
	h, ok := s.learners[kc.Learner]
	s.mu.RUnlock()
	if !ok {
		return fmt.Errorf("kafka: no learner %q", kc.Learner)
	}
	if err := h.ensure(); err != nil {
		return fmt.Errorf("kafka: %w", err)
	}
	if kc.Group == "" {
		kc.Group = "dpal-serve-" + kc.Learner
	}
	conn, err := kc.connOpts()
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(append(conn, kgo.ConsumerGroup(kc.Group), kgo.ConsumeTopics(kc.Topic),
		kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(), kgo.FetchMaxWait(200*time.Millisecond),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		return fmt.Errorf("kafka: %w", err)
	}
	defer cl.CloseAllowingRebalance() // Close would wait for a rebalance that BlockRebalanceOnPoll holds
	s.log.Info("kafka: consuming", "topic", kc.Topic, "learner", kc.Learner, "group", kc.Group,
		"tls", kc.TLS || kc.TLSCA != "", "sasl", kc.SASLMechanism)
	for {
		fetches := cl.PollRecords(ctx, 10_000)
		if ctx.Err() != nil {
			return nil
		}
		fetches.EachError(func(topic string, p int32, err error) {
			s.log.Warn("kafka: fetch error", "topic", topic, "partition", p, "err", err)
		})
		if err := s.consumeFetches(ctx, cl, h, kc, fetches); err != nil {
			return err
		}
		cl.AllowRebalance()
	}
}

// errNotOwner is ConsumeKafka's error where another replica owns the
// learner.
var errNotOwner = errors.New("another replica owns the learner")

// RunKafka feeds kc.Topic to its learner until ctx ends: ConsumeKafka,
// and with replicas on a shared store a consumer that follows the
// learner's lease. Every replica started with the same Kafka settings
// runs RunKafka; the one that owns the learner consumes (the learner is
// one process's, so its records go there), the others wait and take over
// when the owner's lease expires. A consumer whose replica loses the
// lease is stopped (its late commits are refused by the fencing token,
// before its group offsets are committed), and the new owner's consumer
// resumes from the offsets stored with the events: exactly once across
// the move, as across a crash.
func (s *Server) RunKafka(ctx context.Context, kc KafkaConfig) error {
	if s.rep == nil {
		return s.ConsumeKafka(ctx, kc)
	}
	wait := s.rep.ttl / 3
	for {
		cctx, cancel := context.WithCancel(ctx)
		go s.rep.watch(cctx, kc.Learner, cancel)
		err := s.ConsumeKafka(cctx, kc)
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil
		case err == nil, errors.Is(err, errNotOwner), errors.Is(err, errFenced), errors.Is(err, errBroken), errors.Is(err, errReplicaStopping):
			// The lease moved (or was never here): wait to own it.
		case s.learnerExists(kc.Learner):
			s.log.Warn("kafka: consumer stopped; it restarts when this replica owns the learner", "learner", kc.Learner, "err", err)
		default:
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// consumeFetches ingests one poll's new records and then commits the
// group's offsets.
func (s *Server) consumeFetches(ctx context.Context, cl *kgo.Client, h *hosted, kc KafkaConfig, fetches kgo.Fetches) error {
	var evs []event
	next := map[int32]int64{}
	var recs []*kgo.Record
	fetches.EachPartition(func(p kgo.FetchTopicPartition) {
		from := h.store.kafkaNext(h.name, p.Topic, p.Partition)
		for _, r := range p.Records {
			recs = append(recs, r)
			if r.Offset < from {
				continue // already accepted before a crash
			}
			for _, ev := range parseEvents(r.Value, false, h.meta.Config.Dim) {
				ev.line = int(r.Offset) // the operator log names the record by offset
				evs = append(evs, ev)
			}
			next[p.Partition] = r.Offset + 1
		}
	})
	if len(next) > 0 {
		res, err := h.ingest(evs, "", nil, func(tx kvTx) error {
			b := tx.Bucket(bucketKafka)
			for p, off := range next {
				if err := b.Put(kafkaKey(h.name, kc.Topic, p), ledger.Uint64Key(uint64(off))); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("kafka: %w", err)
		}
		s.log.Debug("kafka: ingested", "learner", h.name, "answer_bytes", len(res))
	}
	if len(recs) == 0 {
		return nil
	}
	if err := cl.CommitRecords(ctx, recs...); err != nil && !errors.Is(err, context.Canceled) {
		// The store's offsets keep the events exactly once; the group
		// merely restarts earlier.
		s.log.Warn("kafka: committing offsets", "err", err)
	}
	return nil
}

func kafkaKey(learner, topic string, p int32) []byte {
	return []byte(learner + "/" + topic + "/" + strconv.Itoa(int(p)))
}

// kafkaNext is the first offset of partition p not yet accepted (0: none).
func (s *Store) kafkaNext(learner, topic string, p int32) int64 {
	var off int64
	_ = s.db.View(func(tx kvTx) error {
		off = int64(ledger.KeyUint64(tx.Bucket(bucketKafka).Get(kafkaKey(learner, topic, p))))
		return nil
	})
	return off
}

// connOpts are the client options that reach kc's brokers: the seed
// brokers, TLS and SASL. An error names the setting at fault.
func (kc KafkaConfig) connOpts() ([]kgo.Opt, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(kc.Brokers...)}
	if kc.TLS || kc.TLSCA != "" {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12}
		if kc.TLSCA != "" {
			b, err := os.ReadFile(kc.TLSCA)
			if err != nil {
				return nil, fmt.Errorf("kafka tls_ca: %w", err)
			}
			cfg.RootCAs = x509.NewCertPool()
			if !cfg.RootCAs.AppendCertsFromPEM(b) {
				return nil, fmt.Errorf("kafka tls_ca %s: no PEM certificate", kc.TLSCA)
			}
		}
		opts = append(opts, kgo.DialTLSConfig(cfg)) // franz-go sets each broker's ServerName
	}
	mech, err := kc.sasl()
	if err != nil || mech == nil {
		return opts, err
	}
	return append(opts, kgo.SASL(mech)), nil
}

// sasl is kc's SASL mechanism (nil: none).
func (kc KafkaConfig) sasl() (sasl.Mechanism, error) {
	switch {
	case kc.SASLMechanism == "" && kc.SASLUser == "":
		return nil, nil
	case kc.SASLUser == "":
		return nil, fmt.Errorf("kafka sasl_mechanism %s needs sasl_user (--kafka-sasl-user)", kc.SASLMechanism)
	}
	switch strings.ToUpper(kc.SASLMechanism) {
	case "PLAIN":
		return plain.Auth{User: kc.SASLUser, Pass: kc.SASLPassword}.AsMechanism(), nil
	case "SCRAM-SHA-256":
		return scram.Auth{User: kc.SASLUser, Pass: kc.SASLPassword}.AsSha256Mechanism(), nil
	case "SCRAM-SHA-512":
		return scram.Auth{User: kc.SASLUser, Pass: kc.SASLPassword}.AsSha512Mechanism(), nil
	}
	return nil, fmt.Errorf("kafka sasl_mechanism %q: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (--kafka-sasl)", kc.SASLMechanism)
}
