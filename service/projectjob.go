package service

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dpal-dev/dpal/active/pool"
	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/model/nn"
)

// projectHost is the projects' in-memory side: one worker that runs the
// jobs (a project's start, then each training round) one at a time, the
// running job's progress and cancel, the opened ledgers and the last
// loaded model per project. mu serialises every state change of every
// project (labels, closes, job commits): each is one short transaction.
// With replicas (rep set), this replica hosts the projects whose leases
// it holds (projectlease.go): every write is fenced by the lease's token.
type projectHost struct {
	store *Store
	log   *slog.Logger
	jobs  chan string
	rep   *replica

	mu      sync.Mutex
	leds    map[string]*ledger.Ledger
	running map[string]*projectRun
	nets    map[string]loadedNet

	lmu    sync.Mutex       // guards tokens and queued, apart from mu: update's callers hold mu
	tokens map[string]int64 // project → the lease token it is hosted under here
	queued map[string]bool  // projects whose job is queued, not yet running
}

// projectRun is a running job: its cancel and progress.
type projectRun struct {
	cancel  context.CancelFunc
	round   int
	steps   atomic.Int64
	total   int
	started time.Time
	// fence is the check of the job's writes, taken when it started (its
	// lease's token then); lost is set once the lease ran out here: the
	// job stops without storing anything, the next owner resumes it.
	fence func(kvTx) error
	lost  atomic.Bool
}

// loadedNet is a project's last loaded release.
type loadedNet struct {
	round int
	net   *nn.Net
}

// projectWorkers is the size of the job pool: training is CPU-bound and
// DP-SGD already uses every core, so one job runs at a time.
const projectWorkers = 1

// newProjectHost starts the worker and queues the jobs of every project
// a restart interrupted: each resumes from its last finished phase. With
// replicas (rep), a job is resumed by the replica that takes its
// project's lease (resumeLoop).
func newProjectHost(store *Store, log *slog.Logger, rep *replica) (*projectHost, error) {
	h := &projectHost{store: store, log: log, jobs: make(chan string, 1024), rep: rep, leds: map[string]*ledger.Ledger{},
		running: map[string]*projectRun{}, nets: map[string]loadedNet{}, tokens: map[string]int64{}, queued: map[string]bool{}}
	metas, err := viewOf(store.db, listProjectsTx)
	if err != nil {
		return nil, err
	}
	for range projectWorkers {
		go h.work()
	}
	if rep != nil {
		go h.resumeLoop()
		return h, nil
	}
	for _, m := range metas {
		if m.State == stateStarting || m.State == stateTraining {
			h.log.Info("project job resumed after a restart", "project", m.Name, "state", m.State, "round", m.Round)
			h.enqueue(m.Name)
		}
	}
	return h, nil
}

// enqueue queues project name's next job.
func (h *projectHost) enqueue(name string) {
	h.lmu.Lock()
	h.queued[name] = true
	h.lmu.Unlock()
	select {
	case h.jobs <- name:
	default:
		go func() { h.jobs <- name }()
	}
}

// work runs queued jobs until the process ends.
func (h *projectHost) work() {
	for name := range h.jobs {
		h.runJob(name)
	}
}

// meta reads project name.
func (h *projectHost) meta(name string) (projectMeta, error) {
	m, err := viewOf(h.store.db, func(tx kvTx) (projectMeta, error) { return getProjectTx(tx, name) })
	return m, err
}

// update reads project name, lets fn change it inside the same
// transaction, and writes it back (h.mu held by the caller), under the
// project's lease as this replica holds it now.
func (h *projectHost) update(name string, fn func(tx kvTx, m *projectMeta) error) (projectMeta, error) {
	return h.updateFenced(h.fence(name), name, fn)
}

