package service

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Replicas on one shared (PostgreSQL) store split the learners between
// them: a learner — its model, buffers and open requests, which live in
// one process's memory — is owned by one replica at a time, through a
// lease row in table service_leases with an expiry and a fencing token.
// Any replica accepts any request: the owner serves it; another replica
// takes the lease if it is free or expired (restoring the learner from
// its last committed checkpoint), else forwards the request to the
// owner's advertised URL as a reverse proxy (remembering the owner for a
// tenth of the lease time, over kept-alive connections). Every
// transaction that changes a learner checks, in the same transaction and
// under a share lock of the lease row, that the lease still carries the
// token this replica took: once another replica has taken it, a stale
// owner's late commit is refused, and the stale owner drops the learner.
//
// Why a proxy, not 307: a redirect to another host makes common clients
// (Go's net/http, curl without --location-trusted) drop the
// Authorization header, and re-send a large events body; the owner's
// address may also be reachable only from the replicas. The forwarding
// replica adds forwardedHeader, and a forwarded request is never
// forwarded again (a replica that is not the owner answers it 503 with
// Retry-After): no loops while a lease moves.

// forwardedHeader marks a request one replica forwarded to another.
const forwardedHeader = "X-Dpal-Forwarded-By"

// DefaultLeaseTTL is how long a learner's lease lasts without renewal:
// the time another replica waits before taking over from a dead owner.
const DefaultLeaseTTL = 10 * time.Second

// replica is this process's part in a group of replicas.
type replica struct {
	id   string // unique per process: the advertised URL and random bits
	addr string // the advertised URL
	ttl  time.Duration
	kv   *pgKV
	log  *slog.Logger

	mu      sync.Mutex
	held    map[string]heldLease // learner → the lease this replica holds
	proxies map[string]*httputil.ReverseProxy
	owners  map[string]knownOwner // learner → the owner requests were last forwarded to
	stop    chan struct{}
	stopped sync.Once
	done    chan struct{}
}

// heldLease is a lease as this replica knows it: its fencing token, and
// a local deadline before the database's expiry (the lease was taken or
// renewed after start, so the database's expiry is later than
// start + ttl; a fifth of ttl is left for clock rates and latency).
type heldLease struct {
	token int64
	until time.Time
}

// newReplica starts renewing the leases it will hold.
func newReplica(kv *pgKV, advertise string, ttl time.Duration, log *slog.Logger) (*replica, error) {
	if ttl <= 0 {
		ttl = DefaultLeaseTTL
	}
	if advertise != "" {
		u, err := url.Parse(advertise)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("advertise %q: want http://HOST:PORT or https://HOST:PORT", advertise)
		}
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	rp := &replica{id: advertise + "#" + hex.EncodeToString(b[:]), addr: advertise, ttl: ttl, kv: kv, log: log,
		held: map[string]heldLease{}, proxies: map[string]*httputil.ReverseProxy{}, owners: map[string]knownOwner{},
		stop: make(chan struct{}), done: make(chan struct{})}
	go rp.renewLoop()
	return rp, nil
}

// abandon stops renewing and leaves the leases to expire, as a replica
// that dies would: other replicas take over after the lease time.
func (rp *replica) abandon() {
	rp.stopped.Do(func() { close(rp.stop) })
	<-rp.done
}

// close stops renewing and releases the leases held, so that other
// replicas take over at once (a graceful shutdown).
func (rp *replica) close() {
	rp.abandon()
	rp.closeIdle()
	rp.mu.Lock()
	names := make([]string, 0, len(rp.held))
	for n := range rp.held {
		names = append(names, n)
	}
	rp.held = map[string]heldLease{}
	rp.mu.Unlock()
	rp.expire(names)
}

// closeIdle closes the idle connections to other replicas: an owner
// shutting down waits for connections that carried no request yet (the
// transport may dial one it then does not use) as for busy ones.
func (rp *replica) closeIdle() {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	for _, p := range rp.proxies {
		if tr, ok := p.Transport.(*http.Transport); ok {
			tr.CloseIdleConnections()
		}
	}
}

