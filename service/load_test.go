package service

import (
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/dpal-dev/dpal/dp/ledger/pgstore/pgtest"
)

func TestSelfLoad(t *testing.T) {
	res, err := SelfLoad(context.Background(), t.TempDir(), LoadSpec{Dim: 4, Events: 2000, Batch: 500, Workers: 2, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 4 || res.EventsPerSec <= 0 || res.P99ms < res.P50ms {
		t.Errorf("result %+v", res)
	}
	if len(res.DecileEventsPerSec) != 4 || len(res.DecileP99ms) != 4 || res.Queue == nil || res.Queue.Open == 0 {
		t.Errorf("tenths of 2000 events in requests of 500 are answered in 4 groups; queue at the end: %+v", res)
	}
	if res.RSSStartMiB <= 0 || res.RSSEndMiB <= 0 || len(res.RSSDecileMiB) != 4 {
		t.Errorf("RSS start %v end %v tenths %v", res.RSSStartMiB, res.RSSEndMiB, res.RSSDecileMiB)
	}
	res, err = SelfLoad(context.Background(), t.TempDir(), LoadSpec{Dim: 4, Events: 5000, Batch: 100, Workers: 1, Seed: 1, MaxOpen: 50})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.DecileEventsPerSec) != 10 || res.LastOverFirst <= 0 || res.Queue.Open != 50 || res.Queue.Masked == 0 {
		t.Errorf("with 50 open requests at most: %+v", res)
	}
}

// BenchmarkIngestBatch measures durable batch ingest over loopback (1000
// events per request, 2 clients), on PostgreSQL with $DPAL_BENCH_STORE
// as BenchmarkIngestSingle: go test -bench IngestBatch ./service/
func BenchmarkIngestBatch(b *testing.B) {
	res, err := SelfLoad(context.Background(), b.TempDir(), LoadSpec{Dim: 16, Events: 1000 * b.N, Batch: 1000, Workers: 2, Seed: 1,
		Store: os.Getenv("DPAL_BENCH_STORE")})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(res.EventsPerSec, "events/s")
	b.ReportMetric(res.P99ms, "p99-ms")
}

// TestSelfLoadReplicas: the bench on a PostgreSQL store with two
// replicas, every other request forwarded to the learner's owner; a
// file store refuses a second replica.
func TestSelfLoadReplicas(t *testing.T) {
	if _, err := SelfLoad(context.Background(), t.TempDir(), LoadSpec{Dim: 4, Events: 10, Batch: 5, Workers: 1, Replicas: 2}); err == nil {
		t.Error("two replicas on a store file")
	}
	res, err := SelfLoad(context.Background(), t.TempDir(), LoadSpec{Dim: 4, Events: 2000, Batch: 250, Workers: 2, Seed: 1,
		Store: pgtest.Start(t), Replicas: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 8 || res.EventsPerSec <= 0 || res.Queue == nil || res.Queue.Open == 0 {
		t.Errorf("result %+v", res)
	}
	res, err = SelfLoad(context.Background(), t.TempDir(), LoadSpec{Dim: 4, Events: 2000, Batch: 100, Workers: 2, Seed: 1,
		Store: pgtest.Start(t), Replicas: 2, Learners: 4})
	if err != nil {
		t.Fatal(err)
	}
	if res.Learners != 4 || res.Replicas != 2 || res.Requests != 20 || res.Queue == nil {
		t.Errorf("four learners on two replicas: %+v", res)
	}
}

// TestLoadTargets: with one learner requests alternate between the
// replicas; with several, learner j's go to replica j mod the replicas.
func TestLoadTargets(t *testing.T) {
	for _, tc := range []struct {
		learners int
		want     []string // "replica learner" of requests 0..5
	}{
		{1, []string{"a b", "c b", "a b", "c b", "a b", "c b"}},
		{3, []string{"a b-0", "c b-1", "a b-2", "a b-0", "c b-1", "a b-2"}},
	} {
		t.Run(strconv.Itoa(tc.learners), func(t *testing.T) {
			c := LoadSpec{URL: "a", MoreURLs: []string{"c"}, Learner: "b", Learners: tc.learners}
			for i, want := range tc.want {
				if url, l := c.target(i); url+" "+l != want {
					t.Errorf("request %d: %s %s, want %s", i, url, l, want)
				}
			}
		})
	}
}

// BenchmarkIngestSingle measures durable single-event ingest over
// loopback (one event per request, 16 clients), on a scratch store file
// or, with $DPAL_BENCH_STORE (an empty database's postgres:// URL), on
// PostgreSQL: go test -run - -bench IngestSingle -cpuprofile cpu.out ./service/
func BenchmarkIngestSingle(b *testing.B) {
	res, err := SelfLoad(context.Background(), b.TempDir(), LoadSpec{Dim: 16, Events: b.N, Batch: 1, Workers: 16, Seed: 1,
		Store: os.Getenv("DPAL_BENCH_STORE")})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(res.EventsPerSec, "events/s")
	b.ReportMetric(res.P99ms, "p99-ms")
}

// BenchmarkIngestSingleReplicas is BenchmarkIngestSingle through two
// replicas on the PostgreSQL database $DPAL_BENCH_STORE (an empty one)
// with one learner: the requests alternate between the replicas, so
// half are forwarded to the learner's owner.
//
//	DPAL_BENCH_STORE=postgres://… go test -run - -bench IngestSingleReplicas -cpuprofile cpu.out ./service/
func BenchmarkIngestSingleReplicas(b *testing.B) {
	dsn := os.Getenv("DPAL_BENCH_STORE")
	if dsn == "" {
		b.Skip("set DPAL_BENCH_STORE to an empty PostgreSQL database's postgres:// URL")
	}
	res, err := SelfLoad(context.Background(), b.TempDir(), LoadSpec{Dim: 16, Events: b.N, Batch: 1, Workers: 16, Seed: 1,
		Store: dsn, Replicas: 2})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(res.EventsPerSec, "events/s")
	b.ReportMetric(res.P99ms, "p99-ms")
}
