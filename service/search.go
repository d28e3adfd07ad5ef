package service

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/groupsearch"
)

// A search population is the anomaly search of package groupsearch
// (Bittner, Sarwate, Wright 2018) as a service: ingest tokens send the
// individuals' scores, an admin runs a search, and each run's answers are
// charged to the population's own ledger (group "search") before they
// leave the oracle; the run's result (the top set) is then stored and
// returned. The guarantee is the package's: anomaly-restricted neighbours
// (Definition 1), Tε for T answers (Prop. 2), thresholds fixed without
// looking at the scores. A crash during a run leaves its charges in the
// ledger and no result: spend without a release, never the reverse.

// searchMeta is a population's stored settings.
type searchMeta struct {
	Name    string              `json:"name"`
	Oracle  groupsearch.Kind    `json:"oracle"`
	Params  groupsearch.Params  `json:"params"`
	Halting groupsearch.Halting `json:"halting"`
	Top     int                 `json:"top"`
	Budget  float64             `json:"budget"`
	Created time.Time           `json:"created"`
}

// searchRun is one stored result, its indices the clients' own.
type searchRun struct {
	Run  int                `json:"run"`
	Time time.Time          `json:"time"`
	Size int                `json:"size"`
	Res  groupsearch.Result `json:"result"`
}

// searchPop is one hosted population; mu serialises its runs and writes.
type searchPop struct {
	store *Store
	meta  searchMeta
	led   *ledger.Ledger
	mu    sync.Mutex
}

var bucketSearches = []byte("searches")

// searchPrefix names a population's buckets apart from learners' (':'
// cannot occur in a learner name).
func searchPrefix(name string) string { return "search:" + name }

const (
	subScores  = "/scores"
	subResults = "/results"
)

// searchRequest is the body of POST /v1/searches.
type searchRequest struct {
	Name    string              `json:"name"`
	Oracle  string              `json:"oracle"`
	Params  groupsearch.Params  `json:"params"`
	Halting groupsearch.Halting `json:"halting"`
	Top     int                 `json:"top"`
	// Budget is the ledger's ε (default 100 answers' worth, as `dpal search`).
	Budget float64 `json:"budget"`
}

// decodeSearch validates a create request.
func decodeSearch(b []byte) (searchMeta, error) {
	var req searchRequest
	if err := decodeStrict(b, &req); err != nil {
		return searchMeta{}, err
	}
	if !nameRE.MatchString(req.Name) {
		return searchMeta{}, badField("name", "want 1-63 characters of a-z, 0-9, _ and -, starting with a letter or digit")
	}
	kind, err := groupsearch.ParseKind(req.Oracle)
	if err != nil {
		return searchMeta{}, badField("oracle", "want rr, noisy-max, binarized or mean")
	}
	if err := req.Params.Validate(); err != nil {
		return searchMeta{}, settingError("params", err)
	}
	if req.Top == 0 {
		req.Top = 1
	}
	if req.Top < 1 || req.Top > 1000 {
		return searchMeta{}, badField("top", "want an integer in [1, 1000]")
	}
	if req.Budget == 0 {
		req.Budget = 100 * req.Params.Epsilon
	}
	if !(req.Budget >= req.Params.Epsilon) || math.IsInf(req.Budget, 0) {
		return searchMeta{}, badField("budget", "must be finite and at least one answer's ε (%g)", req.Params.Epsilon)
	}
	req.Halting.Budget = req.Budget
	if err := req.Halting.Validate(); err != nil {
		return searchMeta{}, settingError("halting", err)
	}
	return searchMeta{Name: req.Name, Oracle: kind, Params: req.Params, Halting: req.Halting, Top: req.Top,
		Budget: req.Budget, Created: time.Now().UTC()}, nil
}

// createSearch stores a new population and opens its ledger.
func (s *Store) createSearch(m searchMeta) (*searchPop, error) {
	pre := searchPrefix(m.Name)
	err := s.db.Update(func(tx kvTx) error {
		if err := lockTx(tx, pre); err != nil {
			return err
		}
		sb, err := tx.CreateBucketIfNotExists(bucketSearches)
		if err != nil {
			return err
		}
		if sb.Get([]byte(m.Name)) != nil {
			return errSearchExists
		}
		if err := dropLearnerBuckets(tx, pre); err != nil {
			return err
		}
		for _, sub := range []string{subScores, subResults, subLedgerMeta, subLedgerLog} {
			if _, err := tx.CreateBucketIfNotExists([]byte(pre + sub)); err != nil {
				return err
			}
		}
		return putJSON(sb, []byte(m.Name), m)
	})
	if err != nil {
		return nil, err
	}
	return s.openSearch(m)
}

