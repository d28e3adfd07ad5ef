package service

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"time"
)

// Replicas on a shared store split the pool projects between them as
// they split the learners (replica.go), through the same lease table: a
// project's lease is the row keyed projectLease(name). Its owner hosts
// the project — runs its job, serves its endpoints, keeps its ledger and
// last model in memory — and every write of the project (its settings
// and state, the pool, the queue and labels, the groups, the releases,
// and the ledger's charges) checks the lease's fencing token in its own
// transaction. A stale owner's job is therefore refused at its first
// charge or commit after another replica took the lease: its charge is
// not stored, so the noise it would pay for is never drawn, and its
// release is not stored. Other replicas forward the project's requests
// to the owner. The replica that a project's creation reaches takes its
// lease; when the owner dies, the first replica whose resumeLoop (or
// whose request) finds the lease expired takes it and resumes a pending
// job from the store, as a restart of one process does.

// projectLeasePre prefixes a project's lease key: a learner's name
// cannot hold a '/' (nameRE), so the two never meet.
const projectLeasePre = "project/"

// projectLease is project name's key in the lease table.
func projectLease(name string) string { return projectLeasePre + name }

// leaseExists reports whether the learner or project that lease key
// covers exists.
func (s *Server) leaseExists(key string) bool {
	name, ok := strings.CutPrefix(key, projectLeasePre)
	if !ok {
		return s.learnerExists(key)
	}
	if s.projects.hosted(name) {
		return true
	}
	_, err := s.projects.meta(name)
	return err == nil
}

// adoptLease makes the learner or project of lease key the one of token.
func (s *Server) adoptLease(key string, token int64) {
	if name, ok := strings.CutPrefix(key, projectLeasePre); ok {
		s.projects.adopt(name, token)
		return
	}
	s.adopt(key, token)
}

// leaseNewProject takes, on replicas, the lease of project name for its
// creation: the replica that the creation reaches keeps it and runs the
// project's jobs. A lease another replica holds means the project exists
// or is being created there.
func (s *Server) leaseNewProject(name string) error {
	if s.rep == nil {
		return nil
	}
	tok, owner, err := s.rep.acquire(projectLease(name))
	if err != nil {
		return err
	}
	if owner != "" {
		return errProjectExists
	}
	s.projects.adopt(name, tok)
	return nil
}

// unleaseNewProject gives up the lease of a project whose creation
// failed with err, unless the project exists (err is errProjectExists):
// renewed for nothing, the lease would refuse every other replica's
// creation of the name.
func (s *Server) unleaseNewProject(name string, err error) {
	if s.rep == nil || errors.Is(err, errProjectExists) {
		return
	}
	s.projects.lmu.Lock()
	delete(s.projects.tokens, name)
	s.projects.lmu.Unlock()
	s.rep.release(projectLease(name))
}

// hosted reports whether this replica took project name's lease since
// it started (the project exists).
func (h *projectHost) hosted(name string) bool {
	h.lmu.Lock()
	defer h.lmu.Unlock()
	_, ok := h.tokens[name]
	return ok
}

// fence is the check of project name's writes: none in one process; on
// replicas, that the lease still carries the token this replica holds it
// under (never valid when it holds none: a replica that does not own the
// project forwards its requests and writes nothing).
func (h *projectHost) fence(name string) func(kvTx) error {
	if h.rep == nil {
		return nil
	}
	h.lmu.Lock()
	tok, ok := h.tokens[name]
	h.lmu.Unlock()
	if !ok {
		tok = -1
	}
	return h.rep.fence(projectLease(name), tok)
}

// jobFence is the fence of a job of project name about to start, and
// whether this replica may run it (it holds the project's lease).
func (h *projectHost) jobFence(name string) (func(kvTx) error, bool) {
	if h.rep == nil {
		return nil, true
	}
	tok, ok := h.rep.owned(projectLease(name))
	h.lmu.Lock()
	held, hok := h.tokens[name]
	h.lmu.Unlock()
	if !ok || !hok || held != tok {
		return nil, false
	}
	return h.rep.fence(projectLease(name), tok), true
}

