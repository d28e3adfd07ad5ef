package service

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dpal-dev/dpal/model/nn"
)

// projectBlobs is a 3-class pool of n records in 4 dimensions (class c
// shifted along axis c), as JSON Lines with id "r<i>", and the classes.
func projectBlobs(n int, seed uint64) (string, []int) {
	g := rand.New(rand.NewPCG(seed, 7))
	var b strings.Builder
	classes := make([]int, n)
	for i := range n {
		c := g.IntN(3)
		x := make([]float64, 4)
		for j := range x {
			x[j] = 0.1 * g.NormFloat64()
		}
		x[c] += 0.4
		classes[i] = c
		json.NewEncoder(&b).Encode(map[string]any{"x": x, "id": "r" + strconv.Itoa(i)})
	}
	return b.String(), classes
}

// projectBody is a small project's create request.
func projectBody(name, selection, acquisition string, n int) string {
	return fmt.Sprintf(`{"name":%q,"dim":4,"classes":["a","b","c"],"pool_size":%d,"epsilon":4,"initial":60,"queries":[30,30],`+
		`"batch":24,"epochs":4,"selection":%q,"acquisition":%q}`, name, n, selection, acquisition)
}

// waitState polls project name until its state is one of want.
func (ts *testServer) waitState(name string, want ...string) projectView {
	ts.t.Helper()
	return waitProjectState(ts.t, name, func() (v projectView) {
		ts.mustDo(200, RoleOfficer, "GET", "/v1/projects/"+name, "", &v)
		return v
	}, want...)
}