// release gives up the lease of learner at once: the next request for it
// that reaches any replica takes it (this one keeps its token if it is
// that replica; another takes a new one, and this one's commits are then
// refused by the fence).
func (rp *replica) release(learner string) {
	rp.mu.Lock()
	delete(rp.held, learner)
	rp.mu.Unlock()
	rp.expire([]string{learner})
}

// expire ends this replica's leases of names in the database.
func (rp *replica) expire(names []string) {
	if len(names) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := rp.kv.pool.Exec(ctx, `UPDATE service_leases SET expires = now() WHERE owner = $1 AND learner = ANY($2)`, rp.id, names)
	if err != nil {
		rp.log.Warn("releasing the leases failed; other replicas take over when they expire", "err", err)
	}
}

// owned returns the token of the lease held on learner, if it is still
// within its local deadline.
func (rp *replica) owned(learner string) (int64, bool) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	l, ok := rp.held[learner]
	if !ok || time.Now().After(l.until) {
		return 0, false
	}
	return l.token, true
}

// acquire takes or renews the lease of learner: it succeeds when the
// lease is free, expired, or this replica's. A lease another replica
// took gets a token one above the last (the fencing token); this
// replica's own keeps its token. When another replica holds it, owner is
// that replica's advertised URL.
func (rp *replica) acquire(learner string) (token int64, owner string, err error) {
	select {
	case <-rp.stop:
		return 0, "", errReplicaStopping
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), pgOpTimeout)
	defer cancel()
	start := time.Now()
	err = rp.kv.pool.QueryRow(ctx, `INSERT INTO service_leases AS l (learner, owner, address, token, expires)
		VALUES ($1, $2, $3, 1, now() + $4 * interval '1 millisecond')
		ON CONFLICT (learner) DO UPDATE SET owner = EXCLUDED.owner, address = EXCLUDED.address,
			token = CASE WHEN l.owner = EXCLUDED.owner THEN l.token ELSE l.token + 1 END,
			expires = EXCLUDED.expires
		WHERE l.owner = EXCLUDED.owner OR l.expires < now()
		RETURNING token`, learner, rp.id, rp.addr, rp.ttl.Milliseconds()).Scan(&token)
	if errors.Is(err, pgx.ErrNoRows) {
		err = rp.kv.pool.QueryRow(ctx, `SELECT address FROM service_leases WHERE learner = $1`, learner).Scan(&owner)
		if errors.Is(err, pgx.ErrNoRows) { // released meanwhile: the next call takes it
			return 0, "", errRetryLease
		}
		return 0, owner, err
	}
	if err != nil {
		return 0, "", err
	}
	rp.mu.Lock()
	rp.held[learner] = heldLease{token: token, until: start.Add(rp.ttl - rp.ttl/5)}
	rp.mu.Unlock()
	return token, "", nil
}

var errReplicaStopping = errors.New("the replica is stopping")

// watch calls lost once this replica no longer holds the lease of key (a
// learner's name or a project's key; checked every tenth of the lease
// time), or when ctx ends.
func (rp *replica) watch(ctx context.Context, key string, lost func()) {
	t := time.NewTicker(rp.ttl / 10)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, ok := rp.owned(key); !ok {
			lost()
			return
		}
	}
}

var errRetryLease = &apiError{status: http.StatusServiceUnavailable, msg: "the owner of the learner or project is changing; retry"}

// renewLoop renews the leases held every third of the lease time, and
// drops those another replica took.
func (rp *replica) renewLoop() {
	defer close(rp.done)
	t := time.NewTicker(rp.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-rp.stop:
			return
		case <-t.C:
		}
		rp.renew()
	}
}

