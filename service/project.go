package service

import (
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/dpal-dev/dpal/active/pool"
	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dpsgd"
)

// A pool project is pool-based DP active learning (paper 001; package
// active/pool) as a service: an admin declares the dataset's schema, the
// model and the privacy target, and the plan is computed and stored
// before any record is read; an ingest token uploads the pool; the
// trusted annotators label the records each phase selects; the training
// rounds run as background jobs; the officer reads the plan, the ledger
// (one group per pool record), the releases and the models. The loop is
// active/pool's Stepper, which runs the same mechanisms as `dpal pool
// run`. Neighbouring relation and guarantee: add/remove one pool record,
// the plan's (ε, δ) per record (docs/pool.md, Theorem 1 for Poisson
// selection); what leaves the service is the models and what is computed
// from them (post-processing).

// Project states.
const (
	stateUploading = "uploading" // the pool is not complete
	stateReady     = "ready"     // the pool is complete; an admin starts
	stateStarting  = "starting"  // a job charges the run and draws the initial set
	stateLabelling = "labelling" // the queue holds a phase's records
	stateTraining  = "training"  // a job trains the next round
	statePaused    = "paused"    // an admin cancelled the job; start resumes
	stateFailed    = "failed"    // the job failed; start retries
	stateDone      = "done"      // every round is trained
)

// projectRequest is the body of POST /v1/projects.
type projectRequest struct {
	Name string `json:"name"`
	// Dim is the number of features, or Image the image's height, width
	// and channels (channels-last; Dim is then their product).
	Dim     int      `json:"dim,omitempty"`
	Image   []int    `json:"image,omitempty"`
	Classes []string `json:"classes"`
	// PoolSize is the number of pool records the upload delivers: the
	// plan's n (Poisson selection's initial rate is Initial/PoolSize).
	PoolSize int `json:"pool_size"`
	// Preset names dpsgd's tuned setting (clip, optimiser, learning rate,
	// default model and batch): default mnist for images, csv otherwise.
	Preset        string   `json:"preset,omitempty"`
	Model         string   `json:"model,omitempty"`
	Epsilon       float64  `json:"epsilon"`
	Delta         float64  `json:"delta,omitempty"`
	EpsilonSelect float64  `json:"epsilon_select,omitempty"`
	Selection     string   `json:"selection,omitempty"`
	Acquisition   string   `json:"acquisition,omitempty"`
	PMax          float64  `json:"p_max,omitempty"`
	Threshold     *float64 `json:"threshold,omitempty"`
	PMin          float64  `json:"p_min,omitempty"`
	Initial       int      `json:"initial"`
	Queries       []int    `json:"queries"`
	Batch         int      `json:"batch,omitempty"`
	Epochs        int      `json:"epochs,omitempty"`
	Mode          string   `json:"mode,omitempty"`
	Accounting    string   `json:"accounting,omitempty"`
	Conversion    string   `json:"conversion,omitempty"`
}

// projectSettings are a project's resolved settings (defaults filled),
// what the officer reads beside the plan.
type projectSettings struct {
	Dim           int      `json:"dim"`
	Image         []int    `json:"image,omitempty"`
	Classes       []string `json:"classes"`
	PoolSize      int      `json:"pool_size"`
	Preset        string   `json:"preset"`
	Model         string   `json:"model"`
	Epsilon       float64  `json:"epsilon"`
	Delta         float64  `json:"delta"`
	EpsilonSelect float64  `json:"epsilon_select"`
	Selection     string   `json:"selection"`
	Acquisition   string   `json:"acquisition"`
	PMax          float64  `json:"p_max"`
	Threshold     float64  `json:"threshold"`
	PMin          float64  `json:"p_min"`
	Initial       int      `json:"initial"`
	Queries       []int    `json:"queries"`
	Batch         int      `json:"batch"`
	Epochs        int      `json:"epochs"`
	Mode          string   `json:"mode"`
	Accounting    string   `json:"accounting"`
	Conversion    string   `json:"conversion"`
}

