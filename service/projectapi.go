package service

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/dpal-dev/dpal/active/pool"
	"github.com/dpal-dev/dpal/dp/ledger"
)

// routeProjects registers the pool projects' endpoints.
func (s *Server) routeProjects() {
	read := []Role{RoleOfficer, RoleAnnotator}
	s.handle("POST /v1/projects", s.createProject, RoleAdmin)
	s.handle("GET /v1/projects", s.listProjects, read...)
	s.handle("GET /v1/projects/{name}", s.getProject, read...)
	s.handle("GET /v1/projects/{name}/plan", s.projectPlan, RoleOfficer)
	s.handle(poolUploadPattern, s.uploadPool, RoleIngest)
	s.handle("POST /v1/projects/{name}/start", s.startProject, RoleAdmin)
	s.handle("POST /v1/projects/{name}/cancel", s.cancelProject, RoleAdmin)
	s.handle("POST /v1/projects/{name}/close", s.closePhase, RoleAdmin)
	s.handle("GET /v1/projects/{name}/queue", s.projectQueue, RoleAnnotator)
	s.handle("POST /v1/projects/{name}/queue/{index}/claim", s.claimItem, RoleAnnotator)
	s.handle("POST /v1/projects/{name}/queue/{index}/label", s.labelItem, RoleAnnotator)
	s.handle("POST /v1/projects/{name}/queue/{index}/skip", s.skipItem, RoleAnnotator)
	s.handle("GET /v1/projects/{name}/releases", s.projectReleases, RoleOfficer)
	s.handle("GET /v1/projects/{name}/model", s.projectModel, RoleOfficer)
	s.handle("POST /v1/projects/{name}/predict", s.projectPredict, RoleOfficer)
	s.handle("GET /v1/projects/{name}/privacy", s.projectPrivacy, RoleOfficer)
	s.handle("GET /v1/projects/{name}/records/{index}/epsilon", s.projectRecordEpsilon, RoleOfficer)
}

// projectView is a project's state as the officer and the annotators
// read it.
type projectView struct {
	Name     string          `json:"name"`
	State    string          `json:"state"`
	Created  time.Time       `json:"created"`
	Settings projectSettings `json:"settings"`
	Pooled   int             `json:"pooled"`
	Rounds   int             `json:"rounds"`
	Round    int             `json:"round"`
	Phase    *int            `json:"phase,omitempty"`
	Labels   int             `json:"labels"`
	Dropped  int             `json:"dropped"`
	Error    string          `json:"error,omitempty"`
	// EpsilonPerRecord is what the plan charges every record at most.
	EpsilonPerRecord float64          `json:"epsilon_per_record"`
	Progress         *projectProgress `json:"progress,omitempty"`
}

// projectProgress is a running job's progress.
type projectProgress struct {
	Round int   `json:"round"`
	Steps int64 `json:"steps"`
	Total int   `json:"total"`
}

// view is m as projectView shows it.
func (s *Server) projectView(m projectMeta) projectView {
	v := projectView{Name: m.Name, State: m.State, Created: m.Created, Settings: m.Settings, Pooled: m.Pooled,
		Rounds: m.rounds(), Round: m.Round, Labels: m.Labels, Dropped: m.Dropped, Error: m.Error,
		EpsilonPerRecord: m.epsilonPerRecord()}
	if m.State == stateLabelling {
		v.Phase = &m.Phase
	}
	if round, steps, total, ok := s.projects.progress(m.Name); ok {
		v.Progress = &projectProgress{Round: round, Steps: steps, Total: total}
	}
	return v
}

// project reads the {name} project.
func (s *Server) project(r *http.Request) (projectMeta, error) {
	return s.projects.meta(r.PathValue("name"))
}

func (s *Server) createProject(w http.ResponseWriter, r *http.Request, _ caller) error {
	body, err := s.readBody(w, r, s.opts.MaxBody)
	if err != nil {
		return err
	}
	m, err := decodeProject(body)
	if err != nil {
		return err
	}
	ph := s.projects
	if err := s.leaseNewProject(m.Name); err != nil {
		return err
	}
	ph.mu.Lock()
	err = s.store.db.Update(withFence(ph.fence(m.Name), func(tx kvTx) error { return createProjectTx(tx, m) }))
	ph.mu.Unlock()
	if err != nil {
		s.unleaseNewProject(m.Name, err)
		return err
	}
	s.log.Info("project created", "project", m.Name, "pool_size", m.Settings.PoolSize, "epsilon", m.Config.Epsilon,
		"epsilon_per_record", m.epsilonPerRecord(), "selection", m.Settings.Selection)
	writeJSON(w, http.StatusCreated, s.projectView(m))
	return nil
}