// adopt makes project name the one of lease token here. A new token
// (the lease taken, from another replica or after this one lost it)
// drops what memory held of the project — its ledger, whose cached
// spend may be behind the store, its model, and a job of the old token,
// which the fence would refuse anyway — and queues the project's pending
// job, resumed from the store.
func (h *projectHost) adopt(name string, token int64) {
	h.lmu.Lock()
	old, ok := h.tokens[name]
	h.tokens[name] = token
	h.lmu.Unlock()
	if ok && old == token {
		return
	}
	h.mu.Lock()
	delete(h.leds, name)
	delete(h.nets, name)
	if r, ok := h.running[name]; ok {
		r.lost.Store(true)
		r.cancel()
	}
	h.mu.Unlock()
	m, err := h.meta(name)
	if err != nil {
		return // being created, or the handler fails on its own
	}
	h.log.Info("took the project's lease", "project", name, "token", token, "state", m.State)
	if m.State == stateStarting || m.State == stateTraining {
		h.log.Info("project job resumed from the store", "project", name, "state", m.State, "round", m.Round)
		h.enqueue(name)
	}
}

// busy reports whether project name's job is queued or running here.
func (h *projectHost) busy(name string) bool {
	h.lmu.Lock()
	q := h.queued[name]
	h.lmu.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	_, r := h.running[name]
	return q || r
}

// resumeLoop looks, at once and then every half lease time until the
// replica stops, for projects with a pending job that no replica runs:
// it takes each one's lease if it is free or expired (its owner died, or
// stopped) and resumes the job. A project waiting for labels needs no
// owner until a request for it arrives.
func (h *projectHost) resumeLoop() {
	t := time.NewTicker(h.rep.ttl / 2)
	defer t.Stop()
	for {
		h.resumeOrphans()
		select {
		case <-h.rep.stop:
			return
		case <-t.C:
		}
	}
}

func (h *projectHost) resumeOrphans() {
	metas, err := viewOf(h.store.db, listProjectsTx)
	if err != nil {
		h.log.Warn("looking for project jobs to resume failed", "err", err)
		return
	}
	for _, m := range metas {
		if (m.State != stateStarting && m.State != stateTraining) || h.busy(m.Name) {
			continue
		}
		tok, owner, err := h.rep.acquire(projectLease(m.Name))
		if err != nil || owner != "" {
			continue // another replica runs it, or the database is away: next time
		}
		h.adopt(m.Name, tok)
		if !h.busy(m.Name) { // the lease was this replica's already, its job lost
			h.enqueue(m.Name)
		}
	}
}

// poolUploadPattern is the route of a pool upload: a stream that may
// take longer than the server's read and write timeouts.
const poolUploadPattern = "POST /v1/projects/{name}/pool"

// streamForward readies a forwarded pool upload as uploadPool readies
// its own: no write deadline, and the read deadline renewed at every
// read of the body (a stalled client still times out). The reverse
// proxy streams the body to the owner as it arrives, never buffering
// it whole.
func (s *Server) streamForward(w http.ResponseWriter, r *http.Request, pattern string) {
	if pattern != poolUploadPattern || r.Body == nil {
		return
	}
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{})
	r.Body = &renewingBody{ReadCloser: r.Body, rc: rc, timeout: s.opts.BodyTimeout}
}

// renewingBody renews the connection's read deadline before every read.
type renewingBody struct {
	io.ReadCloser
	rc      *http.ResponseController
	timeout time.Duration
}

func (b *renewingBody) Read(p []byte) (int, error) {
	_ = b.rc.SetReadDeadline(time.Now().Add(b.timeout))
	return b.ReadCloser.Read(p)
}