// updateFenced is update checking fence (a job's, taken when it started).
func (h *projectHost) updateFenced(fence func(kvTx) error, name string, fn func(tx kvTx, m *projectMeta) error) (projectMeta, error) {
	var m projectMeta
	err := h.store.db.Update(withFence(fence, func(tx kvTx) error {
		var err error
		if m, err = getProjectTx(tx, name); err != nil {
			return err
		}
		if err := fn(tx, &m); err != nil {
			return err
		}
		return putProjectTx(tx, m)
	}))
	return m, err
}

// ledger returns project m's ledger, opened once (again when the lease
// changes hands): ε per record is the target, δ and the RDP conversion
// the plan's; its charges are fenced by the project's lease.
func (h *projectHost) ledger(m projectMeta) (*ledger.Ledger, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if led, ok := h.leds[m.Name]; ok {
		return led, nil
	}
	led, err := h.store.openProjectLedger(m.Name, account.Budget{Epsilon: m.Config.Epsilon, Delta: m.Config.Delta}, m.Config.Conversion, h.fence(m.Name))
	if err != nil {
		return nil, fmt.Errorf("project %s: %w", m.Name, err)
	}
	h.leds[m.Name] = led
	return led, nil
}

// runJob runs project name's pending job: the start (charge, initial
// draw) or the next training round. A failure is stored in the project
// (state failed, start retries); a cancel leaves it paused.
func (h *projectHost) runJob(name string) {
	h.lmu.Lock()
	delete(h.queued, name)
	h.lmu.Unlock()
	fence, owned := h.jobFence(name)
	if !owned {
		return // another replica holds the project: its job runs there
	}
	m, err := h.meta(name)
	if err != nil || (m.State != stateStarting && m.State != stateTraining) {
		return // cancelled, or closed meanwhile
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	run := &projectRun{cancel: cancel, round: m.Round + 1, started: time.Now(), fence: fence}
	if h.rep != nil {
		go h.rep.watch(ctx, projectLease(name), func() { run.lost.Store(true); cancel() })
	}
	if m.State == stateTraining {
		for _, ph := range m.Plan.Phases {
			if ph.Round == run.round {
				run.total += ph.Steps
			}
		}
	}
	h.mu.Lock()
	h.running[name] = run
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.running, name)
		h.mu.Unlock()
	}()
	if m.State == stateStarting {
		err = h.start(m, fence)
	} else {
		err = h.train(ctx, m, run)
	}
	if err == nil {
		return
	}
	if run.lost.Load() || errors.Is(err, errFenced) {
		h.log.Warn("project job stopped: this replica no longer holds the project's lease; its owner resumes the job", "project", name, "err", err)
		return
	}
	state := stateFailed
	if errors.Is(err, context.Canceled) {
		state = statePaused
	}
	h.log.Warn("project job stopped", "project", name, "state", state, "err", err)
	h.mu.Lock()
	defer h.mu.Unlock()
	_, uerr := h.updateFenced(fence, name, func(_ kvTx, pm *projectMeta) error {
		if pm.State == stateStarting || pm.State == stateTraining {
			pm.Resume, pm.State, pm.Error = pm.State, state, err.Error()
		}
		return nil
	})
	if uerr != nil {
		h.log.Error("project job: storing its failure failed", "project", name, "err", uerr)
	}
}

