package service

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dpal-dev/dpal/dp/ledger"
)

// Options configure a Server. The zero value works.
type Options struct {
	// MaxEventsBody bounds an events body (default 16 MiB); other bodies
	// are bounded by MaxBody (default 64 KiB).
	MaxEventsBody, MaxBody int64
	// Log is the operator log (default slog.Default()).
	Log *slog.Logger
	// Out receives the admin token a fresh store creates (default: discarded).
	Out io.Writer
	// RatePerToken and Burst limit each token's requests (defaults 2000/s
	// and 4000); a request over the limit gets 429.
	RatePerToken float64
	Burst        int
	// MaxConns and MaxConnsPerIP bound the open connections, in all and
	// from one address (defaults 1024 and 128); a connection past either
	// is answered 503 and closed at once. Serve applies them.
	MaxConns, MaxConnsPerIP int
	// BodyTimeout bounds the reading of a request body (default 10 s),
	// counted from when the handler starts: a client that stalls in its
	// body gets 408 and loses the connection.
	BodyTimeout time.Duration
	// TLS, when set, makes Serve speak HTTPS only (its certificate, its
	// minimum version); nil serves plain HTTP.
	TLS *tls.Config
	// Advertise is the URL other replicas of a shared store forward this
	// replica's learners' requests to (replica.go); LeaseTTL is how long
	// a learner's lease lasts unrenewed (default DefaultLeaseTTL). Both
	// are unused with a store of one process.
	Advertise string
	LeaseTTL  time.Duration
}

// Server serves the learners of one Store.
type Server struct {
	store *Store
	opts  Options
	log   *slog.Logger
	met   *metrics
	auth  *authenticator
	lim   *limiters
	mux   *http.ServeMux

	rep      *replica // with a shared store
	mu       sync.RWMutex
	learners map[string]*hosted
	searches map[string]*searchPop
	projects *projectHost
	routes   []Route // registered, for the OpenAPI check
}