// waitProjectState polls project name by read until its state is one
// of want, failing the test when it fails or a minute passes.
func waitProjectState(t *testing.T, name string, read func() projectView, want ...string) projectView {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		v := read()
		for _, w := range want {
			if v.State == w {
				return v
			}
		}
		if v.State == stateFailed || time.Now().After(deadline) {
			t.Fatalf("project %s is %s (%s), want %v", name, v.State, v.Error, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// labelPhase claims and labels every open record of the phase with its
// true class, skipping the first when skip is set; it returns the labels
// given.
func (ts *testServer) labelPhase(name string, classes []int, skip bool) int {
	ts.t.Helper()
	var q projectQueueView
	ts.mustDo(200, RoleAnnotator, "GET", "/v1/projects/"+name+"/queue", "", &q)
	labels := 0
	for k, it := range q.Items {
		base := fmt.Sprintf("/v1/projects/%s/queue/%d", name, it.Index)
		var c claimAnswer
		ts.mustDo(200, RoleAnnotator, "POST", base+"/claim", "", &c)
		if c.ID != "r"+strconv.Itoa(it.Index) || len(c.X) != 4 {
			ts.t.Fatalf("claim of %d: id %q, %d values", it.Index, c.ID, len(c.X))
		}
		if skip && k == 0 {
			ts.mustDo(200, RoleAnnotator, "POST", base+"/skip", `{"reason":"unreadable"}`, nil)
			continue
		}
		ts.mustDo(200, RoleAnnotator, "POST", base+"/label", fmt.Sprintf(`{"label":%q}`, c.Classes[classes[it.Index]]), nil)
		labels++
	}
	return labels
}

// TestProjectFlow runs a Poisson project end to end over HTTP: the plan
// before any record, an upload with a bad line, the start, three phases
// labelled (one record skipped), the releases, the model file, a
// prediction and the per-record ε, which the ledger holds at the plan's
// ε for every record.
func TestProjectFlow(t *testing.T) {
	ts := newTestServer(t)
	const n = 600
	pool, classes := projectBlobs(n, 1)
	ts.mustDo(201, RoleAdmin, "POST", "/v1/projects", projectBody("blobs", "poisson", "entropy", n), nil)
	ts.mustDo(409, RoleAdmin, "POST", "/v1/projects", projectBody("blobs", "poisson", "entropy", n), nil)
	ts.mustDo(400, RoleAdmin, "POST", "/v1/projects", strings.Replace(projectBody("x", "poisson", "entropy", n), `"epsilon":4`, `"epsilon":-1`, 1), nil)
	var plan planView
	ts.mustDo(200, RoleOfficer, "GET", "/v1/projects/blobs/plan", "", &plan)
	if plan.Plan == nil || plan.Plan.Poisson == nil || len(plan.Plan.Phases) == 0 || !(plan.EpsilonPerRecord > 0 && plan.EpsilonPerRecord <= 4) {
		t.Fatalf("plan %+v", plan)
	}
	ts.mustDo(409, RoleAdmin, "POST", "/v1/projects/blobs/start", "", nil)

	// Upload in two parts, the first with a bad line and a line of NaN.
	lines := strings.SplitAfter(pool, "\n")
	first := strings.Join(lines[:100], "") + "1,2\n" + `{"x":[1,2,3,NaN]}` + "\n"
	var up poolUpload
	ts.mustDo(200, RoleIngest, "POST", "/v1/projects/blobs/pool", first, &up, "Content-Type", "application/x-ndjson")
	if up.Accepted != 100 || up.Rejected != 2 || up.Lines[0].Line != 101 || up.Lines[1].Line != 102 || up.State != stateUploading {
		t.Fatalf("first upload: %+v", up)
	}
	ts.mustDo(409, RoleIngest, "POST", "/v1/projects/blobs/pool?start=0", lines[100], nil, "Content-Type", "application/x-ndjson")
	ts.mustDo(200, RoleIngest, "POST", "/v1/projects/blobs/pool?start=100", strings.Join(lines[100:], ""), &up, "Content-Type", "application/x-ndjson")
	if up.Pooled != n || up.State != stateReady {
		t.Fatalf("second upload: %+v", up)
	}

	ts.mustDo(202, RoleAdmin, "POST", "/v1/projects/blobs/start", "", nil)
	labels := 0
	for phase := 0; phase < 3; phase++ {
		v := ts.waitState("blobs", stateLabelling, stateDone)
		if v.State == stateDone {
			break
		}
		if *v.Phase != phase || v.Round != phase {
			t.Fatalf("phase %d: %+v", phase, v)
		}
		labels += ts.labelPhase("blobs", classes, phase == 1)
	}
	v := ts.waitState("blobs", stateDone)
	if v.Round != 3 || v.Labels != labels || v.Dropped < 1 {
		t.Fatalf("done: %+v (labels given %d)", v, labels)
	}
	var rels struct{ Releases []projectRelease }
	ts.mustDo(200, RoleOfficer, "GET", "/v1/projects/blobs/releases", "", &rels)
	if len(rels.Releases) != 3 {
		t.Fatalf("releases %+v", rels)
	}

	// The model file is `dpal train`'s format.
	req, _ := http.NewRequest("GET", ts.http.URL+"/v1/projects/blobs/model", nil)
	req.Header.Set("Authorization", "Bearer "+ts.tok[RoleOfficer])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	net, meta, err := nn.Load(resp.Body)
	resp.Body.Close()
	if err != nil || len(meta.ClassNames) != 3 || !strings.Contains(string(meta.Privacy), `"project":"blobs"`) {
		t.Fatalf("model file: %v %+v", err, meta)
	}
	// Predictions: the downloaded model's and the service's agree, and
	// beat chance on fresh rows.
	test, truth := projectBlobs(300, 2)
	var rows [][]float64
	for _, l := range strings.Split(strings.TrimSpace(test), "\n") {
		var pl poolLine
		json.Unmarshal([]byte(l), &pl)
		rows = append(rows, pl.X)
	}
	body, _ := json.Marshal(predictRequest{X: rows})
	var pred predictAnswer
	ts.mustDo(200, RoleOfficer, "POST", "/v1/projects/blobs/predict", string(body), &pred)
	local, _ := net.Classify(rows)
	right := 0
	for i, p := range pred.Predictions {
		if p != meta.ClassNames[local[i]] {
			t.Fatalf("row %d: service says %s, the file %s", i, p, meta.ClassNames[local[i]])
		}
		if local[i] == truth[i] {
			right++
		}
	}
	if acc := float64(right) / 300; acc < 0.6 {
		t.Errorf("accuracy %v", acc)
	}
	ts.mustDo(400, RoleOfficer, "POST", "/v1/projects/blobs/predict", `{"x":[[1,2]]}`, nil)

	// Privacy: every record at the plan's ε, read from the ledger.
	var pv privacyView
	ts.mustDo(200, RoleOfficer, "GET", "/v1/projects/blobs/privacy", "", &pv)
	if pv.Privacy.Delta != plan.Delta || !strings.Contains(pv.Privacy.Guarantee, fmt.Sprint(plan.Delta)) {
		t.Errorf("privacy δ %v (%s), plan δ %v", pv.Privacy.Delta, pv.Privacy.Guarantee, plan.Delta)
	}
	if math.Abs(pv.Privacy.All.Max-plan.EpsilonPerRecord) > 1e-9 || math.Abs(pv.Privacy.All.Min-plan.EpsilonPerRecord) > 1e-9 || pv.Charges != 1 {
		t.Errorf("privacy %+v, plan ε %v", pv, plan.EpsilonPerRecord)
	}
	var re recordEpsilonAnswer
	ts.mustDo(200, RoleOfficer, "GET", "/v1/projects/blobs/records/7/epsilon", "", &re)
	if re.ID != "r7" || math.Abs(re.Epsilon-plan.EpsilonPerRecord) > 1e-9 {
		t.Errorf("record 7: %+v", re)
	}
	ts.mustDo(404, RoleOfficer, "GET", "/v1/projects/blobs/records/600/epsilon", "", nil)
}

// TestProjectCloseCancelRestart: an admin's close drops the open
// selections and trains on; a cancelled job pauses and start resumes it;
// a restart keeps the acknowledged labels; top-k refuses skips.
func TestProjectCloseCancelRestart(t *testing.T) {
	ts := newTestServer(t)
	const n = 400
	pool, classes := projectBlobs(n, 3)
	ts.mustDo(201, RoleAdmin, "POST", "/v1/projects", projectBody("p", "poisson", "random", n), nil)
	ts.mustDo(200, RoleIngest, "POST", "/v1/projects/p/pool", pool, nil, "Content-Type", "application/x-ndjson")
	ts.mustDo(202, RoleAdmin, "POST", "/v1/projects/p/start", "", nil)
	ts.waitState("p", stateLabelling)
	var q projectQueueView
	ts.mustDo(200, RoleAnnotator, "GET", "/v1/projects/p/queue", "", &q)
	if len(q.Items) < 3 {
		t.Fatalf("initial queue %+v", q)
	}
	// Two labels, acknowledged, then a restart: both are kept.
	for _, it := range q.Items[:2] {
		base := fmt.Sprintf("/v1/projects/p/queue/%d", it.Index)
		ts.mustDo(200, RoleAnnotator, "POST", base+"/claim", "", nil)
		ts.mustDo(200, RoleAnnotator, "POST", base+"/label", fmt.Sprintf(`{"label":%q}`, []string{"a", "b", "c"}[classes[it.Index]]), nil)
	}
	ts.mustDo(409, RoleAdmin, "POST", fmt.Sprintf("/v1/projects/p/queue/%d/label", q.Items[0].Index), `{"label":"a"}`, nil)
	ts.mustDo(409, RoleAnnotator, "POST", fmt.Sprintf("/v1/projects/p/queue/%d/label", q.Items[2].Index), `{"label":"a"}`, nil) // unclaimed
	ts.restart()
	ts.mustDo(200, RoleAnnotator, "GET", "/v1/projects/p/queue", "", &q)
	if q.Labelled != 2 {
		t.Fatalf("after a restart %d labels, 2 acknowledged", q.Labelled)
	}
	var v projectView
	ts.mustDo(200, RoleAdmin, "POST", "/v1/projects/p/close", "", &v)
	if v.Dropped != q.Open || v.State != stateTraining && v.State != stateLabelling {
		t.Fatalf("close: %+v (open %d)", v, q.Open)
	}
	v = ts.waitState("p", stateLabelling, statePaused)
	if v.Round != 1 {
		t.Fatalf("after close: %+v", v)
	}
	ts.mustDo(409, RoleAdmin, "POST", "/v1/projects/p/cancel", "", nil) // nothing runs
	ts.mustDo(200, RoleAdmin, "POST", "/v1/projects/p/close", "", nil)
	ts.mustDo(200, RoleAdmin, "POST", "/v1/projects/p/cancel", "", &v) // queued or running: paused
	if v.State != statePaused && v.State != stateLabelling {
		t.Fatalf("cancel: %+v", v)
	}
	if v.State == statePaused {
		ts.mustDo(202, RoleAdmin, "POST", "/v1/projects/p/start", "", nil)
	}
	v = ts.waitState("p", stateLabelling)
	if v.Round != 2 {
		t.Fatalf("after resume: %+v", v)
	}

	ts.mustDo(201, RoleAdmin, "POST", "/v1/projects", projectBody("k", "topk", "random", n), nil)
	ts.mustDo(200, RoleIngest, "POST", "/v1/projects/k/pool", pool, nil, "Content-Type", "application/x-ndjson")
	ts.mustDo(202, RoleAdmin, "POST", "/v1/projects/k/start", "", nil)
	ts.waitState("k", stateLabelling)
	ts.mustDo(200, RoleAnnotator, "GET", "/v1/projects/k/queue", "", &q)
	if len(q.Items) != 60 {
		t.Fatalf("top-k initial queue: %d, want 60", len(q.Items))
	}
	base := fmt.Sprintf("/v1/projects/k/queue/%d", q.Items[0].Index)
	ts.mustDo(200, RoleAnnotator, "POST", base+"/claim", "", nil)
	ts.mustDo(409, RoleAnnotator, "POST", base+"/skip", `{"reason":"x"}`, nil)
	ts.mustDo(409, RoleAdmin, "POST", "/v1/projects/k/close", "", nil)
}

// driveProjects drives every project operation through check (the
// OpenAPI answer test): successes and the refusals a client meets.
func driveProjects(t *testing.T, ts *testServer, check func(want int, role Role, method, path, body string, hdr ...string) json.RawMessage) {
	t.Helper()
	const n = 300
	pool, classes := projectBlobs(n, 5)
	check(201, RoleAdmin, "POST", "/v1/projects", projectBody("docs", "poisson", "entropy", n))
	check(409, RoleAdmin, "POST", "/v1/projects", projectBody("docs", "poisson", "entropy", n))
	check(400, RoleAdmin, "POST", "/v1/projects", `{"name":"bad"}`)
	check(200, RoleOfficer, "GET", "/v1/projects", "")
	check(200, RoleAnnotator, "GET", "/v1/projects/docs", "")
	check(404, RoleOfficer, "GET", "/v1/projects/nope", "")
	check(200, RoleOfficer, "GET", "/v1/projects/docs/plan", "")
	check(404, RoleOfficer, "GET", "/v1/projects/nope/plan", "")
	check(409, RoleAdmin, "POST", "/v1/projects/docs/start", "")
	check(200, RoleIngest, "POST", "/v1/projects/docs/pool", "0.1,0.2,0.3,0.4\n1,2\n", "Content-Type", "text/csv")
	check(409, RoleIngest, "POST", "/v1/projects/docs/pool?start=0", "0,0,0,0\n", "Content-Type", "text/csv")
	check(400, RoleIngest, "POST", "/v1/projects/docs/pool?start=x", "0,0,0,0\n", "Content-Type", "text/csv")
	rest := strings.SplitAfterN(pool, "\n", 2)[1]
	check(200, RoleIngest, "POST", "/v1/projects/docs/pool?start=1", rest, "Content-Type", "application/x-ndjson")
	check(404, RoleIngest, "POST", "/v1/projects/nope/pool", "0,0,0,0\n")
	check(404, RoleOfficer, "GET", "/v1/projects/docs/model", "")
	check(409, RoleAdmin, "POST", "/v1/projects/docs/cancel", "")
	check(202, RoleAdmin, "POST", "/v1/projects/docs/start", "")
	ts.waitState("docs", stateLabelling)
	var q projectQueueView
	if err := json.Unmarshal(check(200, RoleAnnotator, "GET", "/v1/projects/docs/queue?limit=2", ""), &q); err != nil || len(q.Items) < 2 {
		t.Fatalf("queue %+v %v", q, err)
	}
	check(400, RoleAnnotator, "GET", "/v1/projects/docs/queue?after=x", "")
	a, b := q.Items[0].Index, q.Items[1].Index
	item := func(i int, verb string) string { return fmt.Sprintf("/v1/projects/docs/queue/%d/%s", i, verb) }
	check(200, RoleAnnotator, "POST", item(a, "claim"), "")
	check(409, RoleAdmin, "POST", item(a, "claim"), "")
	check(400, RoleAnnotator, "POST", item(a, "label"), `{"label":"zebra"}`)
	check(200, RoleAnnotator, "POST", item(a, "label"), fmt.Sprintf(`{"label":%q}`, []string{"a", "b", "c"}[classes[a]]))
	check(409, RoleAnnotator, "POST", item(a, "label"), `{"label":"a"}`)
	check(400, RoleAnnotator, "POST", item(-1, "claim"), "")
	check(404, RoleAnnotator, "POST", "/v1/projects/docs/queue/299999/claim", "")
	check(200, RoleAnnotator, "POST", item(b, "claim"), "")
	check(400, RoleAnnotator, "POST", item(b, "skip"), `{"reason":""}`)
	check(404, RoleAnnotator, "POST", "/v1/projects/docs/queue/299999/skip", `{"reason":"x"}`)
	check(200, RoleAnnotator, "POST", item(b, "skip"), `{"reason":"blurred"}`)
	check(404, RoleAnnotator, "POST", "/v1/projects/nope/queue/1/label", `{"label":"a"}`)
	check(200, RoleAdmin, "POST", "/v1/projects/docs/close", "")
	check(409, RoleAdmin, "POST", "/v1/projects/docs/close", "")
	check(404, RoleAdmin, "POST", "/v1/projects/nope/close", "")
	check(200, RoleAdmin, "POST", "/v1/projects/docs/cancel", "")
	check(404, RoleAdmin, "POST", "/v1/projects/nope/cancel", "")
	check(404, RoleAdmin, "POST", "/v1/projects/nope/start", "")
	if v := ts.waitState("docs", stateLabelling, statePaused); v.State == statePaused {
		check(202, RoleAdmin, "POST", "/v1/projects/docs/start", "")
		ts.waitState("docs", stateLabelling)
	}
	check(200, RoleOfficer, "GET", "/v1/projects/docs/releases", "")
	check(404, RoleOfficer, "GET", "/v1/projects/nope/releases", "")
	check(200, RoleOfficer, "GET", "/v1/projects/docs/model?round=1", "")
	check(400, RoleOfficer, "GET", "/v1/projects/docs/model?round=0", "")
	check(200, RoleOfficer, "POST", "/v1/projects/docs/predict", `{"x":[[0.4,0,0,0],[0,0,0.4,0]]}`)
	check(400, RoleOfficer, "POST", "/v1/projects/docs/predict", `{"x":[[1]]}`)
	check(404, RoleOfficer, "POST", "/v1/projects/nope/predict", `{"x":[[1]]}`)
	check(413, RoleOfficer, "POST", "/v1/projects/docs/predict", `{"x":[[`+strings.Repeat("0,", 600<<10)+`0]]}`)
	check(200, RoleOfficer, "GET", "/v1/projects/docs/privacy", "")
	check(404, RoleOfficer, "GET", "/v1/projects/nope/privacy", "")
	check(200, RoleOfficer, "GET", fmt.Sprintf("/v1/projects/docs/records/%d/epsilon", a), "")
	check(400, RoleOfficer, "GET", "/v1/projects/docs/records/x/epsilon", "")
	check(404, RoleOfficer, "GET", "/v1/projects/docs/records/300/epsilon", "")
	check(403, RoleIngest, "GET", "/v1/projects", "")
}
