package service

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"regexp"
	"strconv"
	"testing"
)

// checkpointSize is the size of learner name's stored checkpoint.
func (ts *testServer) checkpointSize(name string) int {
	ts.t.Helper()
	var n int
	if err := ts.store.db.View(func(tx kvTx) error {
		n = len(tx.Bucket(bucketState).Get([]byte(name)))
		return nil
	}); err != nil {
		ts.t.Fatal(err)
	}
	return n
}

// metric reads one series' value from /metrics (-1 when absent).
func (ts *testServer) metric(series string) float64 {
	ts.t.Helper()
	req, _ := http.NewRequest("GET", ts.http.URL+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+ts.tok[RoleOfficer])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		ts.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindSubmatch(b)
	if m == nil {
		return -1
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		ts.t.Fatal(err)
	}
	return v
}

// TestCheckpointIndependentOfQueue: the checkpoint written with every
// commit does not grow with the open requests (they live in the store's
// index, not in the learner's state), so a commit's cost does not either.
func TestCheckpointIndependentOfQueue(t *testing.T) {
	ts := newTestServer(t)
	ts.mustDo(http.StatusCreated, RoleAdmin, "POST", "/v1/learners", `{"name":"a","dim":2}`, nil)
	ts.mustDo(http.StatusOK, RoleIngest, "POST", "/v1/learners/a/events", events(100), nil)
	var q queueView
	ts.mustDo(http.StatusOK, RoleOfficer, "GET", "/v1/learners/a/budget", "", &struct {
		Queue *queueView `json:"queue"`
	}{&q})
	small, open0 := ts.checkpointSize("a"), q.Open
	ts.mustDo(http.StatusOK, RoleIngest, "POST", "/v1/learners/a/events", events(3000), nil)
	ts.mustDo(http.StatusOK, RoleOfficer, "GET", "/v1/learners/a/budget", "", &struct {
		Queue *queueView `json:"queue"`
	}{&q})
	large := ts.checkpointSize("a")
	if q.Open < open0+1000 {
		t.Fatalf("open requests %d → %d: the test needs a growing queue", open0, q.Open)
	}
	if large > small+200 {
		t.Errorf("checkpoint grew from %d to %d bytes while the queue grew from %d to %d", small, large, open0, q.Open)
	}
	// The open requests come back from the index after a restart.
	ts.restart()
	var list struct {
		Requests []pendingView `json:"requests"`
		Open     int           `json:"open"`
	}
	ts.mustDo(http.StatusOK, RoleAnnotator, "GET", "/v1/learners/a/requests?limit=3", "", &list)
	if list.Open != q.Open || len(list.Requests) != 3 {
		t.Fatalf("after restart: %d open (want %d), page of %d", list.Open, q.Open, len(list.Requests))
	}
	ts.mustDo(http.StatusOK, RoleAnnotator, "POST", fmt.Sprintf("/v1/learners/a/requests/%d/claim", list.Requests[0].ID), "", nil)
	ts.mustDo(http.StatusOK, RoleAnnotator, "POST", "/v1/learners/a/labels", fmt.Sprintf(`{"id":%d,"y":1}`, list.Requests[0].ID), nil)
	ts.mustDo(http.StatusOK, RoleAnnotator, "GET", "/v1/learners/a/requests?limit=3", "", &list)
	if list.Open != q.Open-1 {
		t.Errorf("after a label: %d open, want %d", list.Open, q.Open-1)
	}
}