// projectMeta is a project as stored: its settings, the plan's inputs
// (rebuilt by pool.Build, deterministic) and the plan as the officer
// reads it, and the state.
type projectMeta struct {
	Name     string          `json:"name"`
	Settings projectSettings `json:"settings"`
	Config   pool.Config     `json:"config"`
	Learner  pool.Learner    `json:"learner"`
	Plan     *pool.Plan      `json:"plan"`
	Created  time.Time       `json:"created"`
	State    string          `json:"state"`
	// Resume is the state start returns a paused or failed project to.
	Resume string `json:"resume,omitempty"`
	Error  string `json:"error,omitempty"`
	// Pooled is the number of pool records uploaded.
	Pooled int `json:"pooled"`
	// Round is the number of rounds trained (and released); Phase is the
	// group whose labels the queue holds (labelling).
	Round int `json:"round"`
	Phase int `json:"phase"`
	// Labels and Dropped count the labels given and the selections
	// dropped (skipped, or open when a phase was closed).
	Labels  int `json:"labels"`
	Dropped int `json:"dropped"`
}

// rounds is the plan's number of training rounds, T+1.
func (m projectMeta) rounds() int { return len(m.Config.Queries) + 1 }

// Queue item statuses.
const (
	statusOpen     = "open"
	statusLabelled = "labelled"
	statusSkipped  = "skipped"
)

// queueItem is one selected record awaiting (or given) its label.
type queueItem struct {
	Index     int       `json:"index"`
	Group     int       `json:"group"`
	Status    string    `json:"status"`
	Label     int       `json:"label"`
	Reason    string    `json:"reason,omitempty"`
	ClaimedBy string    `json:"claimed_by,omitempty"`
	ClaimedAt time.Time `json:"claimed_at,omitzero"`
	By        string    `json:"by,omitempty"`
}

// groupRecord is a labelled group: pool indices and their classes.
type groupRecord struct {
	Indices []int `json:"indices"`
	Labels  []int `json:"labels"`
	Dropped int   `json:"dropped"`
}

// projectRelease is one released model.
type projectRelease struct {
	Round    int       `json:"round"`
	Time     time.Time `json:"time"`
	Labelled int       `json:"labelled"`
	Steps    int       `json:"steps"`
	// EpsilonMax is the largest ε any pool record holds in the ledger
	// when the model was stored (its charges committed before).
	EpsilonMax float64 `json:"epsilon_max"`
	Seconds    float64 `json:"seconds"`
}

// The projects' errors with a fixed status.
var (
	errProjectExists = &apiError{status: http.StatusConflict, field: "name", msg: "a project of this name exists"}
	errNoProject     = &apiError{status: http.StatusNotFound, msg: "no such project"}
	errNoPoolRecord  = &apiError{status: http.StatusNotFound, field: "index", msg: "no such pool record"}
	errNoQueueItem   = &apiError{status: http.StatusNotFound, field: "index", msg: "this record is not in the annotator queue"}
	errNoRelease     = &apiError{status: http.StatusNotFound, msg: "no model released yet"}
	errItemDone      = &apiError{status: http.StatusConflict, field: "index", msg: "this record is already labelled or skipped"}
)

// errState is a 409 naming the state a call needs.
func errState(m projectMeta, want string) error {
	return &apiError{status: http.StatusConflict, msg: fmt.Sprintf("project %s is %s; this needs it %s", m.Name, m.State, want)}
}

// maxPoolSize bounds a project's pool.
const maxPoolSize = 10_000_000