// New loads the store's tokens and learners. A store without an admin
// token gets one, written once to opts.Out.
func New(store *Store, opts Options) (*Server, error) {
	if opts.MaxEventsBody <= 0 {
		opts.MaxEventsBody = 16 << 20
	}
	if opts.MaxBody <= 0 {
		opts.MaxBody = 64 << 10
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	if opts.MaxConns <= 0 {
		opts.MaxConns = defaultMaxConns
	}
	if opts.MaxConnsPerIP <= 0 {
		opts.MaxConnsPerIP = defaultMaxConnsPerIP
	}
	if opts.BodyTimeout <= 0 {
		opts.BodyTimeout = defaultBodyTimeout
	}
	s := &Server{store: store, opts: opts, log: opts.Log, met: newMetrics(), auth: &authenticator{store: store},
		lim: newLimiters(opts.RatePerToken, opts.Burst), mux: http.NewServeMux()}
	if err := s.firstAdmin(); err != nil {
		return nil, err
	}
	if err := s.auth.reload(); err != nil {
		return nil, err
	}
	learners, err := store.loadLearners()
	if err != nil {
		return nil, err
	}
	if pg, ok := store.db.(*pgKV); ok {
		if s.rep, err = newReplica(pg, opts.Advertise, opts.LeaseTTL, opts.Log); err != nil {
			return nil, err
		}
		for name, h := range learners {
			h.fence = s.rep.fence(name, -1) // never valid: route adopts the owner's
		}
	}
	for _, h := range learners {
		h.log, h.met = s.log, s.met
		s.met.masked.WithLabelValues(h.name).Add(float64(h.meta.Masked))
	}
	s.learners = learners
	if s.searches, err = store.loadSearches(); err != nil {
		return nil, err
	}
	if s.projects, err = newProjectHost(store, s.log, s.rep); err != nil {
		return nil, err
	}
	s.routeAll()
	return s, nil
}

// firstAdmin creates and prints an admin token for a store that has none.
func (s *Server) firstAdmin() error {
	tok, made, err := s.store.createToken(RoleAdmin, true)
	if err != nil || !made {
		return err
	}
	fmt.Fprintf(s.opts.Out, "dpal serve: new store %s: admin token (shown once, keep it secret):\n%s\n", s.store.Path(), tok)
	s.log.Info("created the first admin token", "token_id", TokenID(tok))
	return nil
}

// Handler is the server's HTTP handler.
func (s *Server) Handler() http.Handler { return s.mux }

// Route is one registered endpoint.
type Route struct {
	// Pattern is "METHOD /path" (net/http's pattern syntax).
	Pattern string
	// Roles are the roles admitted besides admin; none for an endpoint
	// that needs no token.
	Roles []Role
}

// Routes lists the registered endpoints.
func (s *Server) Routes() []Route { return slices.Clone(s.routes) }

// caller is an authenticated request's role and token id.
type caller struct {
	role Role
	who  string // the token's id, never the token
}

type handler func(w http.ResponseWriter, r *http.Request, c caller) error

// handle registers h for pattern, open to roles (and admin); no roles
// means no authentication.
func (s *Server) handle(pattern string, h handler, roles ...Role) {
	s.routes = append(s.routes, Route{Pattern: pattern, Roles: roles})
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		defer func() { s.met.observe(pattern, sw.code, start) }()
		var c caller
		if len(roles) > 0 {
			role, who, ok := s.auth.role(r)
			switch {
			case !ok:
				sw.Header().Set("WWW-Authenticate", `Bearer realm="dpal"`)
				writeError(sw, &apiError{status: http.StatusUnauthorized, msg: "missing or unknown bearer token"})
				return
			case !admits(role, roles):
				writeError(sw, &apiError{status: http.StatusForbidden, msg: fmt.Sprintf("the %s role may not call this endpoint", role)})
				return
			case !s.lim.allow(who):
				sw.Header().Set("Retry-After", "1")
				writeError(sw, &apiError{status: http.StatusTooManyRequests, msg: "rate limit of this token exceeded"})
				return
			}
			c = caller{role: role, who: who}
			if s.rep != nil && s.route(sw, r, pattern) {
				return
			}
		}
		if err := h(sw, r, c); err != nil {
			if errors.Is(err, errFenced) {
				// Another replica took the lease meanwhile: the next try
				// reaches the new owner.
				err = errLeaseMoved
			}
			switch statusOf(err) {
			case http.StatusInternalServerError:
				s.log.Error("request failed", "route", pattern, "err", err)
				err = &apiError{status: http.StatusInternalServerError, msg: "internal error (see the server log)"}
			case http.StatusServiceUnavailable:
				if errors.Is(err, errStoreUnavailable) {
					s.log.Warn("request failed; the client may retry", "route", pattern, "err", err)
				}
				if sw.Header().Get("Retry-After") == "" {
					sw.Header().Set("Retry-After", "1")
				}
			}
			writeError(sw, err)
		}
	})
}

// errLeaseMoved answers a write that the fence refused: another replica
// took the lease of what it changes.
var errLeaseMoved = &apiError{status: http.StatusServiceUnavailable, msg: "another replica took over what this request changes; retry"}

