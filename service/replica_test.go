package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/ledger/pgstore/pgtest"
)

// testReplica is one replica on a shared store, serving on loopback.
type testReplica struct {
	once  sync.Once // stop's
	store *Store
	srv   *Server
	hs    *http.Server
	base  string
}

// startReplica starts a replica with lease time ttl; set adjusts its
// http.Server before it serves.
func startReplica(t *testing.T, dsn string, ttl time.Duration, set ...func(*http.Server)) *testReplica {
	t.Helper()
	st, err := OpenStore(dsn)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	srv, err := New(st, Options{Advertise: base, LeaseTTL: ttl, Log: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	r := &testReplica{store: st, srv: srv, hs: &http.Server{Handler: srv.Handler()}, base: base}
	for _, f := range set {
		f(r.hs)
	}
	go r.hs.Serve(ln)
	return r
}

// kill stops the replica as a crash would: no more renewals, no answers,
// its leases left to expire.
func (r *testReplica) kill() {
	r.srv.rep.abandon()
	r.hs.Close()
}

// replicaClient calls any replica, resending an answer to retry (502,
// 503 with Retry-After) with the same idempotency key.
type replicaClient struct {
	t   *testing.T
	tok map[Role]string
}

// hdr are more headers, as name, value pairs.
func (c *replicaClient) call(base string, role Role, method, path, body string, out any, key string, hdr ...string) int {
	c.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+c.tok[role])
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			c.t.Fatalf("%s %s%s: %v", method, base, path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		retry := resp.Header.Get("Retry-After") != "" && (resp.StatusCode == http.StatusBadGateway || resp.StatusCode == http.StatusServiceUnavailable)
		if retry && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		if out != nil && resp.StatusCode < 300 {
			if err := jsonUnmarshal(b, out); err != nil {
				c.t.Fatal(err)
			}
		}
		return resp.StatusCode
	}
}

// replicaPair starts two replicas (lease time ttl; setA adjusts a's
// http.Server) on a new throw-away PostgreSQL database, and a client
// holding a token of every role; both replicas are stopped when the test
// ends (one killed by then is only closed).
func replicaPair(t *testing.T, ttl time.Duration, setA ...func(*http.Server)) (a, b *testReplica, c *replicaClient) {
	t.Helper()
	dsn := pgtest.Start(t)
	a, b = startReplica(t, dsn, ttl, setA...), startReplica(t, dsn, ttl)
	t.Cleanup(func() { a.stop(); b.stop() })
	c = &replicaClient{t: t, tok: map[Role]string{}}
	for _, r := range []Role{RoleIngest, RoleAnnotator, RoleOfficer, RoleAdmin} {
		tok, err := a.store.CreateToken(r)
		if err != nil {
			t.Fatal(err)
		}
		c.tok[r] = tok
	}
	return a, b, c
}

// stop stops the replica gracefully (once): its leases released, its
// server and store closed.
func (r *testReplica) stop() {
	r.once.Do(func() {
		r.srv.Close()
		r.hs.Close()
		r.store.Close()
	})
}

// TestReplicasFailover: two replicas on one PostgreSQL database. Events
// and labels sent to either reach the learner's one owner (the other
// forwards them); budget and ledger read alike on both. The owner is
// killed without cleanup: the other takes the lease within the lease
// time, restores the learner from its last checkpoint and continues;
// the dead owner's late commit is refused by the fencing token. In the
// end every acknowledged event is observed exactly once, no event id is
// acknowledged twice, and the spend stays within the budget.
func TestReplicasFailover(t *testing.T) {
	const ttl = time.Second
	a, b, c := replicaPair(t, ttl)
	if code := c.call(a.base, RoleAdmin, "POST", "/v1/learners", `{"name":"k","dim":2,"config":{"window":1}}`, nil, ""); code != http.StatusCreated {
		t.Fatalf("create: %d", code)
	}
	acked, batch := 0, 0
	seen := map[uint64]bool{}
	ingest := func(r *testReplica) {
		t.Helper()
		var ans ingestAnswer
		if code := c.call(r.base, RoleIngest, "POST", "/v1/learners/k/events", events(20), &ans, fmt.Sprintf("b%d", batch)); code != http.StatusOK {
			t.Fatalf("batch %d via %s: %d", batch, r.base, code)
		}
		for _, res := range ans.Results {
			if res.Event != 0 && seen[res.Event] {
				t.Fatalf("event %d acknowledged twice", res.Event)
			}
			seen[res.Event] = true
		}
		acked += ans.Accepted
		batch++
	}
	labelSome := func(r *testReplica) {
		t.Helper()
		var list requestList
		c.call(r.base, RoleAnnotator, "GET", "/v1/learners/k/requests?limit=3", "", &list, "")
		for _, q := range list.Requests {
			if code := c.call(r.base, RoleAnnotator, "POST", fmt.Sprintf("/v1/learners/k/requests/%d/claim", q.ID), "", nil, ""); code != http.StatusOK {
				t.Fatalf("claim %d via %s: %d", q.ID, r.base, code)
			}
			if code := c.call(r.base, RoleAnnotator, "POST", "/v1/learners/k/labels", fmt.Sprintf(`{"id":%d,"y":1}`, q.ID), nil, ""); code != http.StatusOK {
				t.Fatalf("label %d via %s: %d", q.ID, r.base, code)
			}
		}
	}
	for i := range 6 {
		ingest([]*testReplica{a, b}[i%2])
		labelSome([]*testReplica{b, a}[i%2])
	}
	sameOnBoth := func(rs ...*testReplica) budgetView {
		t.Helper()
		var views []budgetView
		var reps []ledger.Report
		for _, r := range rs {
			var v budgetView
			var rep ledger.Report
			c.call(r.base, RoleOfficer, "GET", "/v1/learners/k/budget", "", &v, "")
			c.call(r.base, RoleOfficer, "GET", "/v1/ledger?learner=k", "", &rep, "")
			v.Queue.OldestAgeSeconds = 0
			views, reps = append(views, v), append(reps, rep)
		}
		for i := 1; i < len(rs); i++ {
			if !reflect.DeepEqual(views[i], views[0]) || !reflect.DeepEqual(reps[i], reps[0]) {
				t.Fatalf("replicas answer differently:\n%+v\n%+v", views[0], views[i])
			}
		}
		return views[0]
	}
	if v := sameOnBoth(a, b); v.Stats.Observed != acked {
		t.Fatalf("observed %d, acknowledged %d", v.Stats.Observed, acked)
	}

	a.srv.mu.RLock()
	stale := a.srv.learners["k"]
	a.srv.mu.RUnlock()
	b.srv.mu.RLock()
	if h := b.srv.learners["k"]; h == nil || h.token != 0 || h.l != nil {
		t.Error("the replica that does not own the learner served it itself, not by forwarding")
	}
	b.srv.mu.RUnlock()
	killed := time.Now()
	a.kill()
	ingest(b) // retried until b takes the lease
	took := time.Since(killed)
	t.Logf("the surviving replica served the learner %v after the owner was killed (lease %v)", took.Round(time.Millisecond), ttl)
	if took > ttl+2*time.Second {
		t.Errorf("takeover took %v, lease time %v", took, ttl)
	}
	// The dead owner's late commit is refused.
	_, err := stale.ingest(parseEvents([]byte(events(5)), false, 2), "late", nil, nil)
	if !errors.Is(err, errFenced) {
		t.Errorf("the stale owner's commit: %v, want it refused by the fencing token", err)
	}
	for range 3 {
		ingest(b)
		labelSome(b)
	}
	v := sameOnBoth(b)
	if v.Stats.Observed != acked {
		t.Fatalf("after failover: observed %d, acknowledged %d", v.Stats.Observed, acked)
	}
	var rep ledger.Report
	c.call(b.base, RoleOfficer, "GET", "/v1/ledger?learner=k", "", &rep, "")
	for _, g := range rep.Groups {
		if g.Epsilon > rep.Meta.Budget.Epsilon+1e-9 {
			t.Errorf("group %s spent ε %v over the budget %v", g.Group, g.Epsilon, rep.Meta.Budget.Epsilon)
		}
	}
	t.Logf("%d events and %d labels acknowledged across the failover", acked, v.Stats.Labelled)
}

// TestReplicasKafkaFailover: both replicas run the Kafka consumer of one
// learner, members of one group. The owner is killed mid-stream (no
// renewals, no answers; its consumer stops once its lease ran out, as
// the replica is stopping): the other replica takes the lease, the
// partitions move to its consumer, which resumes from the offsets stored
// with the events. Every valid event is ingested exactly once.
func TestReplicasKafkaFailover(t *testing.T) {
	brokers, a, b, c := kafkaReplicas(t, 2)
	cfg := KafkaConfig{Brokers: brokers, Topic: "events", Learner: "k"}
	run := func(r *testReplica) (context.CancelFunc, chan error) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- r.srv.RunKafka(ctx, cfg) }()
		return cancel, done
	}
	stopA, doneA := run(a)
	stopB, doneB := run(b)
	defer func() {
		stopB()
		if err := <-doneB; err != nil {
			t.Error(err)
		}
		b.srv.Close()
		b.hs.Close()
		b.store.Close()
		a.store.Close()
	}()
	observed := func() int {
		var v budgetView
		c.call(b.base, RoleOfficer, "GET", "/v1/learners/k/budget", "", &v, "")
		return v.Stats.Observed
	}
	waitFor := func(want int) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for observed() < want && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		time.Sleep(500 * time.Millisecond) // a duplicate, if any, would arrive
		if got := observed(); got != want {
			t.Fatalf("observed %d events, want %d", got, want)
		}
	}
	produce(t, brokers, "events", 0, 100)
	waitFor(90) // every tenth is invalid
	a.kill()
	produce(t, brokers, "events", 100, 100)
	waitFor(180)
	stopA()
	<-doneA
	b.srv.mu.RLock()
	if h := b.srv.learners["k"]; h == nil || h.token < 2 {
		t.Error("the surviving replica did not take the learner over")
	}
	b.srv.mu.RUnlock()
	produce(t, brokers, "events", 200, 50)
	waitFor(225)
}