func (rp *replica) renew() {
	rp.mu.Lock()
	names := make([]string, 0, len(rp.held))
	for n := range rp.held {
		names = append(names, n)
	}
	rp.mu.Unlock()
	if len(names) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), rp.ttl/3)
	defer cancel()
	start := time.Now()
	rows, err := rp.kv.pool.Query(ctx, `UPDATE service_leases SET expires = now() + $3 * interval '1 millisecond'
		WHERE owner = $1 AND learner = ANY($2) RETURNING learner, token`, rp.id, names, rp.ttl.Milliseconds())
	if err != nil {
		rp.log.Warn("renewing the leases failed", "err", err)
		return
	}
	renewed := map[string]int64{}
	for rows.Next() {
		var n string
		var tok int64
		if rows.Scan(&n, &tok) == nil {
			renewed[n] = tok
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		rp.log.Warn("renewing the leases failed", "err", err)
		return
	}
	rp.mu.Lock()
	defer rp.mu.Unlock()
	for _, n := range names {
		l, ok := rp.held[n]
		switch tok, got := renewed[n]; {
		case !ok:
		case got && tok == l.token:
			rp.held[n] = heldLease{token: tok, until: start.Add(rp.ttl - rp.ttl/5)}
		default:
			delete(rp.held, n)
			rp.log.Warn("lost the lease of a learner to another replica", "learner", n)
		}
	}
}

// fence is the check every transaction that changes a learner makes: the
// lease still carries token and is this replica's. The share lock it
// takes makes another replica's takeover wait until the transaction
// ends.
func (rp *replica) fence(learner string, token int64) func(kvTx) error {
	return func(tx kvTx) error {
		t, ok := tx.(*pgTx)
		if !ok {
			return errors.New("store: fencing needs the shared store")
		}
		// Sent with the writes (pgTx.flush), before them: the share lock
		// is taken before any row is written, and a refused check undoes
		// the transaction, at no round trip of its own.
		t.deferCheck(pgCheck{
			sql: `SELECT 1 / count(*) FROM (SELECT 1 FROM service_leases
				WHERE learner = $1 AND owner = $2 AND token = $3 FOR SHARE) AS lease`,
			args:    []any{learner, rp.id, token},
			refused: fmt.Errorf("learner %s: %w (its token was %d)", learner, errFenced, token),
		})
		return nil
	}
}

// errFenced refuses a stale owner's commit.
var errFenced = errors.New("another replica owns the learner now: this replica's commit is refused")

// knownOwner is the owner a lease lookup named for a learner, trusted
// until a local deadline: a stream of forwarded requests costs one
// lookup per tenth of the lease time, not one each (a lookup locks the
// lease row, waiting for the owner's commits that share-lock it, flushes
// PostgreSQL's WAL at its end and takes two round trips).
type knownOwner struct {
	addr  string
	until time.Time
}

// ownerOf returns the owner of learner that requests were last forwarded
// to, if that was less than a tenth of the lease time ago. Routing only:
// the owner serves a forwarded request only while it holds the lease
// (route), and every commit is fenced, so a stale entry costs a retry,
// never a double spend. A stopping replica forwards nothing new (acquire
// answers it).
func (rp *replica) ownerOf(learner string) (string, bool) {
	select {
	case <-rp.stop:
		return "", false
	default:
	}
	rp.mu.Lock()
	defer rp.mu.Unlock()
	o, ok := rp.owners[learner]
	if !ok || time.Now().After(o.until) {
		return "", false
	}
	return o.addr, true
}

// forwarded remembers that a lease lookup named addr the owner of learner.
func (rp *replica) forwarded(learner, addr string) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	rp.owners[learner] = knownOwner{addr: addr, until: time.Now().Add(rp.ttl / 10)}
}

// forgetOwner drops every learner's owner at addr: it did not answer, or
// answered that it does not own a learner (any more); the next request
// looks the lease up.
func (rp *replica) forgetOwner(addr string) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	for l, o := range rp.owners {
		if o.addr == addr {
			delete(rp.owners, l)
		}
	}
}

// proxyIdleConns is how many idle connections a replica keeps to each
// other replica: net/http's default of 2 makes all but two of the
// concurrent forwarded requests dial a connection and close it after one
// request.
const proxyIdleConns = 64

// proxyBuffers are the buffers the proxies copy answers through (without
// a pool, httputil.ReverseProxy allocates 32 KiB per request).
var proxyBuffers = &bufferPool{sync.Pool{New: func() any { return new([32 << 10]byte) }}}