type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) { w.code = code; w.ResponseWriter.WriteHeader(code) }

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func writeError(w http.ResponseWriter, err error) {
	body := errorBody{Error: err.Error()}
	var ae *apiError
	if errors.As(err, &ae) {
		body = errorBody{Error: ae.msg, Field: ae.field}
	}
	writeJSON(w, statusOf(err), body)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func writeRaw(w http.ResponseWriter, code int, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(b)
	_, _ = w.Write([]byte{'\n'})
}

func (s *Server) routeAll() {
	all := []Role{RoleIngest, RoleAnnotator, RoleOfficer}
	s.handle("GET /healthz", func(w http.ResponseWriter, _ *http.Request, _ caller) error {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
		return nil
	})
	s.handle("GET /readyz", s.ready)
	s.handle("GET /openapi.json", func(w http.ResponseWriter, _ *http.Request, _ caller) error {
		w.Header().Set("Content-Type", "application/json")
		_, err := w.Write(openAPI)
		return err
	})
	s.handle("GET /ui/", func(w http.ResponseWriter, r *http.Request, _ caller) error {
		page().ServeHTTP(w, r)
		return nil
	})
	s.handle("GET /{$}", func(w http.ResponseWriter, r *http.Request, _ caller) error {
		http.Redirect(w, r, "/ui/", http.StatusFound)
		return nil
	})
	s.handle("GET /metrics", func(w http.ResponseWriter, r *http.Request, _ caller) error {
		if err := s.queueGauges(); err != nil {
			return err
		}
		s.met.handler().ServeHTTP(w, r)
		return nil
	}, RoleOfficer)
	s.handle("GET /v1/whoami", func(w http.ResponseWriter, _ *http.Request, c caller) error {
		writeJSON(w, http.StatusOK, map[string]string{"role": string(c.role), "token_id": c.who})
		return nil
	}, all...)
	s.handle("POST /v1/learners", s.createLearner, RoleAdmin)
	s.handle("GET /v1/learners", s.listLearners, RoleOfficer, RoleAnnotator)
	s.handle("POST /v1/learners/{name}/events", s.ingest, RoleIngest)
	s.handle("GET /v1/learners/{name}/requests", s.requests, RoleAnnotator)
	s.handle("POST /v1/learners/{name}/requests/{id}/claim", s.claim, RoleAnnotator)
	s.handle("POST /v1/learners/{name}/labels", s.label, RoleAnnotator)
	s.handle("GET /v1/learners/{name}/releases", listing(s, "releases", (*hosted).releases), RoleOfficer)
	s.handle("GET /v1/learners/{name}/model", learnerGet(s, (*hosted).model), RoleOfficer)
	s.handle("GET /v1/learners/{name}/budget", learnerGet(s, (*hosted).budget), RoleOfficer)
	s.handle("GET /v1/records/{id}/epsilon", s.recordEpsilon, RoleOfficer)
	s.handle("GET /v1/ledger", s.ledger, RoleOfficer)
	s.handle("POST /v1/searches", s.createSearch, RoleAdmin)
	s.handle("GET /v1/searches/{name}", s.getSearch, RoleOfficer)
	s.handle("POST /v1/searches/{name}/scores", s.addScores, RoleIngest)
	s.handle("POST /v1/searches/{name}/runs", s.runSearch, RoleAdmin)
	s.handle("POST /v1/tokens", s.createToken, RoleAdmin)
	s.handle("DELETE /v1/tokens/{id}", s.revokeToken, RoleAdmin)
	s.routeProjects()
	s.routePeers()
}

// createToken makes a token of the role in the body ({"role": "ingest"})
// and answers it with its id: the only time the token is shown.
func (s *Server) createToken(w http.ResponseWriter, r *http.Request, _ caller) error {
	body, err := s.readBody(w, r, s.opts.MaxBody)
	if err != nil {
		return err
	}
	var req struct {
		Role string `json:"role"`
	}
	if err := decodeStrict(body, &req); err != nil {
		return err
	}
	role, err := ParseRole(req.Role)
	if err != nil {
		return badField("role", "want ingest, annotator, officer or admin")
	}
	tok, err := s.store.CreateToken(role)
	if err == nil {
		err = s.auth.reload()
	}
	if err != nil {
		return err
	}
	s.log.Info("token created", "role", role, "token_id", TokenID(tok))
	writeJSON(w, http.StatusCreated, map[string]string{"token": tok, "id": TokenID(tok), "role": string(role)})
	return nil
}

// revokeToken deletes a token by its id; it stops working at once.
func (s *Server) revokeToken(w http.ResponseWriter, r *http.Request, c caller) error {
	id := r.PathValue("id")
	if id == c.who {
		return badField("id", "a token cannot revoke itself")
	}
	if err := s.store.RevokeToken(id); err != nil {
		return &apiError{status: http.StatusNotFound, field: "id", msg: err.Error()}
	}
	if err := s.auth.reload(); err != nil {
		return err
	}
	s.log.Info("token revoked", "token_id", id)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) ready(w http.ResponseWriter, _ *http.Request, _ caller) error {
	if err := s.store.db.View(func(kvTx) error { return nil }); err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "store unavailable"})
		return nil
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	return nil
}

