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
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dpal-dev/dpal/dp/ledger"
)

// LoadSpec is a fixed-count load: Events events of dimension Dim sent
// to learner Learner in requests of Batch lines by Workers clients.
type LoadSpec struct {
	URL     string // base URL, e.g. http://127.0.0.1:8080
	Token   string // an ingest (or admin) token
	Learner string
	// Learners > 1 spreads the requests over that many learners:
	// request i goes to learner Learner-(i mod Learners), and learner j's
	// requests to replica j mod (1 + len(MoreURLs)).
	Learners int
	Dim      int
	Events   int
	Batch    int
	Workers  int
	Seed     uint64 // of the synthetic events (not of any released noise)
	// LearnerConfig and MaxOpen, for SelfLoad: the learner's settings
	// (the "config" and "max_open_requests" of POST /v1/learners; empty
	// and 0: the defaults, as `dpal serve --learner NAME:DIM` makes).
	LearnerConfig json.RawMessage
	MaxOpen       int
	// Store and Replicas, for SelfLoad: a postgres:// store instead of a
	// scratch file, and how many replicas serve it.
	Store    string
	Replicas int
	// MoreURLs are other replicas' base URLs: with one learner, request
	// i goes to (URL, MoreURLs...)[i mod their number] (every replica but
	// the learner's owner forwards its share).
	MoreURLs []string
}

// LoadResult is what a load measured. Every event counted was durably
// accepted: the server answers only after its commit.
type LoadResult struct {
	Events       int     `json:"events"`
	Batch        int     `json:"batch"`
	Workers      int     `json:"workers"`
	Learners     int     `json:"learners"`
	Replicas     int     `json:"replicas"`
	Requests     int     `json:"requests"`
	Seconds      float64 `json:"seconds"`
	EventsPerSec float64 `json:"events_per_sec"`
	P50ms        float64 `json:"p50_ms"`
	P99ms        float64 `json:"p99_ms"`
	Seed         uint64  `json:"seed"`
	// DecileEventsPerSec is the rate over each tenth of the events, in
	// the order their answers arrived; LastOverFirst is the last tenth's
	// rate over the first's.
	DecileEventsPerSec []float64 `json:"decile_events_per_sec"`
	LastOverFirst      float64   `json:"last_over_first"`
	// DecileP99ms is the p99 latency of the requests answered in each tenth.
	DecileP99ms []float64 `json:"decile_p99_ms"`
	// RSS of this process (server and clients, when SelfLoad runs both)
	// in MiB at the start, at the end of each tenth, and the largest
	// sample; 0 where /proc/self/status cannot be read.
	RSSStartMiB  float64   `json:"rss_start_mib"`
	RSSDecileMiB []float64 `json:"rss_decile_mib"`
	RSSEndMiB    float64   `json:"rss_end_mib"`
	RSSMaxMiB    float64   `json:"rss_max_mib"`
	// Queue is the learner's queue at the end (SelfLoad only).
	Queue *queueView `json:"queue,omitempty"`
}

// done is one answered request: when, how long it took, how many events.
type done struct {
	at     time.Duration // since the start
	lat    time.Duration
	events int
}

