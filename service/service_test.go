package service

import (
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/dpal-dev/dpal/active/stream"
	"github.com/dpal-dev/dpal/dp/ledger"
)

type ingestAnswer struct {
	Accepted, Rejected int
	Results            []lineResult
}

type requestList struct {
	Requests []pendingView `json:"requests"`
}

// labelAll claims and labels every open request, returning how many.
func (ts *testServer) labelAll(name string) int {
	var list requestList
	ts.mustDo(http.StatusOK, RoleAnnotator, "GET", "/v1/learners/"+name+"/requests", "", &list)
	for _, r := range list.Requests {
		var c claimView
		ts.mustDo(http.StatusOK, RoleAnnotator, "POST", fmt.Sprintf("/v1/learners/%s/requests/%d/claim", name, r.ID), "", &c)
		if len(c.X) != 2 {
			ts.t.Fatalf("claimed record %+v", c)
		}
		y := 1
		if c.X[0] < 0 {
			y = -1
		}
		ts.mustDo(http.StatusOK, RoleAnnotator, "POST", "/v1/learners/"+name+"/labels", fmt.Sprintf(`{"id":%d,"y":%d}`, r.ID, y), nil)
	}
	return len(list.Requests)
}

// TestFlow: events in, requests claimed and labelled, releases out, each
// paid for in the ledger, and everything the officer reads agrees.
func TestFlow(t *testing.T) {
	ts := newTestServer(t)
	ts.createLearner("fraud")
	var ans ingestAnswer
	ts.mustDo(http.StatusOK, RoleIngest, "POST", "/v1/learners/fraud/events", events(40)+`{"x":[0.1,0.2],"id":"rec-7"}`+"\n", &ans)
	if ans.Accepted != 41 || ans.Rejected != 0 {
		t.Fatalf("answer %+v", ans)
	}
	labelled := ts.labelAll("fraud")
	if labelled == 0 {
		t.Fatal("no label requests in 41 events")
	}
	var rels struct{ Releases []releaseRecord }
	ts.mustDo(http.StatusOK, RoleOfficer, "GET", "/v1/learners/fraud/releases", "", &rels)
	if len(rels.Releases) != labelled {
		t.Errorf("%d releases for %d labels (FLMB, L = 1)", len(rels.Releases), labelled)
	}
	var m modelView
	ts.mustDo(http.StatusOK, RoleOfficer, "GET", "/v1/learners/fraud/model", "", &m)
	last := rels.Releases[len(rels.Releases)-1]
	if m.Update != last.Update || !reflect.DeepEqual(m.W, last.W) {
		t.Errorf("model %+v, last release %+v", m, last)
	}
	var b budgetView
	ts.mustDo(http.StatusOK, RoleOfficer, "GET", "/v1/learners/fraud/budget", "", &b)
	if b.Stats.Observed != 41 || b.Stats.Labelled != labelled || len(b.Groups) != 2 {
		t.Errorf("budget %+v", b)
	}
	var rep ledger.Report
	ts.mustDo(http.StatusOK, RoleOfficer, "GET", "/v1/ledger?learner=fraud", "", &rep)
	if len(rep.Entries) != 2 || rep.Meta.Budget.Epsilon != 2 {
		t.Errorf("ledger %+v", rep)
	}
	var eps recordEpsilonView
	ts.mustDo(http.StatusOK, RoleOfficer, "GET", "/v1/records/rec-7/epsilon", "", &eps)
	if eps.Event != 41 || eps.Epsilon < 1 {
		t.Errorf("record epsilon %+v", eps)
	}
	ts.mustDo(http.StatusOK, RoleOfficer, "GET", "/v1/records/fraud:1/epsilon", "", &eps)
	if eps.Epsilon < 1 || eps.Group == "" {
		t.Errorf("record fraud:1 epsilon %+v", eps)
	}
}

// TestRestartResumesExactly: after a close and reopen the learner has the
// same counters, model, requests and spend, and goes on.
func TestRestartResumesExactly(t *testing.T) {
	ts := newTestServer(t)
	ts.createLearner("a")
	ts.mustDo(http.StatusOK, RoleIngest, "POST", "/v1/learners/a/events", events(30), nil)
	ts.labelAll("a")
	ts.mustDo(http.StatusOK, RoleIngest, "POST", "/v1/learners/a/events", events(10), nil)
	var before, after budgetView
	var mb, ma modelView
	var rb, ra requestList
	ts.mustDo(http.StatusOK, RoleOfficer, "GET", "/v1/learners/a/budget", "", &before)
	ts.mustDo(http.StatusOK, RoleOfficer, "GET", "/v1/learners/a/model", "", &mb)
	ts.mustDo(http.StatusOK, RoleAnnotator, "GET", "/v1/learners/a/requests", "", &rb)
	ts.restart()
	ts.mustDo(http.StatusOK, RoleOfficer, "GET", "/v1/learners/a/budget", "", &after)
	ts.mustDo(http.StatusOK, RoleOfficer, "GET", "/v1/learners/a/model", "", &ma)
	ts.mustDo(http.StatusOK, RoleAnnotator, "GET", "/v1/learners/a/requests", "", &ra)
	before.Queue.OldestAgeSeconds, after.Queue.OldestAgeSeconds = 0, 0 // the clock moved on
	if !reflect.DeepEqual(before, after) || !reflect.DeepEqual(mb, ma) || !reflect.DeepEqual(rb, ra) {
		t.Fatalf("after restart:\n%+v\n%+v\n%+v\nbefore:\n%+v\n%+v\n%+v", after, ma, ra, before, mb, rb)
	}
	if ts.labelAll("a") != len(rb.Requests) {
		t.Error("requests pending before the restart cannot be labelled after it")
	}
	var rep ledger.Report
	ts.mustDo(http.StatusOK, RoleOfficer, "GET", "/v1/ledger?learner=a", "", &rep)
	if len(rep.Entries) != 2 {
		t.Errorf("%d ledger entries after a restart, want 2 (selection, update): a resume must not pay twice", len(rep.Entries))
	}
	for _, g := range rep.Groups {
		// ε_s + ε_g, the Gaussian update's ρ calibrated to ε_g from below.
		if g.Group == stream.GroupBatched && (g.Epsilon > 2 || g.Epsilon < 2-1e-9) {
			t.Errorf("batched group spent %v, want 2 (to 1e-9, never above)", g.Epsilon)
		}
	}
}