func (s *Server) learner(r *http.Request) (*hosted, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	h, ok := s.learners[r.PathValue("name")]
	if !ok {
		return nil, errNoLearner
	}
	return h, h.ensure()
}

// learnerView is a learner as GET /v1/learners lists it.
type learnerView struct {
	Name    string    `json:"name"`
	Dim     int       `json:"dim"`
	Created time.Time `json:"created"`
}

// listLearners lists up to ?limit= (≤ 1000, default 1000) learners by
// name after ?after=NAME, with the total count and, when more follow,
// the name to pass as after for the next page. It restores none of them.
func (s *Server) listLearners(w http.ResponseWriter, r *http.Request, _ caller) error {
	after := r.URL.Query().Get("after")
	limit, err := listLimit(r, 1000)
	if err != nil {
		return err
	}
	if s.rep != nil {
		if err := s.syncShared(); err != nil {
			return err
		}
	}
	s.mu.RLock()
	total := len(s.learners)
	var names []string
	for name := range s.learners {
		if name > after {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	out := make([]learnerView, 0, min(limit, len(names)))
	for _, name := range names[:min(limit, len(names))] {
		h := s.learners[name]
		out = append(out, learnerView{Name: name, Dim: h.dim, Created: h.created})
	}
	s.mu.RUnlock()
	page := map[string]any{"learners": out, "total": total}
	if len(names) > limit {
		page["next"] = out[len(out)-1].Name
	}
	writeJSON(w, http.StatusOK, page)
	return nil
}

func (s *Server) createLearner(w http.ResponseWriter, r *http.Request, _ caller) error {
	body, err := s.readBody(w, r, s.opts.MaxBody)
	if err != nil {
		return err
	}
	spec, err := decodeCreate(body)
	if err != nil {
		return err
	}
	if err := s.addLearner(spec); err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, map[string]any{"name": spec.Name, "config": spec.Config, "budget": spec.Budget,
		"max_open_requests": spec.MaxOpen})
	return nil
}

// addLearner creates and hosts a learner.
func (s *Server) addLearner(spec learnerSpec) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.learners[spec.Name]; ok {
		return errExists
	}
	var token int64
	var fence func(kvTx) error
	if s.rep != nil {
		tok, owner, err := s.rep.acquire(spec.Name)
		if err != nil {
			return err
		}
		if owner != "" {
			return errExists // another replica holds it: it exists, or is being created
		}
		token, fence = tok, s.rep.fence(spec.Name, tok)
	}
	h, err := s.store.createLearner(spec, token, fence)
	if err != nil {
		return err
	}
	h.log, h.met = s.log, s.met
	s.learners[spec.Name] = h
	if s.rep != nil {
		// The lease went with the creation only: the replica that the
		// learner's first request reaches takes it, so that learners
		// created through one replica spread over all of them.
		s.rep.release(spec.Name)
	}
	s.log.Info("learner created", "learner", spec.Name, "dim", spec.Config.Dim, "budget", spec.Budget, "max_open_requests", spec.MaxOpen)
	return nil
}

func (s *Server) ingest(w http.ResponseWriter, r *http.Request, _ caller) error {
	h, err := s.learner(r)
	if err != nil {
		return err
	}
	body, err := s.readBody(w, r, s.opts.MaxEventsBody)
	if err != nil {
		return err
	}
	key := r.Header.Get("Idempotency-Key")
	switch {
	case key == "":
		return badField("Idempotency-Key", "required: a retried call without one would feed its records twice while each is charged once (send a fresh key per batch, and the same key when you retry it)")
	case len(key) > 128:
		return badField("Idempotency-Key", "at most 128 bytes")
	}
	oneJSON := strings.HasPrefix(r.Header.Get("Content-Type"), "application/json")
	evs := parseEvents(body, oneJSON, h.meta.Config.Dim)
	if len(evs) == 0 {
		return badField("body", "no events")
	}
	answer, err := h.ingest(evs, key, bodySum(body, oneJSON), nil)
	if err != nil {
		return err
	}
	writeRaw(w, http.StatusOK, answer)
	return nil
}

