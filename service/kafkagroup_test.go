package service

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dpal-dev/dpal/dp/ledger/pgstore/pgtest"
)

// logLines is a slog destination a test reads back.
type logLines struct{ syncBuffer }

// each calls fn with every logged record whose message is msg.
func (l *logLines) each(msg string, fn func(map[string]any)) {
	lines := strings.Split(l.String(), "\n")
	for _, line := range lines {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == msg {
			fn(rec)
		}
	}
}

// assigned reports whether the replica's consumer was ever assigned a
// partition.
func (l *logLines) assigned() bool {
	got := false
	l.each("kafka: partitions assigned", func(r map[string]any) {
		ps, _ := r["partitions"].([]any)
		got = got || len(ps) > 0
	})
	return got
}

// producer writes events to topic until stopped, every tenth invalid
// (as produce does), and counts them.
type producer struct {
	n    atomic.Int64
	stop chan struct{}
	done chan struct{}
}

func startProducer(t *testing.T, brokers []string, topic string) *producer {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	p := &producer{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		defer cl.Close()
		for i := 0; ; {
			select {
			case <-p.stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			var recs []*kgo.Record
			for range 4 {
				v := fmt.Sprintf("%g,%g", float64(i%7)/10-0.3, 0.1)
				if i%10 == 9 {
					v = "NaN,1"
				}
				recs = append(recs, &kgo.Record{Value: []byte(v), Key: []byte(fmt.Sprint(i))})
				i++
			}
			if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
				t.Error(err)
				return
			}
			p.n.Add(int64(len(recs)))
		}
	}()
	return p
}

// valid stops the producer and returns how many valid events it wrote.
func (p *producer) valid() int {
	close(p.stop)
	<-p.done
	n := int(p.n.Load())
	return n - (n+1)/10 // records 9, 19, … are invalid
}

// TestReplicasKafkaGroup: two replicas on one PostgreSQL database are
// members of one consumer group over a topic of 4 partitions, fed
// without pause. The second replica joins after ingest began, the first
// one's consumer stops and starts again, and the learner's owner is
// killed (its lease expires and the other replica takes the learner
// over): each change is a rebalance mid-stream. Kafka gives both
// replicas partitions; the one that does not own the learner sends its
// records to the owner; in the end every valid event produced was
// observed exactly once.
func TestReplicasKafkaGroup(t *testing.T) {
	brokers, a, b, c := kafkaReplicas(t, 4)
	reps := [2]*testReplica{a, b}
	var logs [2]*logLines
	for i, r := range reps {
		logs[i] = &logLines{}
		r.srv.log = slog.New(slog.NewJSONHandler(logs[i], nil)) // before any consumer
	}
	cfg := KafkaConfig{Brokers: brokers, Topic: "events", Learner: "k"}
	type consumer struct {
		stop context.CancelFunc
		done chan error
	}
	run := func(r *testReplica) consumer {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- r.srv.RunKafka(ctx, cfg) }()
		return consumer{cancel, done}
	}
	stop := func(c consumer) {
		t.Helper()
		c.stop()
		if err := <-c.done; err != nil {
			t.Error(err)
		}
	}
	observed := func(r *testReplica) int {
		var v budgetView
		c.call(r.base, RoleOfficer, "GET", "/v1/learners/k/budget", "", &v, "")
		return v.Stats.Observed
	}
	waitUntil := func(what string, d time.Duration, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(d); !ok(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within %v", what, d)
			}
		}
	}
	start := time.Now()
	prod := startProducer(t, brokers, "events")
	ca := run(a)
	waitUntil("a ingests", 5*time.Second, func() bool { return observed(a) > 0 })
	cb := run(b) // joins the group: a rebalance mid-stream
	waitUntil("both replicas get partitions", 8*time.Second, func() bool { return logs[0].assigned() && logs[1].assigned() })
	// A member of another group reads every partition from the start
	// while the group's members read them: each record is offered twice,
	// from two replicas at once, as when members race on a partition
	// during a rebalance.
	rivalCfg := cfg
	rivalCfg.Group = "rival"
	ctx, cancel := context.WithCancel(context.Background())
	rivalDone := make(chan error, 1)
	go func() { rivalDone <- b.srv.RunKafka(ctx, rivalCfg) }()
	time.Sleep(time.Second)
	stop(consumer{cancel, rivalDone})
	stop(ca) // a leaves: b gets every partition
	time.Sleep(500 * time.Millisecond)
	ca = run(a) // and a joins again
	time.Sleep(1500 * time.Millisecond)
	// The learner's owner dies: its lease expires, the other takes over.
	owner, other, cOwner, cOther := a, b, ca, cb
	if _, ok := b.srv.rep.owned("k"); ok {
		owner, other, cOwner, cOther = b, a, cb, ca
	}
	other.srv.mu.RLock()
	if h := other.srv.learners["k"]; h == nil || h.l != nil {
		t.Error("the replica that does not own the learner ingested itself, not through the owner")
	}
	other.srv.mu.RUnlock()
	owner.kill()
	stop(cOwner)
	time.Sleep(2 * time.Second)
	want := prod.valid()
	waitUntil("every event observed", 10*time.Second, func() bool { return observed(other) >= want })
	time.Sleep(500 * time.Millisecond) // a duplicate, if any, would arrive
	if got := observed(other); got != want {
		t.Errorf("observed %d events, want %d (every valid one produced, once)", got, want)
	}
	if dropped(logs) == 0 {
		t.Error("no record was offered twice: the rival group did not race")
	}
	other.srv.mu.RLock()
	if h := other.srv.learners["k"]; h == nil || h.token < 2 {
		t.Error("the surviving replica did not take the learner over")
	}
	other.srv.mu.RUnlock()
	stop(cOther)
	t.Logf("%d valid events produced and observed once in %v; %d records offered again were dropped",
		want, time.Since(start).Round(100*time.Millisecond), dropped(logs))
	other.stop()
	owner.store.Close()
}