func (s *Store) openSearch(m searchMeta) (*searchPop, error) {
	led, err := s.openLedger(searchPrefix(m.Name), account.Budget{Epsilon: m.Budget})
	if err != nil {
		return nil, fmt.Errorf("search %s: %w", m.Name, err)
	}
	return &searchPop{store: s, meta: m, led: led}, nil
}

// loadSearches opens every stored population.
func (s *Store) loadSearches() (map[string]*searchPop, error) {
	metas, err := s.loadSearchMetas()
	out := map[string]*searchPop{}
	for _, m := range metas {
		p, err := s.openSearch(m)
		if err != nil {
			return nil, err
		}
		out[m.Name] = p
	}
	return out, err
}

// loadSearchMetas reads every stored population's settings.
func (s *Store) loadSearchMetas() ([]searchMeta, error) {
	var metas []searchMeta
	err := s.db.View(func(tx kvTx) error {
		sb := tx.Bucket(bucketSearches)
		if sb == nil {
			return nil
		}
		return sb.ForEach(func(k, v []byte) error {
			var m searchMeta
			if err := jsonUnmarshal(v, &m); err != nil {
				return fmt.Errorf("search %s: %w", k, err)
			}
			metas = append(metas, m)
			return nil
		})
	})
	return metas, err
}

// scoreResult is the public answer for one scores line.
type scoreResult struct {
	Line   int    `json:"line"`
	Status string `json:"status"`
	Index  *int64 `json:"index,omitempty"`
	Error  string `json:"error,omitempty"`
	Field  string `json:"field,omitempty"`
}

// maxIndex bounds a client's individual index.
const maxIndex = 1 << 40

// parseScore parses "index,score" or "score" (index: next, the line's
// count of accepted scores before it). Scores must be finite and ≥ 0; the
// thresholds are checked by the run (groupsearch.CheckScores).
func parseScore(line []byte, next int64) (int64, float64, string) {
	idx := next
	text := string(line)
	if a, b, ok := strings.Cut(text, ","); ok {
		i, err := strconv.ParseInt(strings.TrimSpace(a), 10, 64)
		if err != nil || i < 0 || i >= maxIndex {
			return 0, 0, "index"
		}
		idx, text = i, b
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(text), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, 0, "score"
	}
	return idx, v, ""
}

// addScores stores the body's scores (a later score for an index replaces
// the earlier one) in one transaction.
func (p *searchPop) addScores(body []byte) ([]scoreResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []scoreResult
	err := p.store.db.Update(func(tx kvTx) error {
		// Replicas on a shared store add scores one at a time.
		if err := lockTx(tx, searchPrefix(p.meta.Name)); err != nil {
			return err
		}
		b := tx.Bucket([]byte(searchPrefix(p.meta.Name) + subScores))
		next := int64(b.KeyN())
		for n, line := range strings.Split(string(body), "\n") {
			line = strings.TrimSpace(line)
			if line == "" || line[0] == '#' {
				continue
			}
			idx, v, field := parseScore([]byte(line), next)
			if field != "" {
				out = append(out, scoreResult{Line: n + 1, Status: "rejected", Error: "invalid-input", Field: field})
				continue
			}
			var val [8]byte
			binary.BigEndian.PutUint64(val[:], math.Float64bits(v))
			if err := b.Put(ledger.Uint64Key(uint64(idx)), val[:]); err != nil {
				return err
			}
			next++
			out = append(out, scoreResult{Line: n + 1, Status: "accepted", Index: &idx})
		}
		return nil
	})
	return out, err
}