// listLimits reads ?after= (an id) and ?limit= (default and cap max).
func listLimits(r *http.Request, max int) (uint64, int, error) {
	var after uint64
	if v := r.URL.Query().Get("after"); v != "" {
		a, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, 0, badField("after", "want an unsigned integer")
		}
		after = a
	}
	limit, err := listLimit(r, max)
	return after, limit, err
}

// listLimit reads ?limit= (default and cap max).
func listLimit(r *http.Request, max int) (int, error) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return max, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > max {
		return 0, badField("limit", "want an integer in [1, %d]", max)
	}
	return n, nil
}

// listing is a GET handler that lists up to 1000 items of a learner
// after ?after=, under key.
func listing[T any](s *Server, key string, list func(h *hosted, after uint64, limit int) ([]T, error)) handler {
	return func(w http.ResponseWriter, r *http.Request, _ caller) error {
		h, err := s.learner(r)
		if err != nil {
			return err
		}
		after, limit, err := listLimits(r, 1000)
		if err != nil {
			return err
		}
		items, err := list(h, after, limit)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, map[string]any{key: items})
		return nil
	}
}

// pathID reads the {id} path value.
func pathID(r *http.Request) (uint64, error) {
	id, err := strconv.ParseUint(r.PathValue("id"), 10, 64)
	if err != nil || id == 0 {
		return 0, badField("id", "want a request id (an integer > 0)")
	}
	return id, nil
}

// claimView is what an annotator gets for a claim: the record to label.
type claimView struct {
	ID     uint64    `json:"id"`
	X      []float64 `json:"x"`
	Record string    `json:"record,omitempty"`
}

func (s *Server) claim(w http.ResponseWriter, r *http.Request, c caller) error {
	h, err := s.learner(r)
	if err != nil {
		return err
	}
	id, err := pathID(r)
	if err != nil {
		return err
	}
	rec, err := h.claim(id, c.who)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, claimView{ID: rec.ID, X: rec.X, Record: rec.Record})
	return nil
}

func (s *Server) label(w http.ResponseWriter, r *http.Request, c caller) error {
	h, err := s.learner(r)
	if err != nil {
		return err
	}
	body, err := s.readBody(w, r, s.opts.MaxBody)
	if err != nil {
		return err
	}
	req, err := decodeLabel(body)
	if err != nil {
		return err
	}
	if err := h.label(req.ID, req.Y, c.who, c.role == RoleAdmin); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": req.ID, "status": "labelled"})
	return nil
}

// learnerGet is a GET handler that answers view of the named learner.
func learnerGet[T any](s *Server, view func(h *hosted) (T, error)) handler {
	return func(w http.ResponseWriter, r *http.Request, _ caller) error {
		h, err := s.learner(r)
		if err != nil {
			return err
		}
		v, err := view(h)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, v)
		return nil
	}
}

// requests lists a page of open requests with the true counts: open
// requests, and those no live claim holds.
func (s *Server) requests(w http.ResponseWriter, r *http.Request, _ caller) error {
	h, err := s.learner(r)
	if err != nil {
		return err
	}
	after, limit, err := listLimits(r, 1000)
	if err != nil {
		return err
	}
	items, err := h.pending(after, limit)
	if err != nil {
		return err
	}
	q, unclaimed, err := h.queueState()
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"requests": items, "open": q.Open, "unclaimed": unclaimed,
		"max": q.Max, "oldest_age_seconds": q.OldestAgeSeconds})
	return nil
}

// queueGauges sets every learner's queue and ε gauges, for a scrape; a
// learner not restored since the start is read from its settings, its
// index and its ledger, and stays unrestored.
func (s *Server) queueGauges() error {
	if s.rep != nil {
		if err := s.syncShared(); err != nil {
			return err
		}
	}
	s.mu.RLock()
	hs := make([]*hosted, 0, len(s.learners))
	for _, h := range s.learners {
		hs = append(hs, h)
	}
	s.mu.RUnlock()
	for _, h := range hs {
		q, _, err := h.queueState()
		if err != nil {
			return err
		}
		s.met.queue(h.name, q)
		led, err := h.ledger()
		if err != nil {
			return err
		}
		s.met.spent(h.name, led)
	}
	return nil
}