// Load runs the load and measures throughput and request latency, per
// tenth of the events too, and the process's RSS. The request bodies are
// made as they are sent (request i from the seed and i), so the client
// holds one body per worker, not the whole load.
func Load(ctx context.Context, c LoadSpec) (LoadResult, error) {
	if c.Events < 1 || c.Batch < 1 || c.Workers < 1 || c.Dim < 1 {
		return LoadResult{}, errors.New("load: events, batch, workers and dim must be >= 1")
	}
	nreq := (c.Events + c.Batch - 1) / c.Batch
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: c.Workers}}
	var mu sync.Mutex
	var firstErr error
	dones := make([]done, 0, nreq)
	acked := 0
	res := LoadResult{Events: c.Events, Batch: c.Batch, Workers: c.Workers, Learners: max(c.Learners, 1), Replicas: 1 + len(c.MoreURLs),
		Requests: nreq, Seed: c.Seed, RSSStartMiB: rssMiB()}
	res.RSSMaxMiB = res.RSSStartMiB
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
				if i >= nreq || stop {
					return
				}
				n := min(c.Batch, c.Events-i*c.Batch)
				body := loadBody(c, i, n)
				t0 := time.Now()
				err := postEvents(ctx, client, c, i, body, fmt.Sprintf("load-%d-%d", c.Seed, i))
				lat := time.Since(t0)
				mu.Lock()
				if err != nil {
					firstErr = cmpOr(firstErr, err)
				} else {
					dones = append(dones, done{at: time.Since(start), lat: lat, events: n})
					before := acked
					acked += n
					if acked*10/c.Events > before*10/c.Events { // a tenth ended
						rss := rssMiB()
						res.RSSDecileMiB = append(res.RSSDecileMiB, rss)
						res.RSSMaxMiB = max(res.RSSMaxMiB, rss)
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	res.Seconds = time.Since(start).Seconds()
	// A server's graceful stop waits for a connection that never sent a
	// request (one dialled and then not used) as for a busy one.
	client.CloseIdleConnections()
	if firstErr != nil {
		return LoadResult{}, firstErr
	}
	res.RSSEndMiB = rssMiB()
	res.RSSMaxMiB = max(res.RSSMaxMiB, res.RSSEndMiB)
	res.EventsPerSec = float64(c.Events) / res.Seconds
	res.P50ms, res.P99ms = quantiles(dones)
	res.DecileEventsPerSec, res.DecileP99ms = deciles(dones, c.Events)
	if d := res.DecileEventsPerSec; len(d) == 10 && d[0] > 0 {
		res.LastOverFirst = d[9] / d[0]
	}
	return res, nil
}

// quantiles returns the p50 and p99 latency of ds in ms.
func quantiles(ds []done) (float64, float64) {
	if len(ds) == 0 {
		return 0, 0
	}
	lat := make([]time.Duration, len(ds))
	for i, d := range ds {
		lat[i] = d.lat
	}
	slices.Sort(lat)
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	return q(0.5), q(0.99)
}

// deciles splits the answers (in arrival order) into tenths of the
// events and returns each tenth's rate and p99 latency. A request that
// straddles a boundary counts in the tenth where it was answered.
func deciles(ds []done, events int) (rates, p99 []float64) {
	var from time.Duration
	acked, lo := 0, 0
	for i, d := range ds {
		acked += d.events
		if acked*10/events > (acked-d.events)*10/events || i == len(ds)-1 {
			n := 0
			for _, e := range ds[lo : i+1] {
				n += e.events
			}
			rates = append(rates, float64(n)/(d.at-from).Seconds())
			_, p := quantiles(ds[lo : i+1])
			p99 = append(p99, p)
			from, lo = d.at, i+1
		}
	}
	return rates, p99
}

// rssMiB is this process's resident set in MiB (0 if unknown).
func rssMiB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err == nil {
				return kb / 1024
			}
		}
	}
	return 0
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// loadBody makes request i's body: n CSV lines of events inside the unit
// ball, from the seed and i alone.
func loadBody(c LoadSpec, i, n int) []byte {
	r := rand.New(rand.NewPCG(c.Seed, uint64(i)))
	b := make([]byte, 0, n*c.Dim*10)
	for range n {
		for j := range c.Dim {
			if j > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendFloat(b, (r.Float64()*2-1)/float64(c.Dim), 'g', 6, 64)
		}
		b = append(b, '\n')
	}
	return b
}

// target is the replica and the learner of request i.
func (c LoadSpec) target(i int) (url, learner string) {
	urls := append([]string{c.URL}, c.MoreURLs...)
	if c.Learners <= 1 {
		return urls[i%len(urls)], c.Learner
	}
	j := i % c.Learners
	return urls[j%len(urls)], benchLearner(c.Learner, j, c.Learners)
}

// benchLearner is the name of learner j of n named after base.
func benchLearner(base string, j, n int) string {
	if n <= 1 {
		return base
	}
	return base + "-" + strconv.Itoa(j)
}