// run searches the stored scores; every answer is charged to the ledger
// before it leaves the oracle, and the result is stored before it is
// returned.
func (p *searchPop) run() (searchRun, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var labels []int
	var scores []float64
	err := p.store.db.View(func(tx kvTx) error {
		return tx.Bucket([]byte(searchPrefix(p.meta.Name) + subScores)).ForEach(func(k, v []byte) error {
			labels = append(labels, int(ledger.KeyUint64(k)))
			scores = append(scores, math.Float64frombits(binary.BigEndian.Uint64(v)))
			return nil
		})
	})
	if err != nil {
		return searchRun{}, err
	}
	if _, anomalies, err := groupsearch.CheckScores(scores, p.meta.Params); err != nil || len(anomalies) != 1 {
		// The answer names no score (CheckScores' message would).
		return searchRun{}, &apiError{status: http.StatusConflict, field: "scores", msg: searchScoreProblem(err)}
	}
	r := rng.Secure()
	o, err := groupsearch.NewOracle(p.meta.Oracle, scores, p.meta.Params, p.led, "search", r)
	if err != nil {
		return searchRun{}, &apiError{status: http.StatusConflict, field: "scores", msg: searchScoreProblem(err)}
	}
	lik, err := p.meta.Params.Likelihood(p.meta.Oracle)
	if err != nil {
		return searchRun{}, err
	}
	srch, err := groupsearch.NewSearcher(len(scores), lik, r)
	if err != nil {
		return searchRun{}, err
	}
	h := p.meta.Halting
	if err := p.led.Refresh(); err != nil { // other replicas' runs
		return searchRun{}, err
	}
	spent, _ := p.led.Spent("search")
	h.Budget = p.meta.Budget - spent // what this population has left
	if h.Budget < p.meta.Params.Epsilon {
		return searchRun{}, &apiError{status: http.StatusConflict, msg: "the population's budget is spent"}
	}
	res, err := srch.Run(o, h, p.meta.Top)
	if err != nil && (!errors.Is(err, account.ErrBudgetExceeded) || res.Queries == 0) {
		return searchRun{}, err
	}
	for i, t := range res.Top {
		res.Top[i] = labels[t]
	}
	run := searchRun{Time: time.Now().UTC(), Size: len(scores), Res: res}
	err = p.store.db.Update(func(tx kvTx) error {
		// Numbered under the population's lock: replicas' runs never
		// share a number.
		if err := lockTx(tx, searchPrefix(p.meta.Name)); err != nil {
			return err
		}
		b := tx.Bucket([]byte(searchPrefix(p.meta.Name) + subResults))
		run.Run = b.KeyN() + 1
		return putJSON(b, ledger.Uint64Key(uint64(run.Run)), run)
	})
	return run, err
}

// searchScoreProblem says what is wrong with the stored scores without
// any score's value.
func searchScoreProblem(err error) string {
	var se *groupsearch.ScoreError
	switch {
	case errors.Is(err, groupsearch.ErrNoAnomaly):
		return "no score reaches t_high: the model needs exactly one anomaly"
	case errors.As(err, &se):
		return "some scores lie strictly between t_low and t_high (set params.clip to lower them to t_low)"
	case err == nil:
		return "several scores reach t_high: the model needs exactly one anomaly"
	}
	return "the stored scores do not fit the search's model"
}

// runs lists the stored results.
func (p *searchPop) runs() ([]searchRun, error) {
	out := []searchRun{}
	err := p.store.db.View(func(tx kvTx) error {
		return tx.Bucket([]byte(searchPrefix(p.meta.Name) + subResults)).ForEach(func(_, v []byte) error {
			var r searchRun
			if err := jsonUnmarshal(v, &r); err != nil {
				return err
			}
			out = append(out, r)
			return nil
		})
	})
	return out, err
}

// The search endpoints.

func (s *Server) search(r *http.Request) (*searchPop, error) {
	s.mu.RLock()
	p, ok := s.searches[r.PathValue("name")]
	s.mu.RUnlock()
	if !ok && s.rep != nil { // created on another replica?
		if err := s.syncShared(); err != nil {
			return nil, err
		}
		s.mu.RLock()
		p, ok = s.searches[r.PathValue("name")]
		s.mu.RUnlock()
	}
	if !ok {
		return nil, errNoSearch
	}
	return p, nil
}

func (s *Server) createSearch(w http.ResponseWriter, r *http.Request, _ caller) error {
	body, err := s.readBody(w, r, s.opts.MaxBody)
	if err != nil {
		return err
	}
	m, err := decodeSearch(body)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.searches[m.Name]; ok {
		return errSearchExists
	}
	p, err := s.store.createSearch(m)
	if err != nil {
		return err
	}
	s.searches[m.Name] = p
	s.log.Info("search population created", "search", m.Name, "oracle", m.Oracle, "budget", m.Budget)
	writeJSON(w, http.StatusCreated, m)
	return nil
}

func (s *Server) addScores(w http.ResponseWriter, r *http.Request, _ caller) error {
	p, err := s.search(r)
	if err != nil {
		return err
	}
	body, err := s.readBody(w, r, s.opts.MaxEventsBody)
	if err != nil {
		return err
	}
	res, err := p.addScores(body)
	if err != nil {
		return err
	}
	if len(res) == 0 {
		return badField("body", "no scores")
	}
	writeJSON(w, http.StatusOK, map[string]any{"results": res})
	return nil
}

func (s *Server) runSearch(w http.ResponseWriter, r *http.Request, _ caller) error {
	p, err := s.search(r)
	if err != nil {
		return err
	}
	run, err := p.run()
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, run)
	return nil
}

func (s *Server) getSearch(w http.ResponseWriter, r *http.Request, _ caller) error {
	p, err := s.search(r)
	if err != nil {
		return err
	}
	if s.rep != nil { // other replicas' runs
		if err := p.led.Refresh(); err != nil {
			return err
		}
	}
	runs, err := p.runs()
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"search": p.meta, "runs": runs, "groups": p.led.Summary()})
	return nil
}
