package service

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// produce writes n events (every tenth one invalid) to topic.
func produce(t *testing.T, brokers []string, topic string, from, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic))
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