type bufferPool struct{ p sync.Pool }

func (b *bufferPool) Get() []byte { return b.p.Get().(*[32 << 10]byte)[:] }

func (b *bufferPool) Put(v []byte) {
	if len(v) == 32<<10 {
		b.p.Put((*[32 << 10]byte)(v))
	}
}

// proxy forwards r to the owner at addr.
func (rp *replica) proxy(addr string) (*httputil.ReverseProxy, error) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if p, ok := rp.proxies[addr]; ok {
		return p, nil
	}
	target, err := url.Parse(addr)
	if err != nil || target.Host == "" {
		return nil, fmt.Errorf("the owner's advertised address %q is not a URL (start replicas with --advertise)", addr)
	}
	// A dead owner's host may not refuse but drop connections: give up
	// dialling it well within a lease time, not the default 30 s.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Timeout: min(rp.ttl/2, 5*time.Second), KeepAlive: 30 * time.Second}).DialContext
	tr.MaxIdleConnsPerHost = proxyIdleConns
	tr.MaxIdleConns = max(tr.MaxIdleConns, proxyIdleConns)
	p := &httputil.ReverseProxy{
		Transport:  tr,
		BufferPool: proxyBuffers,
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Header.Set(forwardedHeader, rp.addr)
		},
		ModifyResponse: func(resp *http.Response) error {
			if resp.StatusCode == http.StatusServiceUnavailable {
				rp.forgetOwner(addr) // not (or no longer) the owner
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			rp.forgetOwner(addr)
			rp.log.Warn("forwarding to the owner failed", "owner", addr, "err", err)
			w.Header().Set("Retry-After", "1")
			writeError(w, &apiError{status: http.StatusBadGateway, msg: "the owner " + addr + " of the learner or project did not answer; retry (another replica takes over when its lease expires)"})
		},
	}
	rp.proxies[addr] = p
	return p, nil
}

// routedLease is the lease key of what a request concerns, "" for none:
// the learner of a /v1/learners/{name}/… path, of ?learner= on the
// ledger, of a record id; the project of a /v1/projects/{name}/… path
// (projectlease.go).
func (s *Server) routedLease(pattern string, r *http.Request) string {
	switch {
	case strings.Contains(pattern, "/v1/projects/{name}"):
		return projectLease(r.PathValue("name"))
	case strings.Contains(pattern, "/v1/learners/{name}"):
		return r.PathValue("name")
	case pattern == "GET /v1/ledger":
		return r.URL.Query().Get("learner")
	case strings.Contains(pattern, "/v1/records/{id}"):
		ref, err := s.store.lookupRecord(r.PathValue("id"))
		if err != nil {
			return ""
		}
		return ref.Learner
	}
	return ""
}

// route serves r here when this replica owns its learner or project
// (taking a free or expired lease, and restoring what it covers when the
// lease is new to it), and otherwise forwards it to the owner; it
// reports whether it answered r.
func (s *Server) route(w http.ResponseWriter, r *http.Request, pattern string) bool {
	name := s.routedLease(pattern, r)
	if name == "" || !s.leaseExists(name) {
		return false // the handler answers (404 for a learner no replica has)
	}
	forwarded := r.Header.Get(forwardedHeader) != ""
	owner, err := s.locate(name, !forwarded)
	switch {
	case err != nil:
		w.Header().Set("Retry-After", "1")
		writeError(w, cmpOr(asAPIError(err), &apiError{status: http.StatusServiceUnavailable, msg: "taking the lease of the learner or project failed; retry"}))
		if !errors.As(err, new(*apiError)) {
			s.log.Error("taking a lease failed", "lease", name, "err", err)
		}
		return true
	case owner == "":
		return false
	case forwarded || owner == s.rep.addr:
		w.Header().Set("Retry-After", "1")
		writeError(w, &apiError{status: http.StatusServiceUnavailable, msg: "this replica does not own the learner or project (its owner is " + owner + "); retry"})
		return true
	}
	return s.forward(w, r, pattern, owner)
}