// decodeProject validates a create request and resolves it into the
// stored project: settings, the pool.Config, the learner and the plan.
// The plan is built here, before any record exists.
func decodeProject(b []byte) (projectMeta, error) {
	var req projectRequest
	if err := decodeStrict(b, &req); err != nil {
		return projectMeta{}, err
	}
	if !nameRE.MatchString(req.Name) {
		return projectMeta{}, badField("name", "want 1-63 characters of a-z, 0-9, _ and -, starting with a letter or digit")
	}
	set, image, err := projectSchema(req)
	if err != nil {
		return projectMeta{}, err
	}
	cfg, err := projectConfig(req, &set)
	if err != nil {
		return projectMeta{}, err
	}
	lr, err := projectLearner(req, &set, image)
	if err != nil {
		return projectMeta{}, err
	}
	cfg.Batch = set.Batch
	if err := cfg.Validate(); err != nil {
		return projectMeta{}, badField("body", "the plan: %v", err)
	}
	if err := pool.CheckLearner(cfg, lr); err != nil {
		return projectMeta{}, badField("acquisition", "%v", err)
	}
	plan, err := pool.Build(cfg)
	if err != nil {
		return projectMeta{}, badField("body", "the plan: %v", err)
	}
	return projectMeta{Name: req.Name, Settings: set, Config: cfg, Learner: lr, Plan: plan, Created: time.Now().UTC(),
		State: stateUploading}, nil
}

// projectSchema checks the dataset's schema: dim or image, the classes,
// the pool size.
func projectSchema(req projectRequest) (projectSettings, [3]int, error) {
	set := projectSettings{Dim: req.Dim, Classes: req.Classes, PoolSize: req.PoolSize, Preset: req.Preset}
	var image [3]int
	switch {
	case len(req.Image) == 3:
		for i, v := range req.Image {
			if v < 1 || v > 4096 {
				return set, image, badField("image", "want [height, width, channels], each in [1, 4096]")
			}
			image[i] = v
		}
		d := image[0] * image[1] * image[2]
		if req.Dim != 0 && req.Dim != d {
			return set, image, badField("dim", "is %d, the image has %d values", req.Dim, d)
		}
		set.Dim, set.Image = d, req.Image
	case len(req.Image) != 0:
		return set, image, badField("image", "want [height, width, channels]")
	}
	if set.Dim < 1 || set.Dim > 1<<20 {
		return set, image, badField("dim", "want an integer in [1, 1048576] (or image)")
	}
	if len(req.Classes) < 2 || len(req.Classes) > 1000 {
		return set, image, badField("classes", "want 2 to 1000 class names")
	}
	seen := map[string]bool{}
	for _, c := range req.Classes {
		if c == "" || len(c) > 64 || seen[c] {
			return set, image, badField("classes", "want distinct names of 1 to 64 bytes")
		}
		seen[c] = true
	}
	if req.PoolSize < 1 || req.PoolSize > maxPoolSize {
		return set, image, badField("pool_size", "want an integer in [1, %d]", maxPoolSize)
	}
	if set.Preset == "" {
		set.Preset = "csv"
		if set.Image != nil {
			set.Preset = "mnist"
		}
	}
	return set, image, nil
}