// kafkaReplicas starts a kfake cluster with a topic "events" of
// partitions partitions, and two replicas (1 s leases) on a throw-away
// PostgreSQL database with a learner k (replicaPair).
func kafkaReplicas(t *testing.T, partitions int32) (brokers []string, a, b *testReplica, c *replicaClient) {
	t.Helper()
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, "events"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kc.Close)
	a, b, c = replicaPair(t, time.Second)
	if code := c.call(a.base, RoleAdmin, "POST", "/v1/learners", `{"name":"k","dim":2,"config":{"window":1}}`, nil, ""); code != http.StatusCreated {
		t.Fatalf("create: %d", code)
	}
	return kc.ListenAddrs(), a, b, c
}

// dropped is the count of records the replicas dropped as ingested
// already.
func dropped(logs [2]*logLines) int {
	n := 0
	for _, l := range logs {
		l.each("kafka: records ingested already were dropped", func(r map[string]any) {
			k, _ := r["records"].(float64)
			n += int(k)
		})
	}
	return n
}

// TestKafkaPeerEndpoint: the endpoint a replica sends records to refuses
// a request without a replica credential, even with an admin token.
func TestKafkaPeerEndpoint(t *testing.T) {
	dsn := pgtest.Start(t)
	r := startReplica(t, dsn, time.Second)
	t.Cleanup(r.stop)
	admin, err := r.store.CreateToken(RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	cred, err := r.store.newPeerCred("test")
	if err != nil {
		t.Fatal(err)
	}
	forged := peerPrefix + strings.Repeat("A", 43)
	for _, tc := range []struct {
		name, auth string
		want       int
	}{
		{"no credential", "", http.StatusUnauthorized},
		{"an admin token", admin, http.StatusUnauthorized},
		{"a forged credential", forged, http.StatusUnauthorized},
		{"a replica credential", cred, http.StatusNotFound}, // past the check: no learner k
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", r.base+kafkaPeerPath+"k", strings.NewReader(`{"topic":"t","partitions":[]}`))
			if tc.auth != "" {
				req.Header.Set("Authorization", "Bearer "+tc.auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("%d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
	if err := r.store.deletePeerCred(cred); err != nil {
		t.Fatal(err)
	}
	if r.store.isPeerCred(cred) {
		t.Error("a deleted credential is still accepted")
	}
	// A process at an address, killed with its credential stored: the
	// next process at that address drops it; another address's stays.
	dead, _ := r.store.newPeerCred("http://a:1#dead")
	other, _ := r.store.newPeerCred("http://b:1#live")
	if _, err := r.store.newPeerCred("http://a:1#next"); err != nil {
		t.Fatal(err)
	}
	if r.store.isPeerCred(dead) || !r.store.isPeerCred(other) {
		t.Errorf("after a restart at http://a:1: dead credential kept %v, other address's kept %v (want false, true)",
			r.store.isPeerCred(dead), r.store.isPeerCred(other))
	}
}

// TestKafkaBatchSplit: a batch cut to a byte limit keeps every record,
// each partition's order, and every piece within the limit unless one
// record alone exceeds it.
func TestKafkaBatchSplit(t *testing.T) {
	b := kafkaBatch{Topic: "t", Partitions: []kafkaPartRecs{
		{Partition: 0, Offsets: []int64{1, 2, 5}, Values: [][]byte{[]byte("aaa"), []byte("bb"), []byte("c")}},
		{Partition: 3, Offsets: []int64{7, 8}, Values: [][]byte{[]byte("dddddd"), []byte("e")}},
	}}
	for _, limit := range []int{1, 3, 4, 6, 100} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			got := map[int32][]int64{}
			for _, piece := range b.split(limit) {
				size := 0
				for _, p := range piece.Partitions {
					got[p.Partition] = append(got[p.Partition], p.Offsets...)
					for _, v := range p.Values {
						size += len(v)
					}
					if !piece.valid() || len(p.Offsets) == 0 {
						t.Errorf("piece %+v malformed", piece)
					}
				}
				if n := len(piece.Partitions); size > limit && (n != 1 || len(piece.Partitions[0].Values) != 1) {
					t.Errorf("piece of %d bytes over the limit %d", size, limit)
				}
			}
			want := map[int32][]int64{0: {1, 2, 5}, 3: {7, 8}}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("records %v, want %v", got, want)
			}
		})
	}
}

// TestIngestKafkaDrops: the owner ingests only the records at or above
// each partition's next offset, per partition, and keeps the offsets
// across a restart.
func TestIngestKafkaDrops(t *testing.T) {
	ts := newTestServer(t)
	ts.createLearner("k")
	batch := func(p int32, from, to int64) kafkaPartRecs {
		pr := kafkaPartRecs{Partition: p}
		for off := from; off < to; off++ {
			pr.Offsets, pr.Values = append(pr.Offsets, off), append(pr.Values, []byte("0.1,0.2"))
		}
		return pr
	}
	for i, tc := range []struct {
		parts             []kafkaPartRecs
		accepted, skipped int
		restartBefore     bool
	}{
		{[]kafkaPartRecs{batch(0, 0, 10)}, 10, 0, false},
		{[]kafkaPartRecs{batch(0, 5, 15), batch(1, 0, 3)}, 8, 5, false},
		{[]kafkaPartRecs{batch(0, 0, 15), batch(1, 2, 3)}, 0, 16, false},
		{[]kafkaPartRecs{batch(0, 14, 16), batch(1, 0, 4)}, 2, 4, true},
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			if tc.restartBefore {
				ts.restart()
			}
			h, err := ts.srv.kafkaLearner("k")
			if err != nil {
				t.Fatal(err)
			}
			ans, err := h.ingestKafka(kafkaBatch{Topic: "events", Partitions: tc.parts})
			if err != nil {
				t.Fatal(err)
			}
			if ans.Accepted != tc.accepted || ans.Skipped != tc.skipped {
				t.Errorf("accepted %d, skipped %d; want %d, %d", ans.Accepted, ans.Skipped, tc.accepted, tc.skipped)
			}
		})
	}
	var b budgetView
	ts.mustDo(http.StatusOK, RoleOfficer, "GET", "/v1/learners/k/budget", "", &b)
	if b.Stats.Observed != 20 {
		t.Errorf("observed %d events, want 20", b.Stats.Observed)
	}
	// Members racing: each offers partition 2's records 0…209 in
	// overlapping batches, all at once; each record is observed once.
	h, err := ts.srv.kafkaLearner("k")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			for from := int64(0); from < 200; from += 10 {
				if _, err := h.ingestKafka(kafkaBatch{Topic: "events", Partitions: []kafkaPartRecs{batch(2, from, from+20)}}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	ts.mustDo(http.StatusOK, RoleOfficer, "GET", "/v1/learners/k/budget", "", &b)
	if b.Stats.Observed != 20+210 {
		t.Errorf("after the race: observed %d events, want %d", b.Stats.Observed, 20+210)
	}
}