func postEvents(ctx context.Context, client *http.Client, c LoadSpec, i int, body []byte, key string) error {
	url, learner := c.target(i)
	req, err := http.NewRequestWithContext(ctx, "POST", url+"/v1/learners/"+learner+"/events", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	req.Header.Set("Content-Type", "text/csv")
	req.Header.Set("Idempotency-Key", key)
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

// SelfLoad starts a server on a fresh store in dir (or on c.Store, a
// postgres:// URL: an empty database), listening on loopback, creates
// c.Learners learners (at least one) of dimension c.Dim, runs c against
// them and shuts it down: the benchmark of `dpal serve bench`. With
// c.Replicas > 1 (a postgres:// store only) more replicas serve too: with
// one learner the requests alternate between them (those that do not
// own the learner forward their share); with more, learner j's requests
// go to replica j mod c.Replicas, which takes its lease with its first
// request (a creation leaves the lease free). The result's queue is the
// first learner's.
func SelfLoad(ctx context.Context, dir string, c LoadSpec) (LoadResult, error) {
	path := filepath.Join(dir, "bench.db")
	if c.Store != "" {
		path = c.Store
	}
	if c.Replicas > 1 && !IsSharedStore(path) {
		return LoadResult{}, errors.New("load: replicas > 1 need a postgres:// store")
	}
	c.Learner = "bench"
	var urls []string
	var errs []chan error
	var srvs []*Server
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	for i := range max(c.Replicas, 1) {
		srv, url, served, err := selfServe(sctx, path)
		if err != nil {
			stop()
			for _, e := range errs {
				<-e
			}
			return LoadResult{}, err
		}
		errs = append(errs, served)
		urls = append(urls, url)
		srvs = append(srvs, srv)
		if i > 0 {
			continue
		}
		// The bench measures the server, not its per-token rate limit:
		// one token drives every worker.
		if c.Token, err = srv.store.CreateToken(RoleIngest); err == nil {
			err = srv.auth.reload()
		}
		for j := range max(c.Learners, 1) {
			if err == nil {
				err = srv.ensureLearner(mustJSON(createRequest{Name: benchLearner(c.Learner, j, c.Learners), Dim: c.Dim,
					Config: c.LearnerConfig, MaxOpenRequests: c.MaxOpen}))
			}
		}
		if err != nil {
			stop()
			<-served
			return LoadResult{}, err
		}
	}
	c.URL, c.MoreURLs = urls[0], urls[1:]
	res, err := Load(ctx, c)
	if err == nil {
		var q queueView
		if q, err = ownersQueue(srvs, benchLearner(c.Learner, 0, c.Learners)); err == nil {
			res.Queue = &q
		}
	}
	for _, s := range srvs {
		if s.rep != nil {
			s.rep.closeIdle() // the forwarding replicas' connections
		}
	}
	stop()
	for _, e := range errs {
		err = errors.Join(err, <-e)
	}
	return res, err
}

// ownersQueue is the queue of learner name as the server that owns it
// sees it.
func ownersQueue(srvs []*Server, name string) (queueView, error) {
	for _, s := range srvs {
		if s.rep != nil {
			if _, ok := s.rep.owned(name); !ok {
				continue
			}
		}
		s.mu.RLock()
		h := s.learners[name]
		s.mu.RUnlock()
		if h != nil {
			q, _, err := h.queueState()
			return q, err
		}
	}
	return queueView{}, fmt.Errorf("load: no replica owns learner %s", name)
}

// IsSharedStore reports whether path names a store that replicas share
// (a postgres:// URL) rather than a file.
func IsSharedStore(path string) bool { return ledger.IsURL(path) }

// selfServe opens the store at path and serves it on a loopback port
// until ctx ends; served receives Serve's error, after the store is
// closed.
func selfServe(ctx context.Context, path string) (*Server, string, chan error, error) {
	st, err := OpenStore(path)
	if err != nil {
		return nil, "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		st.Close()
		return nil, "", nil, err
	}
	url := "http://" + ln.Addr().String()
	srv, err := New(st, Options{Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), RatePerToken: 1e9, Burst: 1 << 20, Advertise: url})
	if err != nil {
		ln.Close()
		st.Close()
		return nil, "", nil, err
	}
	served := make(chan error, 1)
	go func() {
		err := srv.Serve(ctx, ln, 5*time.Second)
		srv.Close()
		st.Close()
		served <- err
	}()
	return srv, url, served, nil
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // a fixed struct of plain fields always encodes
	}
	return b
}