// stepper reads the pool and the labelled groups and builds project m's
// Stepper on net (nil: a new network), with the groups added.
func (h *projectHost) stepper(m projectMeta, net *nn.Net, progress func()) (*pool.Stepper, *ledger.Ledger, error) {
	led, err := h.ledger(m)
	if err != nil {
		return nil, nil, err
	}
	var rows [][]float64
	var groups []groupRecord
	err = h.store.db.View(func(tx kvTx) error {
		var err error
		if rows, err = readPoolTx(tx, m.Name, m.Settings.Dim, m.Settings.PoolSize); err != nil {
			return err
		}
		groups, err = groupsTx(tx, m.Name)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	plan, err := pool.Build(m.Config)
	if err != nil {
		return nil, nil, err
	}
	st, err := pool.NewStepper(led, rng.Secure(), pool.Input{Plan: plan, Learner: m.Learner, Pool: rows, Progress: progress,
		ChargeKey: projectPrefix(m.Name)}, net)
	if err != nil {
		return nil, nil, err
	}
	for g, gr := range groups {
		if err := st.AddGroup(gr.Indices, gr.Labels); err != nil {
			return nil, nil, fmt.Errorf("project %s: group %d: %w", m.Name, g, err)
		}
	}
	return st, led, nil
}

// start commits the run's charge (Poisson selection: every record's loss
// for the whole run, before anything is drawn; once, though a crash may
// run start again) and draws the initial set into the queue.
func (h *projectHost) start(m projectMeta, fence func(kvTx) error) error {
	st, _, err := h.stepper(m, nil, nil)
	if err != nil {
		return err
	}
	if err := st.ChargeRun(); err != nil { // idempotent (Input.ChargeKey): a restart does not charge twice
		return err
	}
	idx, err := st.DrawInitial()
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	m, err = h.updateFenced(fence, m.Name, func(tx kvTx, pm *projectMeta) error {
		if pm.State != stateStarting {
			return errState(*pm, stateStarting)
		}
		pm.State, pm.Phase, pm.Error = stateLabelling, 0, ""
		return fillQueueTx(tx, pm.Name, 0, idx)
	})
	if err != nil {
		return err
	}
	h.log.Info("project started", "project", m.Name, "initial", len(idx))
	return h.phaseIfEmpty(m, len(idx), fence)
}

// phaseIfEmpty ends a labelling phase whose queue is empty (nobody was
// selected) at once (h.mu held).
func (h *projectHost) phaseIfEmpty(m projectMeta, queued int, fence func(kvTx) error) error {
	if queued > 0 || m.State != stateLabelling {
		return nil
	}
	_, err := h.endPhase(m.Name, false, fence)
	return err
}

// train trains project m's next round on the groups labelled so far,
// from the last release, then stores the new model as a release (its
// charges are in the ledger before: Poisson's at the start, top-k's by
// Train and Select) together with the next selection in the queue.
func (h *projectHost) train(ctx context.Context, m projectMeta, run *projectRun) error {
	var net *nn.Net
	if m.Round > 0 {
		model, _, err := h.model(m.Name, m.Round)
		if err != nil {
			return err
		}
		net = model
	}
	st, led, err := h.stepper(m, net, func() { run.steps.Add(1) })
	if err != nil {
		return err
	}
	round := m.Round + 1
	rd, err := st.Train(ctx, round)
	if err != nil {
		return err
	}
	var chosen []int
	if round < m.rounds() {
		if chosen, err = st.Select(round); err != nil {
			return err
		}
	}
	file, err := releaseFile(m, st.Net(), round)
	if err != nil {
		return err
	}
	_, eps := led.MaxEpsilon()
	rel := projectRelease{Round: round, Time: time.Now().UTC(), Labelled: rd.Labelled, Steps: rd.Steps, EpsilonMax: eps,
		Seconds: time.Since(run.started).Seconds()}
	h.mu.Lock()
	defer h.mu.Unlock()
	m, err = h.updateFenced(run.fence, m.Name, func(tx kvTx, pm *projectMeta) error {
		if pm.State != stateTraining || pm.Round != round-1 {
			return errState(*pm, stateTraining)
		}
		if err := putReleaseTx(tx, pm.Name, rel, file); err != nil {
			return err
		}
		pm.Round, pm.Error = round, ""
		if round == pm.rounds() {
			pm.State = stateDone
			return clearQueueTx(tx, pm.Name)
		}
		pm.State, pm.Phase = stateLabelling, round
		return fillQueueTx(tx, pm.Name, round, chosen)
	})
	if err != nil {
		return err
	}
	h.nets[m.Name] = loadedNet{round: round, net: st.Net()}
	h.log.Info("project round released", "project", m.Name, "round", round, "labelled", rd.Labelled, "selected", len(chosen))
	return h.phaseIfEmpty(m, len(chosen), run.fence)
}

// releaseFile is round's model in the file format `dpal train --out`
// writes, with the project's privacy record.
func releaseFile(m projectMeta, net *nn.Net, round int) ([]byte, error) {
	record, err := json.Marshal(struct {
		Private   bool    `json:"private"`
		Project   string  `json:"project"`
		Round     int     `json:"round"`
		Rounds    int     `json:"rounds"`
		Selection string  `json:"selection"`
		Epsilon   float64 `json:"epsilon"`
		Delta     float64 `json:"delta"`
		Ledger    string  `json:"ledger"`
	}{true, m.Name, round, m.rounds(), m.Settings.Selection, m.epsilonPerRecord(), m.Config.Delta, projectPrefix(m.Name)})
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := net.Save(&b, nn.Meta{ClassNames: m.Settings.Classes, Privacy: record}); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// model returns release round's network (0: the last), loading it once.
func (h *projectHost) model(name string, round int) (*nn.Net, int, error) {
	h.mu.Lock()
	ln, ok := h.nets[name]
	h.mu.Unlock()
	if ok && (round == 0 || round == ln.round) {
		return ln.net, ln.round, nil
	}
	var file []byte
	err := h.store.db.View(func(tx kvTx) error {
		var err error
		file, round, err = modelTx(tx, name, round)
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	net, _, err := nn.Load(bytes.NewReader(file))
	if err != nil {
		return nil, 0, fmt.Errorf("project %s: release %d: %w", name, round, err)
	}
	return net, round, nil
}

// endPhase closes the labelling phase of project name (h.mu held): the
// labelled records become the phase's group, the open ones are dropped
// (close) — or, without close, the call is refused while any is open —
// and the next round's job is queued; its write checks fence.
func (h *projectHost) endPhase(name string, close bool, fence func(kvTx) error) (projectMeta, error) {
	m, err := h.updateFenced(fence, name, func(tx kvTx, pm *projectMeta) error {
		_, err := endPhaseTx(tx, pm, close)
		return err
	})
	if err != nil {
		return m, err
	}
	h.enqueue(name)
	return m, nil
}

// endPhaseTx ends pm's labelling phase inside tx: the labelled records
// become the phase's group, the open ones are dropped (close) — without
// close it is refused while any is open — and the state becomes
// training. It returns whether records were dropped.
func endPhaseTx(tx kvTx, pm *projectMeta, close bool) (int, error) {
	if pm.State != stateLabelling {
		return 0, errState(*pm, stateLabelling)
	}
	gr := groupRecord{Indices: []int{}, Labels: []int{}}
	open := 0
	err := forQueueTx(tx, pm.Name, -1, func(it queueItem) (bool, error) {
		switch it.Status {
		case statusLabelled:
			gr.Indices, gr.Labels = append(gr.Indices, it.Index), append(gr.Labels, it.Label)
		case statusOpen:
			open++
			gr.Dropped++
		default:
			gr.Dropped++
		}
		return true, nil
	})
	if err != nil {
		return 0, err
	}
	if open > 0 && !close {
		return 0, errState(*pm, "with every record labelled or skipped")
	}
	if open > 0 && pm.Config.Selection == pool.TopK {
		return 0, &apiError{status: 409, msg: "top-k selection fixes the query sizes its rates were planned for: label every record, or plan with Poisson selection"}
	}
	pm.Dropped += open
	if err := putGroupTx(tx, pm.Name, pm.Phase, gr); err != nil {
		return 0, err
	}
	pm.State = stateTraining
	return open, clearQueueTx(tx, pm.Name)
}

// progress is project name's running job, if any: round, steps done, steps
// of the round.
func (h *projectHost) progress(name string) (int, int64, int, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r, ok := h.running[name]
	if !ok {
		return 0, 0, 0, false
	}
	return r.round, r.steps.Load(), r.total, true
}

// cancel stops project name's running job (it becomes paused).
func (h *projectHost) cancel(name string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	r, ok := h.running[name]
	if ok {
		r.cancel()
	}
	return ok
}
