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
)

// KafkaConfig makes a learner consume a Kafka topic (franz-go): each
// record's value is one event line, or several lines (the events body's
// format). Every process started with the same settings — one server,
// or every replica on a shared store — is a member of the consumer group
// Group, and Kafka spreads the topic's partitions over the members; the
// records reach the learner's owner exactly once (ConsumeKafka).
type KafkaConfig struct {
	Brokers []string `json:"brokers"`
	Topic   string   `json:"topic"`
	// Learner is the learner the events feed; it must exist.
	Learner string `json:"learner"`
	// Group is the consumer group (default "dpal-serve-" + Learner);
	// replicas feeding one learner must share it.
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

// ConsumeKafka feeds kc.Topic to its learner until ctx ends, as one
// member of the consumer group kc.Group: Kafka assigns it some of the
// topic's partitions (all of them when it is the only member). Exactly
// once: each poll's records are ingested by the learner's owner — this
// process, or with replicas on a shared store the replica that holds the
// learner's lease, to which they are sent (kafkagroup.go) — which, under
// the learner's lock, drops the records below each partition's stored
// next offset and commits the new next offsets in the same transaction
// as the events. The group's offsets (where a member starts reading a
// partition) are committed to Kafka only after the owner acknowledged,
// so a crash, a rebalance or a lost answer replays records at worst,
// and replayed records are dropped.
func (s *Server) ConsumeKafka(ctx context.Context, kc KafkaConfig) error {
	if s.rep != nil {
		if !s.learnerExists(kc.Learner) {
			return fmt.Errorf("kafka: no learner %q", kc.Learner)
		}
	} else if _, err := s.kafkaLearner(kc.Learner); err != nil {
		return err
	}
	if kc.Group == "" {
		kc.Group = "dpal-serve-" + kc.Learner
	}
	conn, err := kc.connOpts()
	if err != nil {
		return err
	}
	var cred string
	if s.rep != nil {
		if cred, err = s.store.newPeerCred(s.rep.id); err != nil {
			return fmt.Errorf("kafka: %w", err)
		}
		defer func() {
			if err := s.store.deletePeerCred(cred); err != nil {
				s.log.Warn("kafka: deleting the replica credential", "err", err)
			}
		}()
	}
	cl, err := kgo.NewClient(append(conn, kgo.ConsumerGroup(kc.Group), kgo.ConsumeTopics(kc.Topic),
		kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(), kgo.FetchMaxWait(200*time.Millisecond),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			s.log.Info("kafka: partitions assigned", "topic", kc.Topic, "partitions", m[kc.Topic])
		}))...)
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
		err := s.consumeFetches(ctx, cl, kc, cred, fetches)
		switch {
		case ctx.Err() != nil, errors.Is(err, errReplicaStopping):
			return nil
		case err != nil:
			return err
		}
		cl.AllowRebalance()
	}
}

// RunKafka feeds kc.Topic to its learner until ctx ends: ConsumeKafka,
// kept running on a replica of a shared store. Every replica started
// with the same Kafka settings runs it, each a member of the group that
// Kafka spreads the partitions over; each member has the learner's
// owner ingest its partitions' records (ConsumeKafka). When the lease
// moves, a member's records go to the new owner; when a member stops,
// Kafka gives its partitions to the others, which start at the group's
// committed offsets, at or below the ones stored with the events.
func (s *Server) RunKafka(ctx context.Context, kc KafkaConfig) error {
	if s.rep == nil {
		return s.ConsumeKafka(ctx, kc)
	}
	for {
		err := s.ConsumeKafka(ctx, kc)
		switch {
		case ctx.Err() != nil:
			return nil
		case err == nil:
			return nil // the replica is stopping
		case !s.learnerExists(kc.Learner):
			return err
		}
		s.log.Warn("kafka: consumer stopped; it restarts", "learner", kc.Learner, "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(s.rep.ttl / 3):
		}
	}
}

// consumeFetches has one poll's records ingested, then commits the
// group's offsets.
func (s *Server) consumeFetches(ctx context.Context, cl *kgo.Client, kc KafkaConfig, cred string, fetches kgo.Fetches) error {
	b, recs := batchOf(kc.Topic, fetches)
	if len(recs) == 0 {
		return nil
	}
	if err := s.deliver(ctx, kc.Learner, cred, b); err != nil {
		return fmt.Errorf("kafka: %w", err)
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
