package service

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// produce writes n events (every tenth one invalid) to topic; conn
// (TLS, SASL) add to the seed brokers.
func produce(t *testing.T, brokers []string, topic string, from, n int, conn ...kgo.Opt) {
	t.Helper()
	cl, err := kgo.NewClient(append(conn, kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for i := from; i < from+n; i++ {
		v := fmt.Sprintf("%g,%g", float64(i%7)/10-0.3, 0.1)
		if i%10 == 9 {
			v = "NaN,1"
		}
		recs = append(recs, &kgo.Record{Value: []byte(v), Key: []byte(fmt.Sprint(i))})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// consumeUntil runs the consumer of kc until the learner has observed want
// events, then stops it.
func (ts *testServer) consumeUntil(kc KafkaConfig, want int) {
	ts.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ts.srv.ConsumeKafka(ctx, kc) }()
	deadline := time.Now().Add(20 * time.Second)
	var b budgetView
	for time.Now().Before(deadline) {
		ts.mustDo(http.StatusOK, RoleOfficer, "GET", "/v1/learners/k/budget", "", &b)
		if b.Stats.Observed >= want {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // let a replay, if any, arrive
	cancel()
	if err := <-done; err != nil {
		ts.t.Fatal(err)
	}
	ts.mustDo(http.StatusOK, RoleOfficer, "GET", "/v1/learners/k/budget", "", &b)
	if b.Stats.Observed != want {
		ts.t.Fatalf("observed %d events, want %d", b.Stats.Observed, want)
	}
}

// TestKafkaExactlyOnce: events from a kfake cluster are accepted once,
// across a restart, and even when the group's offsets are lost (a new
// group starts from the beginning of the topic): the store's offsets
// skip what was accepted.
func TestKafkaExactlyOnce(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "events"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	brokers := c.ListenAddrs()
	ts := newTestServer(t)
	ts.createLearner("k")
	kc := KafkaConfig{Brokers: brokers, Topic: "events", Learner: "k"}

	produce(t, brokers, "events", 0, 100)
	ts.consumeUntil(kc, 90) // 10 of the 100 are invalid
	ts.restart()
	produce(t, brokers, "events", 100, 50)
	ts.consumeUntil(kc, 135)
	// A new group starts at the beginning of the topic: it must pass over
	// all 150 old records, accepted already, to reach the 10 new ones.
	kc.Group = "a-new-group"
	produce(t, brokers, "events", 150, 10)
	ts.consumeUntil(kc, 144)
}

// TestKafkaTLSSASL consumes from a kfake cluster that speaks only TLS
// (a self-signed certificate, trusted through tls_ca) and authenticates
// with each SASL mechanism.
func TestKafkaTLSSASL(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, _ := testCert(t, dir, 1)
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, mech := range []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"} {
		t.Run(mech, func(t *testing.T) {
			c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "events"),
				kfake.TLS(&tls.Config{Certificates: []tls.Certificate{pair}}), kfake.EnableSASL(), kfake.Superuser(mech, "dpal", "s3cret"))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			kc := KafkaConfig{Brokers: c.ListenAddrs(), Topic: "events", Learner: "k",
				TLSCA: certFile, SASLMechanism: mech, SASLUser: "dpal", SASLPassword: "s3cret"}
			conn, err := kc.connOpts()
			if err != nil {
				t.Fatal(err)
			}
			produce(t, kc.Brokers, "events", 0, 20, conn...)
			wrong := kc
			wrong.SASLPassword = "guess"
			for name, k := range map[string]KafkaConfig{"a wrong password": wrong, "no TLS": {Brokers: kc.Brokers}} {
				if err := refused(k); err == nil {
					t.Errorf("%s: the cluster answered", name)
				} else {
					t.Logf("%s: %v", name, err)
				}
			}
			ts := newTestServer(t)
			ts.createLearner("k")
			ts.consumeUntil(kc, 18)
		})
	}
}

// refused lists the cluster's topics with kc's connection settings: the
// error, if any, within 5 s.
func refused(kc KafkaConfig) error {
	conn, err := kc.connOpts()
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(append(conn, kgo.RequestRetries(0))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return cl.Ping(ctx)
}

// TestKafkaConnSettings: a bad TLS or SASL setting fails with an error
// naming it.
func TestKafkaConnSettings(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(notPEM, []byte("no certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		kc   KafkaConfig
		want string
	}{
		{KafkaConfig{TLSCA: filepath.Join(dir, "absent.pem")}, "tls_ca"},
		{KafkaConfig{TLSCA: notPEM}, notPEM},
		{KafkaConfig{SASLMechanism: "PLAIN"}, "sasl_user"},
		{KafkaConfig{SASLUser: "u"}, "sasl_mechanism"},
		{KafkaConfig{SASLMechanism: "GSSAPI", SASLUser: "u"}, "GSSAPI"},
	} {
		if _, err := tc.kc.connOpts(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error naming %s", tc.kc, err, tc.want)
		}
	}
}