func (s *Server) listProjects(w http.ResponseWriter, _ *http.Request, _ caller) error {
	metas, err := viewOf(s.store.db, listProjectsTx)
	if err != nil {
		return err
	}
	out := make([]projectView, 0, len(metas))
	for _, m := range metas {
		out = append(out, s.projectView(m))
	}
	writeJSON(w, http.StatusOK, map[string]any{"projects": out})
	return nil
}

func (s *Server) getProject(w http.ResponseWriter, r *http.Request, _ caller) error {
	m, err := s.project(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s.projectView(m))
	return nil
}

// planView is the stored plan: the settings, the plan (per phase σ,
// steps and per-group sampling rates; per group the ε it is charged) and
// the ε per record, all fixed before any record was read.
type planView struct {
	Name             string          `json:"name"`
	Created          time.Time       `json:"created"`
	Settings         projectSettings `json:"settings"`
	Plan             *pool.Plan      `json:"plan"`
	EpsilonPerRecord float64         `json:"epsilon_per_record"`
	Delta            float64         `json:"delta"`
}

func (s *Server) projectPlan(w http.ResponseWriter, r *http.Request, _ caller) error {
	m, err := s.project(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, planView{Name: m.Name, Created: m.Created, Settings: m.Settings, Plan: m.Plan,
		EpsilonPerRecord: m.epsilonPerRecord(), Delta: m.Config.Delta})
	return nil
}

// startProject starts a ready project (its job charges the run and draws
// the initial set), or resumes a paused or failed one.
func (s *Server) startProject(w http.ResponseWriter, r *http.Request, _ caller) error {
	ph := s.projects
	ph.mu.Lock()
	m, err := ph.update(r.PathValue("name"), func(_ kvTx, m *projectMeta) error {
		switch m.State {
		case stateReady:
			m.State = stateStarting
		case statePaused, stateFailed:
			m.State, m.Resume, m.Error = m.Resume, "", ""
		default:
			return errState(*m, "ready, paused or failed")
		}
		return nil
	})
	ph.mu.Unlock()
	if err != nil {
		return err
	}
	ph.enqueue(m.Name)
	writeJSON(w, http.StatusAccepted, s.projectView(m))
	return nil
}

