package service

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"
)

// LoadSpec is a fixed-count load: Events events of dimension Dim sent
// to learner Learner in requests of Batch lines by Workers clients.
type LoadSpec struct {
	URL     string // base URL, e.g. http://127.0.0.1:8080
	Token   string // an ingest (or admin) token
	Learner string
	Dim     int
	Events  int
	Batch   int
	Workers int
	Seed    uint64 // of the synthetic events (not of any released noise)
}

// LoadResult is what a load measured. Every event counted was durably
// accepted: the server answers only after its commit.
type LoadResult struct {
	Events       int     `json:"events"`
	Batch        int     `json:"batch"`
	Workers      int     `json:"workers"`
	Requests     int     `json:"requests"`
	Seconds      float64 `json:"seconds"`
	EventsPerSec float64 `json:"events_per_sec"`
	P50ms        float64 `json:"p50_ms"`
	P99ms        float64 `json:"p99_ms"`
	Seed         uint64  `json:"seed"`
}

// Load runs the load and measures throughput and request latency.
func Load(ctx context.Context, c LoadSpec) (LoadResult, error) {
	if c.Events < 1 || c.Batch < 1 || c.Workers < 1 || c.Dim < 1 {
		return LoadResult{}, errors.New("load: events, batch, workers and dim must be >= 1")
	}
	bodies := loadBodies(c)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: c.Workers}}
	lat := make([]time.Duration, len(bodies))
	var mu sync.Mutex
	var firstErr error
	next := 0
	start := time.Now()
	var wg sync.WaitGroup
	for range c.Workers {
		wg.Go(func() {
			for {
				mu.Lock()
				i := next
				next++
				stop := firstErr != nil || ctx.Err() != nil
				mu.Unlock()
				if i >= len(bodies) || stop {
					return
				}
				t0 := time.Now()
				err := postEvents(ctx, client, c, bodies[i])
				lat[i] = time.Since(t0)
				if err != nil {
					mu.Lock()
					firstErr = cmpOr(firstErr, err)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	secs := time.Since(start).Seconds()
	if firstErr != nil {
		return LoadResult{}, firstErr
	}
	slices.Sort(lat)
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	return LoadResult{Events: c.Events, Batch: c.Batch, Workers: c.Workers, Requests: len(bodies), Seconds: secs,
		EventsPerSec: float64(c.Events) / secs, P50ms: q(0.5), P99ms: q(0.99), Seed: c.Seed}, nil
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// loadBodies makes the request bodies: CSV lines of events inside the
// unit ball.
func loadBodies(c LoadSpec) [][]byte {
	r := rand.New(rand.NewPCG(c.Seed, 0x5e7e))
	var out [][]byte
	for sent := 0; sent < c.Events; {
		n := min(c.Batch, c.Events-sent)
		var b []byte
		for range n {
			for j := range c.Dim {
				if j > 0 {
					b = append(b, ',')
				}
				b = strconv.AppendFloat(b, (r.Float64()*2-1)/float64(c.Dim), 'g', 6, 64)
			}
			b = append(b, '\n')
		}
		out = append(out, b)
		sent += n
	}
	return out
}

func postEvents(ctx context.Context, client *http.Client, c LoadSpec, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, "POST", c.URL+"/v1/learners/"+c.Learner+"/events", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	req.Header.Set("Content-Type", "text/csv")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		return fmt.Errorf("load: status %d: %s", resp.StatusCode, bytes.TrimSpace(msg))
	}
	var ans ingestResult
	if err := json.NewDecoder(resp.Body).Decode(&ans); err != nil {
		return fmt.Errorf("load: decoding the answer: %w", err)
	}
	if ans.Rejected > 0 {
		return fmt.Errorf("load: %d events rejected", ans.Rejected)
	}
	return nil
}

// SelfLoad starts a server on a fresh store in dir, listening on
// loopback, creates a learner of dimension c.Dim, runs c against it and
// shuts it down: the benchmark of `dpal serve bench`.
func SelfLoad(ctx context.Context, dir string, c LoadSpec) (LoadResult, error) {
	st, err := OpenStore(filepath.Join(dir, "bench.db"))
	if err != nil {
		return LoadResult{}, err
	}
	defer st.Close()
	// The bench measures the server, not its per-token rate limit: one
	// token drives every worker.
	srv, err := New(st, Options{Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), RatePerToken: 1e9, Burst: 1 << 20})
	if err != nil {
		return LoadResult{}, err
	}
	if c.Token, err = st.CreateToken(RoleIngest); err == nil {
		err = srv.auth.reload()
	}
	if err != nil {
		return LoadResult{}, err
	}
	c.Learner = "bench"
	body := fmt.Sprintf(`{"name":"bench","dim":%d,"config":{"label_budget":1000}}`, c.Dim)
	if err := srv.ensureLearner([]byte(body)); err != nil {
		return LoadResult{}, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return LoadResult{}, err
	}
	sctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(sctx, ln, 5*time.Second) }()
	c.URL = "http://" + ln.Addr().String()
	res, err := Load(ctx, c)
	stop()
	return res, errors.Join(err, <-done)
}
