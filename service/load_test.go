package service

import (
	"context"
	"os"
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
// events per request, 2 clients): go test -bench IngestBatch ./service/
func BenchmarkIngestBatch(b *testing.B) {
	res, err := SelfLoad(context.Background(), b.TempDir(), LoadSpec{Dim: 16, Events: 1000 * b.N, Batch: 1000, Workers: 2, Seed: 1})
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