// cancelProject stops a running or queued job; the project is paused.
func (s *Server) cancelProject(w http.ResponseWriter, r *http.Request, _ caller) error {
	ph := s.projects
	name := r.PathValue("name")
	if ph.cancel(name) {
		// The job stores the pause; wait for it briefly so the answer shows it.
		for range 200 {
			if _, _, _, running := ph.progress(name); !running {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	} else {
		ph.mu.Lock()
		_, err := ph.update(name, func(_ kvTx, m *projectMeta) error {
			if m.State != stateStarting && m.State != stateTraining {
				return errState(*m, "starting or training")
			}
			m.Resume, m.State = m.State, statePaused
			return nil
		})
		ph.mu.Unlock()
		if err != nil {
			return err
		}
	}
	m, err := ph.meta(name)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s.projectView(m))
	return nil
}

// closePhase ends the labelling phase now: the open selections are
// dropped and the next round starts.
func (s *Server) closePhase(w http.ResponseWriter, r *http.Request, _ caller) error {
	ph := s.projects
	ph.mu.Lock()
	m, err := ph.endPhase(r.PathValue("name"), true, ph.fence(r.PathValue("name")))
	ph.mu.Unlock()
	if err != nil {
		return err
	}
	s.log.Info("project phase closed", "project", m.Name, "dropped", m.Dropped)
	writeJSON(w, http.StatusOK, s.projectView(m))
	return nil
}

// projectQueueView is a page of the annotator queue: no record values.
type projectQueueView struct {
	Phase    int            `json:"phase"`
	Items    []queueSummary `json:"items"`
	Open     int            `json:"open"`
	Labelled int            `json:"labelled"`
	Skipped  int            `json:"skipped"`
	Next     *int           `json:"next,omitempty"`
}

// queueSummary is one queue item as listed.
type queueSummary struct {
	Index   int    `json:"index"`
	ID      string `json:"id,omitempty"`
	Status  string `json:"status"`
	Claimed bool   `json:"claimed"`
}

func (s *Server) projectQueue(w http.ResponseWriter, r *http.Request, _ caller) error {
	m, err := s.project(r)
	if err != nil {
		return err
	}
	after := -1
	if v := r.URL.Query().Get("after"); v != "" {
		if after, err = strconv.Atoi(v); err != nil || after < 0 {
			return badField("after", "want a pool index")
		}
	}
	limit, err := listLimit(r, 1000)
	if err != nil {
		return err
	}
	out := projectQueueView{Phase: m.Phase, Items: []queueSummary{}}
	err = s.store.db.View(func(tx kvTx) error {
		pool := pbucket(tx, m.Name, subPool)
		return forQueueTx(tx, m.Name, -1, func(it queueItem) (bool, error) {
			switch it.Status {
			case statusOpen:
				out.Open++
			case statusLabelled:
				out.Labelled++
			default:
				out.Skipped++
			}
			if it.Index > after && it.Status == statusOpen {
				if len(out.Items) == limit {
					if out.Next == nil {
						n := out.Items[len(out.Items)-1].Index
						out.Next = &n
					}
					return true, nil
				}
				out.Items = append(out.Items, queueSummary{Index: it.Index, Status: it.Status,
					ID: poolID(pool.Get(keyIndex(it.Index))), Claimed: it.ClaimedBy != "" && time.Since(it.ClaimedAt) < claimTTL})
			}
			return true, nil
		})
	})
	if err != nil {
		return err
	}
	if m.State != stateLabelling {
		out.Items = []queueSummary{}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// claimAnswer is what an annotator gets for a claim: the record to label
// and the classes to choose from.
type claimAnswer struct {
	Index   int       `json:"index"`
	ID      string    `json:"id,omitempty"`
	X       []float64 `json:"x"`
	Image   []int     `json:"image,omitempty"`
	Classes []string  `json:"classes"`
	Until   time.Time `json:"until"`
}

// pathIndex reads the {index} path value.
func pathIndex(r *http.Request) (int, error) {
	i, err := strconv.Atoi(r.PathValue("index"))
	if err != nil || i < 0 {
		return 0, badField("index", "want a pool index (an integer ≥ 0)")
	}
	return i, nil
}

// keyIndex is pool index i's key.
func keyIndex(i int) []byte { return ledger.Uint64Key(uint64(i)) }

// itemChange changes the open queue item {index} of a labelling project
// by fn inside one transaction (h.mu held); fn sees the caller.
func (s *Server) itemChange(r *http.Request, fn func(m *projectMeta, it *queueItem) error, after ...func(tx kvTx, m *projectMeta) error) (projectMeta, queueItem, error) {
	i, err := pathIndex(r)
	if err != nil {
		return projectMeta{}, queueItem{}, err
	}
	var it queueItem
	m, err := s.projects.update(r.PathValue("name"), func(tx kvTx, m *projectMeta) error {
		if m.State != stateLabelling {
			return errState(*m, stateLabelling)
		}
		var err error
		if it, err = getQueueTx(tx, m.Name, i); err != nil {
			return err
		}
		if it.Status != statusOpen {
			return errItemDone
		}
		if err := fn(m, &it); err != nil {
			return err
		}
		if err := putQueueTx(tx, m.Name, it); err != nil {
			return err
		}
		for _, a := range after {
			if err := a(tx, m); err != nil {
				return err
			}
		}
		return nil
	})
	return m, it, err
}

// mayAnswer admits a label or skip of it by who: who holds a live claim,
// or (an admin) nobody else does.
func mayAnswer(it queueItem, who string, admin bool) error {
	live := it.ClaimedBy != "" && time.Since(it.ClaimedAt) < claimTTL
	switch {
	case live && it.ClaimedBy == who:
		return nil
	case live:
		return errClaimed
	case admin:
		return nil
	}
	return &apiError{status: http.StatusConflict, field: "index", msg: "claim the record before answering (no live claim of yours holds it; claims last 15 minutes)"}
}

func (s *Server) claimItem(w http.ResponseWriter, r *http.Request, c caller) error {
	ph := s.projects
	ph.mu.Lock()
	m, it, err := s.itemChange(r, func(_ *projectMeta, it *queueItem) error {
		if it.ClaimedBy != "" && it.ClaimedBy != c.who && time.Since(it.ClaimedAt) < claimTTL {
			return errClaimed
		}
		it.ClaimedBy, it.ClaimedAt = c.who, time.Now().UTC()
		return nil
	})
	ph.mu.Unlock()
	if err != nil {
		return err
	}
	var id string
	var x []float64
	err = s.store.db.View(func(tx kvTx) error {
		var err error
		id, x, err = poolRecordTx(tx, m.Name, m.Settings.Dim, it.Index)
		return err
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, claimAnswer{Index: it.Index, ID: id, X: x, Image: m.Settings.Image,
		Classes: m.Settings.Classes, Until: it.ClaimedAt.Add(claimTTL)})
	return nil
}

// projectLabelRequest is the body of a label: the class name.
type projectLabelRequest struct {
	Label string `json:"label"`
}

// skipRequest is the body of a skip: why the record cannot be labelled.
type skipRequest struct {
	Reason string `json:"reason"`
}

// answerView is the answer to a label or a skip.
type answerView struct {
	Index  int    `json:"index"`
	Status string `json:"status"`
	// PhaseDone is set when this answer was the phase's last: the next
	// round's job is queued.
	PhaseDone bool `json:"phase_done"`
}

func (s *Server) labelItem(w http.ResponseWriter, r *http.Request, c caller) error {
	body, err := s.readBody(w, r, s.opts.MaxBody)
	if err != nil {
		return err
	}
	var req projectLabelRequest
	if err := decodeStrict(body, &req); err != nil {
		return err
	}
	return s.answer(w, r, c, func(m *projectMeta, it *queueItem) error {
		k := slices.Index(m.Settings.Classes, req.Label)
		if k < 0 {
			return badField("label", "not a class of the project (%d classes)", len(m.Settings.Classes))
		}
		it.Status, it.Label = statusLabelled, k
		m.Labels++
		return nil
	})
}

func (s *Server) skipItem(w http.ResponseWriter, r *http.Request, c caller) error {
	body, err := s.readBody(w, r, s.opts.MaxBody)
	if err != nil {
		return err
	}
	var req skipRequest
	if err := decodeStrict(body, &req); err != nil {
		return err
	}
	if req.Reason == "" || len(req.Reason) > 500 {
		return badField("reason", "want 1 to 500 bytes saying why the record cannot be labelled")
	}
	return s.answer(w, r, c, func(m *projectMeta, it *queueItem) error {
		if m.Config.Selection == pool.TopK {
			return &apiError{status: http.StatusConflict, field: "index", msg: "top-k selection fixes the query sizes its rates were planned for: a skip would change them (plan with Poisson selection to allow skips)"}
		}
		it.Status, it.Reason = statusSkipped, req.Reason
		m.Dropped++
		return nil
	})
}

// answer commits a label or skip and, when it was the phase's last open
// record, the end of the phase, in one fsync'd transaction before the
// answer: a crash cannot leave a phase whose labels are all in but which
// never ends.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, c caller, fn func(m *projectMeta, it *queueItem) error) error {
	ph := s.projects
	ph.mu.Lock()
	defer ph.mu.Unlock()
	done := false
	m, it, err := s.itemChange(r, func(m *projectMeta, it *queueItem) error {
		if err := mayAnswer(*it, c.who, c.role == RoleAdmin); err != nil {
			return err
		}
		it.By = c.who
		return fn(m, it)
	}, func(tx kvTx, m *projectMeta) error {
		open := 0
		err := forQueueTx(tx, m.Name, -1, func(q queueItem) (bool, error) {
			if q.Status == statusOpen {
				open++
				return false, nil
			}
			return true, nil
		})
		if err != nil || open > 0 {
			return err
		}
		done = true
		_, err = endPhaseTx(tx, m, false)
		return err
	})
	if err != nil {
		return err
	}
	if done {
		ph.enqueue(m.Name)
	}
	writeJSON(w, http.StatusOK, answerView{Index: it.Index, Status: it.Status, PhaseDone: done})
	return nil
}

func (s *Server) projectReleases(w http.ResponseWriter, r *http.Request, _ caller) error {
	m, err := s.project(r)
	if err != nil {
		return err
	}
	rels, err := viewOf(s.store.db, func(tx kvTx) ([]projectRelease, error) { return releasesTx(tx, m.Name) })
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"releases": rels})
	return nil
}

// projectModel answers a release's model file (?round=N; default the
// last), the format `dpal train --out` writes and `dpal predict` reads.
func (s *Server) projectModel(w http.ResponseWriter, r *http.Request, _ caller) error {
	m, err := s.project(r)
	if err != nil {
		return err
	}
	round, err := roundParam(r)
	if err != nil {
		return err
	}
	var file []byte
	err = s.store.db.View(func(tx kvTx) error {
		var err error
		file, round, err = modelTx(tx, m.Name, round)
		return err
	})
	if err != nil {
		return err
	}
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s-round-%d.json"`, m.Name, round))
	w.Header().Set("X-Dpal-Round", strconv.Itoa(round))
	writeRaw(w, http.StatusOK, file[:len(file)-1]) // Save ends in a newline; writeRaw adds one
	return nil
}

// roundParam reads ?round= (0: the last release).
func roundParam(r *http.Request) (int, error) {
	v := r.URL.Query().Get("round")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, badField("round", "want a round ≥ 1")
	}
	return n, nil
}