// projectConfig resolves the plan's settings as `dpal pool run` does:
// δ from the pool size (account.DefaultDelta), DefaultEpochs, Poisson
// selection with p_max 0.2, step amplification, basic accounting.
func projectConfig(req projectRequest, set *projectSettings) (pool.Config, error) {
	if !(req.Epsilon > 0) || math.IsInf(req.Epsilon, 0) {
		return pool.Config{}, badField("epsilon", "want a finite ε > 0")
	}
	if req.Initial < 1 || len(req.Queries) == 0 || len(req.Queries) > 100 {
		return pool.Config{}, badField("queries", "want initial ≥ 1 and 1 to 100 query sizes")
	}
	for _, q := range req.Queries {
		if q < 1 {
			return pool.Config{}, badField("queries", "every query size must be ≥ 1")
		}
	}
	set.Epsilon, set.Delta, set.EpsilonSelect = req.Epsilon, req.Delta, req.EpsilonSelect
	if set.Delta == 0 {
		set.Delta = account.DefaultDelta(req.PoolSize)
	}
	if !(set.Delta > 0 && set.Delta < 1) {
		return pool.Config{}, badField("delta", "want 0 < δ < 1")
	}
	set.Initial, set.Queries, set.Epochs, set.PMax, set.PMin = req.Initial, req.Queries, req.Epochs, req.PMax, req.PMin
	if set.Epochs == 0 {
		set.Epochs = pool.DefaultEpochs
	}
	if set.PMax == 0 {
		set.PMax = 0.2
	}
	cfg := pool.Config{Epsilon: set.Epsilon, EpsilonSelect: set.EpsilonSelect, Delta: set.Delta, Epochs: set.Epochs,
		Initial: set.Initial, Queries: set.Queries, PoolSize: req.PoolSize, PMax: set.PMax, Labeler: pool.Trusted}
	var err error
	set.Selection = orDefault(req.Selection, "poisson")
	if cfg.Selection, err = pool.ParseSelection(set.Selection); err != nil {
		return cfg, badField("selection", "%v", err)
	}
	set.Mode = orDefault(req.Mode, "step-amplification")
	if cfg.Mode, err = pool.ParseMode(set.Mode); err != nil {
		return cfg, badField("mode", "%v", err)
	}
	set.Accounting = orDefault(req.Accounting, "basic")
	if cfg.Accounting, err = pool.ParseAccounting(set.Accounting); err != nil {
		return cfg, badField("accounting", "%v", err)
	}
	set.Conversion = orDefault(req.Conversion, "balle2020")
	if cfg.Conversion, err = account.ParseConversion(set.Conversion); err != nil {
		return cfg, badField("conversion", "%v", err)
	}
	return cfg, nil
}

// projectLearner resolves the model and DP-SGD setting from dpsgd's
// preset at the target ε (as `dpal pool run` does), the batch
// (pool.DefaultBatch unless given) and the acquisition.
func projectLearner(req projectRequest, set *projectSettings, image [3]int) (pool.Learner, error) {
	p, err := dpsgd.Preset(set.Preset, req.Model, req.Epsilon)
	if err != nil {
		return pool.Learner{}, badField("model", "%v", err)
	}
	if p, err = p.ForData(set.Dim, len(set.Classes), image); err != nil {
		return pool.Learner{}, badField("model", "%v", err)
	}
	if err := p.Model.Validate(); err != nil {
		return pool.Learner{}, badField("model", "%v", err)
	}
	set.Model = orDefault(req.Model, p.Model.Arch)
	def, err := dpsgd.Preset(set.Preset, "", dpsgd.LowEpsilon)
	if err != nil {
		return pool.Learner{}, badField("preset", "%v", err)
	}
	set.Batch = req.Batch
	if set.Batch == 0 {
		set.Batch = pool.DefaultBatch(def.Batch, req.Initial)
	}
	if set.Batch < 1 {
		return pool.Learner{}, badField("batch", "want an integer ≥ 1")
	}
	set.Acquisition = orDefault(req.Acquisition, "entropy")
	acq, err := pool.ParseAcquisition(set.Acquisition)
	if err != nil || acq == pool.BALD {
		return pool.Learner{}, badField("acquisition", "want random, lc, margin or entropy")
	}
	set.Threshold = 0.25
	if req.Threshold != nil {
		set.Threshold = *req.Threshold
	}
	if !(set.Threshold >= 0 && set.Threshold <= 1) {
		return pool.Learner{}, badField("threshold", "want a score in [0, 1]")
	}
	if !(set.PMin >= 0 && set.PMin <= set.PMax) {
		return pool.Learner{}, badField("p_min", "want 0 ≤ p_min ≤ p_max")
	}
	return pool.Learner{Spec: p.Model, Train: p.Config, Acquisition: acq, Threshold: set.Threshold, PMin: set.PMin}, nil
}

// orDefault is s, or def when s is empty.
func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// epsilonPerRecord is the ε the plan charges every record at most: the
// amplified Poisson ε, or the target under top-k selection.
func (m projectMeta) epsilonPerRecord() float64 {
	if m.Plan.Poisson != nil {
		return m.Plan.Poisson.Epsilon
	}
	return m.Config.Epsilon
}
