package service

import (
	"context"
	"testing"
)

func TestSelfLoad(t *testing.T) {
	res, err := SelfLoad(context.Background(), t.TempDir(), LoadSpec{Dim: 4, Events: 2000, Batch: 500, Workers: 2, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 4 || res.EventsPerSec <= 0 || res.P99ms < res.P50ms {
		t.Errorf("result %+v", res)
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