// TestReplicasCrash: two replicas (child processes, 0.5 s leases unless
// DPAL_REPLICA_LEASE says otherwise) on one
// PostgreSQL database under ingest and labelling through either; one of
// them, at random, is SIGKILLed at a random moment and started again,
// and every few rounds PostgreSQL itself is restarted as a crash would
// (immediate shutdown). After each: the surviving replica serves the
// learner within the lease time (plus slack for a loaded machine), and
// crashState.check's invariants hold — events acknowledged = events
// observed, every acknowledged label there, every release with its
// ledger entry, spend never decreasing. DPAL_REPLICA_KILLS and
// DPAL_PG_RESTARTS set the counts (default 10 and 2; the documented runs
// are 30 and 5, with the 0.5 s lease and with the default 10 s one).
func TestReplicasCrash(t *testing.T) {
	kills, restarts := envInt("DPAL_REPLICA_KILLS", 10), envInt("DPAL_PG_RESTARTS", 2)
	dsn := pgtest.Start(t)
	// The throw-away cluster acknowledges commits before writing their
	// WAL (synchronous_commit off, for speed): a crash of PostgreSQL
	// would lose acknowledged commits, which no deployment should allow.
	// This database's sessions wait for the WAL as PostgreSQL's default
	// does.
	durable(t, dsn)
	tok := crashStore(t, dsn)
	type child struct {
		cmd  *exec.Cmd
		base string
	}
	var reps [2]child
	for i := range reps {
		reps[i].cmd, reps[i].base = startChild(t, dsn)
	}
	defer func() {
		for _, r := range reps {
			r.cmd.Process.Signal(syscall.SIGTERM)
			r.cmd.Wait()
		}
	}()
	s := &crashState{maxSpent: map[string]float64{}, batchSize: 20}
	rnd := rand.New(rand.NewPCG(3, 4))
	lease := crashLease()
	var worst time.Duration
	every := max(kills/max(restarts, 1), 1)
	pgRestarts := 0
	for i := range kills {
		via, victim := rnd.IntN(2), rnd.IntN(2)
		c := &crashClient{t: t, base: reps[via].base, tok: tok}
		s.check(t, c, i)
		s.until = time.Now().Add(time.Duration(100+rnd.IntN(400)) * time.Millisecond)
		if i%every == every-1 && pgRestarts < restarts {
			// PostgreSQL crashes under the load, and comes back.
			loaded := make(chan struct{})
			go func() { s.load(c); close(loaded) }()
			time.Sleep(time.Duration(20+rnd.IntN(80)) * time.Millisecond)
			pgtest.Restart(t)
			pgRestarts++
			<-loaded
			s.check(t, c, i)
			s.until = time.Now().Add(time.Duration(100+rnd.IntN(400)) * time.Millisecond)
		}
		timer := time.AfterFunc(time.Duration(2+rnd.IntN(100))*time.Millisecond, func() { reps[victim].cmd.Process.Signal(syscall.SIGKILL) })
		s.load(c)
		timer.Stop()
		reps[victim].cmd.Process.Signal(syscall.SIGKILL)
		killed := time.Now()
		reps[victim].cmd.Wait()
		// The survivor serves the learner (taking the lease if it was the
		// victim's) within the lease time.
		survivor := &crashClient{t: t, base: reps[1-victim].base, tok: tok}
		if code, err := survivor.call(RoleOfficer, "GET", "/v1/learners/c/budget", "", nil, ""); err != nil || code != http.StatusOK {
			t.Fatalf("round %d: the surviving replica: %d %v", i, code, err)
		}
		worst = max(worst, time.Since(killed))
		reps[victim].cmd, reps[victim].base = startChild(t, dsn)
	}
	s.until = time.Time{}
	s.check(t, &crashClient{t: t, base: reps[0].base, tok: tok}, kills)
	s.check(t, &crashClient{t: t, base: reps[1].base, tok: tok}, kills)
	t.Logf("%d SIGKILLs of a replica, %d PostgreSQL restarts: %d events and %d labels acknowledged; the survivor served the learner at most %v after a kill (lease %v)",
		kills, pgRestarts, s.acked, s.labels, worst.Round(time.Millisecond), lease)
	if worst > lease+2*time.Second {
		t.Errorf("the survivor took %v to serve the learner; the lease is %v", worst, lease)
	}
	if s.acked == 0 || s.labels == 0 {
		t.Error("the load acknowledged nothing")
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// durable makes the sessions of the database dsn names commit only once
// their WAL is written (synchronous_commit on, PostgreSQL's default).
func durable(t *testing.T, dsn string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var db string
	if err := conn.QueryRow(ctx, `SELECT current_database()`).Scan(&db); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `ALTER DATABASE `+pgx.Identifier{db}.Sanitize()+` SET synchronous_commit = on`); err != nil {
		t.Fatal(err)
	}
}

// TestReplicasSearchAndListings: a search population and a learner
// created on one replica are listed, fed, run and reported on the other;
// runs from both replicas concurrently get distinct numbers, and the
// population's spend stays within its budget.
func TestReplicasSearchAndListings(t *testing.T) {
	a, b, c := replicaPair(t, time.Second)
	c.call(a.base, RoleAdmin, "POST", "/v1/learners", `{"name":"k","dim":2}`, nil, "")
	if code := c.call(a.base, RoleAdmin, "POST", "/v1/searches",
		`{"name":"hosts","oracle":"noisy-max","params":{"t_low":1,"t_high":10,"epsilon":0.5},"halting":{"posterior":0.99},"budget":6}`, nil, ""); code != http.StatusCreated {
		t.Fatalf("create search: %d", code)
	}
	if code := c.call(b.base, RoleIngest, "POST", "/v1/searches/hosts/scores", hostScores(), nil, ""); code != http.StatusOK {
		t.Fatalf("scores via the other replica: %d", code)
	}
	var list struct{ Learners []learnerView }
	c.call(b.base, RoleOfficer, "GET", "/v1/learners", "", &list, "")
	if len(list.Learners) != 1 || list.Learners[0].Name != "k" {
		t.Errorf("the other replica lists %+v", list.Learners)
	}
	runs := make(chan int, 40)
	done := make(chan struct{})
	for _, r := range []*testReplica{a, b} {
		go func() {
			defer func() { done <- struct{}{} }()
			for range 20 {
				var run searchRun
				req, _ := http.NewRequest("POST", r.base+"/v1/searches/hosts/runs", nil)
				req.Header.Set("Authorization", "Bearer "+c.tok[RoleAdmin])
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return
				}
				code := resp.StatusCode
				if code == http.StatusOK {
					jsonDecode(resp, &run)
					runs <- run.Run
				}
				resp.Body.Close()
				if code != http.StatusOK {
					return // the budget is spent
				}
			}
		}()
	}
	<-done
	<-done
	close(runs)
	seen := map[int]bool{}
	for n := range runs {
		if seen[n] {
			t.Errorf("run number %d given twice", n)
		}
		seen[n] = true
	}
	var ga, gb struct{ Runs []searchRun }
	c.call(a.base, RoleOfficer, "GET", "/v1/searches/hosts", "", &ga, "")
	c.call(b.base, RoleOfficer, "GET", "/v1/searches/hosts", "", &gb, "")
	if len(ga.Runs) != len(seen) || len(gb.Runs) != len(seen) {
		t.Errorf("%d and %d runs stored, %d answered", len(ga.Runs), len(gb.Runs), len(seen))
	}
	var ra, rb ledger.Report
	c.call(a.base, RoleOfficer, "GET", "/v1/ledger?search=hosts", "", &ra, "")
	c.call(b.base, RoleOfficer, "GET", "/v1/ledger?search=hosts", "", &rb, "")
	if !reflect.DeepEqual(ra, rb) || len(ra.Groups) != 1 || ra.Groups[0].Epsilon > 6+1e-9 {
		t.Errorf("ledgers differ or overspend: %+v / %+v", ra.Groups, rb.Groups)
	}
}