// locate says where lease name is served: "" here (its lease held, or
// free or expired and taken now; what it covers is adopted), else the
// owner's address. With cached, an owner remembered from an earlier
// call answers without asking the database, and an owner the database
// names (another replica) is remembered for a tenth of the lease time
// (rp.forwarded; a hit does not extend it).
func (s *Server) locate(name string, cached bool) (owner string, err error) {
	if tok, ok := s.rep.owned(name); ok {
		s.adoptLease(name, tok)
		return "", nil
	}
	if cached {
		if owner, ok := s.rep.ownerOf(name); ok {
			return owner, nil
		}
	}
	tok, owner, err := s.rep.acquire(name)
	switch {
	case err != nil:
	case owner == "":
		s.adoptLease(name, tok)
	case cached && owner != s.rep.addr:
		s.rep.forwarded(name, owner)
	}
	return owner, err
}

// forward has the owner at addr answer r (of route pattern); it reports
// that r was answered.
func (s *Server) forward(w http.ResponseWriter, r *http.Request, pattern, addr string) bool {
	p, err := s.rep.proxy(addr)
	if err != nil {
		writeError(w, err)
		return true
	}
	s.streamForward(w, r, pattern)
	p.ServeHTTP(w, r)
	return true
}

func asAPIError(err error) error {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	return nil
}

// learnerExists reports whether the store holds learner name, hosting a
// learner another replica created.
func (s *Server) learnerExists(name string) bool {
	s.mu.RLock()
	_, ok := s.learners[name]
	s.mu.RUnlock()
	if ok {
		return true
	}
	m, ok, err := s.store.learnerMeta(name)
	if err != nil || !ok {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.learners[name]; !ok {
		h := newHosted(s.store, m, nil)
		h.log, h.met = s.log, s.met
		h.fence = s.rep.fence(name, -1) // never valid: adopt makes the owner's
		s.learners[name] = h
	}
	return true
}

// adopt makes the hosted learner name the one of lease token: a learner
// held under another token (a lease lost and taken again, or never
// held), or broken (a commit failed, e.g. while PostgreSQL restarted: its
// memory may be ahead of the store), is replaced by a shell restored
// from the last committed checkpoint on its first call. The old one
// refuses everything, so it commits nothing more.
func (s *Server) adopt(name string, token int64) {
	s.mu.RLock()
	h := s.learners[name]
	s.mu.RUnlock()
	if h != nil && h.token == token && !h.isBroken.Load() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if h = s.learners[name]; h != nil && h.token == token && !h.isBroken.Load() {
		return
	}
	m, ok, err := s.store.learnerMeta(name)
	if err != nil || !ok {
		return // the handler fails on its own
	}
	nh := newHosted(s.store, m, nil)
	nh.log, nh.met = s.log, s.met
	nh.token, nh.fence = token, s.rep.fence(name, token)
	s.learners[name] = nh
	s.log.Info("took the learner's lease; it is restored from its last checkpoint", "learner", name, "token", token)
}

// syncShared hosts the learners and search populations that other
// replicas created since this one started (as shells: a learner is
// restored only where its lease is taken), so that listings, the ledger
// and the metrics answer alike on every replica.
func (s *Server) syncShared() error {
	learners, err := s.store.loadLearners()
	if err != nil {
		return err
	}
	s.mu.RLock()
	var newL []string
	for name := range learners {
		if _, ok := s.learners[name]; !ok {
			newL = append(newL, name)
		}
	}
	s.mu.RUnlock()
	for _, name := range newL {
		s.learnerExists(name)
	}
	searches, err := s.store.loadSearchMetas()
	if err != nil {
		return err
	}
	for _, m := range searches {
		s.mu.RLock()
		_, ok := s.searches[m.Name]
		s.mu.RUnlock()
		if ok {
			continue
		}
		p, err := s.store.openSearch(m)
		if err != nil {
			return err
		}
		s.mu.Lock()
		if _, ok := s.searches[m.Name]; !ok {
			s.searches[m.Name] = p
		}
		s.mu.Unlock()
	}
	return nil
}