// TestQueueBound: with max_open_requests reached, new selections are
// masked (counted, not queued); /metrics and the budget show the queue's
// size and age; a label makes room again, across a restart.
func TestQueueBound(t *testing.T) {
	ts := newTestServer(t)
	ts.mustDo(http.StatusBadRequest, RoleAdmin, "POST", "/v1/learners", `{"name":"q","dim":2,"max_open_requests":-1}`, nil)
	ts.mustDo(http.StatusCreated, RoleAdmin, "POST", "/v1/learners", `{"name":"q","dim":2,"max_open_requests":5}`, nil)
	ts.mustDo(http.StatusOK, RoleIngest, "POST", "/v1/learners/q/events", events(200), nil)
	var list struct {
		Requests  []pendingView `json:"requests"`
		Open      int           `json:"open"`
		Unclaimed int           `json:"unclaimed"`
	}
	ts.mustDo(http.StatusOK, RoleAnnotator, "GET", "/v1/learners/q/requests", "", &list)
	if len(list.Requests) != 5 || list.Open != 5 || list.Unclaimed != 5 {
		t.Fatalf("requests %+v, want 5 open", list)
	}
	var b struct {
		Queue queueView `json:"queue"`
	}
	ts.mustDo(http.StatusOK, RoleOfficer, "GET", "/v1/learners/q/budget", "", &b)
	if b.Queue.Open != 5 || b.Queue.Max != 5 || b.Queue.Masked == 0 || b.Queue.OldestAgeSeconds < 0 {
		t.Errorf("queue %+v", b.Queue)
	}
	if v := ts.metric(`dpal_open_requests{learner="q"}`); v != 5 {
		t.Errorf("dpal_open_requests %v, want 5", v)
	}
	if v := ts.metric(`dpal_open_requests_max{learner="q"}`); v != 5 {
		t.Errorf("dpal_open_requests_max %v, want 5", v)
	}
	if v := ts.metric(`dpal_selections_masked_total{learner="q"}`); v != float64(b.Queue.Masked) {
		t.Errorf("dpal_selections_masked_total %v, want %d", v, b.Queue.Masked)
	}
	if v := ts.metric(`dpal_open_request_oldest_age_seconds{learner="q"}`); v < 0 {
		t.Errorf("dpal_open_request_oldest_age_seconds %v", v)
	}
	ts.restart()
	ts.mustDo(http.StatusOK, RoleAnnotator, "POST", "/v1/learners/q/requests/"+strconv.FormatUint(list.Requests[0].ID, 10)+"/claim", "", nil)
	ts.mustDo(http.StatusOK, RoleAnnotator, "POST", "/v1/learners/q/labels", fmt.Sprintf(`{"id":%d,"y":1}`, list.Requests[0].ID), nil)
	ts.mustDo(http.StatusOK, RoleAnnotator, "GET", "/v1/learners/q/requests", "", &list)
	if list.Open != 4 {
		t.Fatalf("after a label: %d open", list.Open)
	}
	ts.mustDo(http.StatusOK, RoleIngest, "POST", "/v1/learners/q/events", events(200), nil)
	ts.mustDo(http.StatusOK, RoleAnnotator, "GET", "/v1/learners/q/requests", "", &list)
	if list.Open != 5 {
		t.Errorf("after more events: %d open, want the bound 5", list.Open)
	}
}

// TestOpenIndexFromOldStore: a store written before the open-request
// index (the checkpoint holds the pending requests) is indexed at start,
// once, and its requests can be listed and labelled.
func TestOpenIndexFromOldStore(t *testing.T) {
	ts := newTestServer(t)
	ts.createLearner("a")
	ts.mustDo(http.StatusOK, RoleIngest, "POST", "/v1/learners/a/events", events(60), nil)
	var before requestList
	ts.mustDo(http.StatusOK, RoleAnnotator, "GET", "/v1/learners/a/requests", "", &before)
	if len(before.Requests) == 0 {
		t.Fatal("no open requests")
	}
	h := ts.srv.learners["a"]
	var state bytes.Buffer
	if err := h.l.SaveState(&state); err != nil {
		t.Fatal(err)
	}
	meta := h.meta
	meta.PendingOutside = false
	if err := ts.store.db.Update(func(tx kvTx) error {
		if err := tx.DeleteBucket([]byte("a" + subOpen)); err != nil {
			return err
		}
		if err := putJSON(tx.Bucket(bucketLearners), []byte("a"), meta); err != nil {
			return err
		}
		return tx.Bucket(bucketState).Put([]byte("a"), state.Bytes())
	}); err != nil {
		t.Fatal(err)
	}
	ts.restart()
	var after requestList
	ts.mustDo(http.StatusOK, RoleAnnotator, "GET", "/v1/learners/a/requests", "", &after)
	if !reflect.DeepEqual(before, after) || !ts.srv.learners["a"].meta.PendingOutside {
		t.Fatalf("after indexing: %+v, want %+v", after, before)
	}
	if ts.labelAll("a") != len(before.Requests) {
		t.Error("the indexed requests cannot all be labelled")
	}
}