func jsonDecode(resp *http.Response, v any) {
	b, _ := io.ReadAll(resp.Body)
	_ = jsonUnmarshal(b, v)
}

// TestReplicasSpreadLearners: learners created through one replica are
// owned by the replica that each one's first request reaches, not all by
// the creator; a write-only commit of a replica whose lease was taken
// is refused by the fence, on the one-round-trip path too.
func TestReplicasSpreadLearners(t *testing.T) {
	a, b, c := replicaPair(t, 5*time.Second)
	for _, name := range []string{"s0", "s1"} {
		if code := c.call(a.base, RoleAdmin, "POST", "/v1/learners", `{"name":"`+name+`","dim":2}`, nil, ""); code != http.StatusCreated {
			t.Fatalf("create %s: %d", name, code)
		}
	}
	a.srv.mu.RLock()
	stale := a.srv.learners["s1"] // the creator's, under the creation's token
	a.srv.mu.RUnlock()
	for i, r := range []*testReplica{a, b} {
		name := fmt.Sprintf("s%d", i)
		if code := c.call(r.base, RoleIngest, "POST", "/v1/learners/"+name+"/events", events(3), nil, "k-"+name); code != http.StatusOK {
			t.Fatalf("events of %s via %s: %d", name, r.base, code)
		}
	}
	for _, tc := range []struct {
		r       *testReplica
		learner string
		owns    bool
	}{{a, "s0", true}, {b, "s0", false}, {a, "s1", false}, {b, "s1", true}} {
		if _, ok := tc.r.srv.rep.owned(tc.learner); ok != tc.owns {
			t.Errorf("%s owns %s: %v, want %v", tc.r.base, tc.learner, ok, tc.owns)
		}
	}
	err := stale.updateWrites(func(tx kvTx) error { return bucket(tx, "s1", subIdem).Put([]byte("late"), []byte("{}")) })
	if !errors.Is(err, errFenced) {
		t.Errorf("the creator's late write-only commit: %v, want it refused by the fence", err)
	}
	if v, err := readOne(a.store.db, []byte("s1"+subIdem), []byte("late")); err != nil || v != nil {
		t.Errorf("the refused commit stored %q (%v)", v, err)
	}
}