// recordEpsilon answers for a client's record id or a default id
// "learner:event".
func (s *Server) recordEpsilon(w http.ResponseWriter, r *http.Request, _ caller) error {
	id := r.PathValue("id")
	ref, err := s.store.lookupRecord(id)
	if err != nil {
		return err
	}
	s.mu.RLock()
	h, ok := s.learners[ref.Learner]
	s.mu.RUnlock()
	if !ok {
		return errNoRecord
	}
	if err := h.ensure(); err != nil {
		return err
	}
	v, err := h.recordEpsilon(id, ref.Event)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

// ledger writes one learner's or search population's ledger report
// (?learner=NAME or ?search=NAME), the JSON of `dpal ledger show --json`,
// or all of them under "learners" and "searches".
func (s *Server) ledger(w http.ResponseWriter, r *http.Request, _ caller) error {
	if s.rep != nil {
		if err := s.syncShared(); err != nil {
			return err
		}
	}
	s.mu.RLock()
	hs := make(map[string]*hosted, len(s.learners))
	for k, v := range s.learners {
		hs[k] = v
	}
	searches := make(map[string]*ledger.Ledger, len(s.searches))
	for k, v := range s.searches {
		searches[k] = v.led
	}
	s.mu.RUnlock()
	if s.rep != nil { // other replicas' runs
		for _, led := range searches {
			if err := led.Refresh(); err != nil {
				return err
			}
		}
	}
	// The ledgers are opened, not the learners.
	if name := r.URL.Query().Get("learner"); name != "" {
		if h, ok := hs[name]; ok {
			hs = map[string]*hosted{name: h}
		} else {
			hs = nil
		}
	}
	learners := make(map[string]*ledger.Ledger, len(hs))
	for k, h := range hs {
		led, err := h.ledger()
		if err != nil {
			return err
		}
		learners[k] = led
	}
	for _, q := range []struct {
		param string
		leds  map[string]*ledger.Ledger
		err   error
	}{{"learner", learners, errNoLearner}, {"search", searches, errNoSearch}} {
		if name := r.URL.Query().Get(q.param); name != "" {
			led, ok := q.leds[name]
			if !ok {
				return q.err
			}
			rep, err := led.Report("")
			if err != nil {
				return err
			}
			writeJSON(w, http.StatusOK, rep)
			return nil
		}
	}
	all := map[string]map[string]*ledger.Report{}
	for key, leds := range map[string]map[string]*ledger.Ledger{"learners": learners, "searches": searches} {
		all[key] = make(map[string]*ledger.Report, len(leds))
		for name, led := range leds {
			rep, err := led.Report("")
			if err != nil {
				return err
			}
			all[key][name] = rep
		}
	}
	writeJSON(w, http.StatusOK, all)
	return nil
}

// Close ends the server's part in a group of replicas: it releases the
// learners' leases, so that other replicas take them over at once. It
// does not close the store.
func (s *Server) Close() {
	if s.rep != nil {
		s.rep.close()
	}
}

// Serve serves on ln until ctx ends, then shuts down gracefully (waiting
// up to grace for requests in flight).
func (s *Server) Serve(ctx context.Context, ln net.Listener, grace time.Duration) error {
	hs := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	lim := newConnLimitListener(ln, s.opts.MaxConns, s.opts.MaxConnsPerIP, s.log)
	if s.opts.TLS == nil {
		go func() { errc <- hs.Serve(lim) }()
	} else {
		// The limit counts raw connections, before their handshakes; a
		// refused one is closed, not answered (a 503 would need a handshake).
		lim.closeOnly = true
		hs.TLSConfig = s.opts.TLS
		go func() { errc <- hs.ServeTLS(lim, "", "") }()
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