// predictRequest is the body of a prediction: rows of features.
type predictRequest struct {
	X [][]float64 `json:"x"`
}

// predictAnswer is a release's predictions: post-processing, no charge.
type predictAnswer struct {
	Round         int         `json:"round"`
	Classes       []string    `json:"classes"`
	Predictions   []string    `json:"predictions"`
	Probabilities [][]float64 `json:"probabilities"`
}

// maxPredictRows bounds a prediction's rows.
const maxPredictRows = 10000

func (s *Server) projectPredict(w http.ResponseWriter, r *http.Request, _ caller) error {
	m, err := s.project(r)
	if err != nil {
		return err
	}
	round, err := roundParam(r)
	if err != nil {
		return err
	}
	body, err := s.readBody(w, r, s.opts.MaxEventsBody)
	if err != nil {
		return err
	}
	var req predictRequest
	if err := decodeStrict(body, &req); err != nil {
		return err
	}
	if len(req.X) == 0 || len(req.X) > maxPredictRows {
		return badField("x", "want 1 to %d rows", maxPredictRows)
	}
	for i, x := range req.X {
		if perr := checkRow(x, m.Settings.Dim); perr != "" {
			return badField("x", "row %d: %s", i, perr)
		}
	}
	net, round, err := s.projects.model(m.Name, round)
	if err != nil {
		return err
	}
	probs, err := net.Predict(req.X)
	if err != nil {
		return badField("x", "%v", err)
	}
	out := predictAnswer{Round: round, Classes: m.Settings.Classes, Probabilities: probs, Predictions: make([]string, len(probs))}
	for i, p := range probs {
		out.Predictions[i] = m.Settings.Classes[argmax(p)]
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// argmax is the index of p's largest value.
func argmax(p []float64) int {
	best := 0
	for i, v := range p {
		if v > p[best] {
			best = i
		}
	}
	return best
}

// privacyView is the per-group and per-record report read from the
// project's ledger (pool.PrivacyOf), the skipped records apart.
type privacyView struct {
	Round   int          `json:"round"`
	Privacy pool.Privacy `json:"privacy"`
	// Charges is the number of ledger entries.
	Charges int `json:"charges"`
}

func (s *Server) projectPrivacy(w http.ResponseWriter, r *http.Request, _ caller) error {
	m, err := s.project(r)
	if err != nil {
		return err
	}
	led, err := s.projects.ledger(m)
	if err != nil {
		return err
	}
	groups, err := viewOf(s.store.db, func(tx kvTx) ([]groupRecord, error) { return groupsTx(tx, m.Name) })
	if err != nil {
		return err
	}
	idx := make([][]int, len(groups))
	for g, gr := range groups {
		idx[g] = gr.Indices
	}
	pr, err := pool.PrivacyOf(led, m.Plan, idx, m.Settings.PoolSize, false)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, privacyView{Round: m.Round, Privacy: pr, Charges: led.Len()})
	return nil
}

// recordEpsilonAnswer is one pool record's ε, read from the ledger.
type recordEpsilonAnswer struct {
	Index   int     `json:"index"`
	ID      string  `json:"id,omitempty"`
	Group   string  `json:"group"`
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
	Budget  float64 `json:"budget"`
}

func (s *Server) projectRecordEpsilon(w http.ResponseWriter, r *http.Request, _ caller) error {
	m, err := s.project(r)
	if err != nil {
		return err
	}
	i, err := pathIndex(r)
	if err != nil {
		return err
	}
	if i >= m.Pooled {
		return errNoPoolRecord
	}
	led, err := s.projects.ledger(m)
	if err != nil {
		return err
	}
	group := "not-selected"
	var id string
	err = s.store.db.View(func(tx kvTx) error {
		id = poolID(pbucket(tx, m.Name, subPool).Get(keyIndex(i)))
		groups, err := groupsTx(tx, m.Name)
		for g, gr := range groups {
			if slices.Contains(gr.Indices, i) {
				group = pool.GroupNames(len(m.Config.Queries))[g]
			}
		}
		return err
	})
	if err != nil {
		return err
	}
	eps, delta := led.Spent(pool.RecordID(i))
	writeJSON(w, http.StatusOK, recordEpsilonAnswer{Index: i, ID: id, Group: group, Epsilon: eps, Delta: delta, Budget: m.Config.Epsilon})
	return nil
}