// TestIdempotentIngest: a replayed batch returns the stored answer and is
// not observed again (the ledger charges each record once).
func TestIdempotentIngest(t *testing.T) {
	ts := newTestServer(t)
	ts.createLearner("a")
	var first, second ingestAnswer
	ts.mustDo(http.StatusOK, RoleIngest, "POST", "/v1/learners/a/events", events(5), &first, "Idempotency-Key", "batch-1")
	ts.mustDo(http.StatusOK, RoleIngest, "POST", "/v1/learners/a/events", events(5), &second, "Idempotency-Key", "batch-1")
	if !reflect.DeepEqual(first, second) {
		t.Errorf("replay answered %+v, first %+v", second, first)
	}
	var b budgetView
	ts.mustDo(http.StatusOK, RoleOfficer, "GET", "/v1/learners/a/budget", "", &b)
	if b.Stats.Observed != 5 {
		t.Errorf("observed %d after a replayed batch of 5", b.Stats.Observed)
	}
}

// TestConcurrentIngestAndLabels: concurrent batches, labels and reads
// share commits (group commit) and lose nothing.
func TestConcurrentIngestAndLabels(t *testing.T) {
	ts := newTestServer(t)
	ts.createLearner("a")
	const workers, batches = 4, 5
	done := make(chan int, workers)
	for w := range workers {
		go func() {
			n := 0
			for b := range batches {
				var ans ingestAnswer
				if ts.do(RoleIngest, "POST", "/v1/learners/a/events", events(10), &ans, "Idempotency-Key", fmt.Sprintf("w%d-b%d", w, b)) == http.StatusOK {
					n += ans.Accepted
				}
				var list requestList
				ts.do(RoleAnnotator, "GET", "/v1/learners/a/requests?limit=1", "", &list)
				for _, r := range list.Requests {
					if ts.do(RoleAnnotator, "POST", fmt.Sprintf("/v1/learners/a/requests/%d/claim", r.ID), "", nil) == http.StatusOK {
						ts.do(RoleAnnotator, "POST", "/v1/learners/a/labels", fmt.Sprintf(`{"id":%d,"y":1}`, r.ID), nil)
					}
				}
			}
			done <- n
		}()
	}
	total := 0
	for range workers {
		total += <-done
	}
	var b budgetView
	var rels struct{ Releases []releaseRecord }
	ts.mustDo(http.StatusOK, RoleOfficer, "GET", "/v1/learners/a/budget", "", &b)
	ts.mustDo(http.StatusOK, RoleOfficer, "GET", "/v1/learners/a/releases", "", &rels)
	if total != workers*batches*10 || b.Stats.Observed != total || len(rels.Releases) != b.Stats.Updates {
		t.Errorf("acknowledged %d, observed %d; %d releases for %d updates", total, b.Stats.Observed, len(rels.Releases), b.Stats.Updates)
	}
	ts.restart()
	var after budgetView
	ts.mustDo(http.StatusOK, RoleOfficer, "GET", "/v1/learners/a/budget", "", &after)
	after.Queue.OldestAgeSeconds, b.Queue.OldestAgeSeconds = 0, 0 // the clock moved on
	if !reflect.DeepEqual(after, b) {
		t.Errorf("after restart %+v, before %+v", after, b)
	}
}

// TestPage: the page and its assets are served with a strict content
// policy, and / leads to it.
func TestPage(t *testing.T) {
	ts := newTestServer(t)
	for _, p := range []string{"/ui/", "/ui/app.js", "/ui/style.css"} {
		resp, err := http.Get(ts.http.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'self'") {
			t.Errorf("%s: %d, CSP %q", p, resp.StatusCode, resp.Header.Get("Content-Security-Policy"))
		}
	}
	resp, err := http.Get(ts.http.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Request.URL.Path != "/ui/" {
		t.Errorf("/ led to %s", resp.Request.URL.Path)
	}
	if got := ts.do("", "GET", "/nothing", "", nil); got != http.StatusNotFound {
		t.Errorf("/nothing: %d", got)
	}
}