// TestReplicasForwardCache: a replica that forwarded a request remembers
// the owner for a tenth of the lease time (no lease lookup per forwarded
// request), forgets it when the owner does not answer, and then takes
// over within the lease time.
func TestReplicasForwardCache(t *testing.T) {
	const ttl = time.Second
	a, b, c := replicaPair(t, ttl)
	if code := c.call(a.base, RoleAdmin, "POST", "/v1/learners", `{"name":"k","dim":2}`, nil, ""); code != http.StatusCreated {
		t.Fatalf("create: %d", code)
	}
	for i, r := range []*testReplica{a, b, b} {
		if code := c.call(r.base, RoleIngest, "POST", "/v1/learners/k/events", events(3), nil, fmt.Sprintf("f%d", i)); code != http.StatusOK {
			t.Fatalf("batch %d via %s: %d", i, r.base, code)
		}
	}
	known := func() (knownOwner, bool) { // whatever its deadline: the machine may be slow
		b.srv.rep.mu.Lock()
		defer b.srv.rep.mu.Unlock()
		o, ok := b.srv.rep.owners["k"]
		return o, ok
	}
	if o, ok := known(); !ok || o.addr != a.base {
		t.Fatalf("after forwarding, b knows the owner as %q (%v), want %s", o.addr, ok, a.base)
	}
	killed := time.Now()
	a.kill()
	req, _ := http.NewRequest("POST", b.base+"/v1/learners/k/events", strings.NewReader(events(3)))
	req.Header.Set("Authorization", "Bearer "+c.tok[RoleIngest])
	req.Header.Set("Idempotency-Key", "f3")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway || resp.Header.Get("Retry-After") == "" {
		t.Errorf("forwarding to the dead owner: %d, want 502 with Retry-After", resp.StatusCode)
	}
	if o, ok := known(); ok {
		t.Errorf("b still forwards to %s, which did not answer", o.addr)
	}
	if code := c.call(b.base, RoleIngest, "POST", "/v1/learners/k/events", events(3), nil, "f3"); code != http.StatusOK {
		t.Fatalf("after the owner died: %d", code)
	}
	if took := time.Since(killed); took > ttl+2*time.Second {
		t.Errorf("takeover took %v, lease time %v", took, ttl)
	}
	if _, ok := b.srv.rep.owned("k"); !ok {
		t.Error("b does not own the learner after the takeover")
	}
}
