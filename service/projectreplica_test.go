package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dpal-dev/dpal/active/pool"
	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
)

// mustCall is call, failing the test on any status but want.
func (c *replicaClient) mustCall(want int, r *testReplica, role Role, method, path, body string, out any, hdr ...string) {
	c.t.Helper()
	if code := c.call(r.base, role, method, path, body, out, "", hdr...); code != want {
		c.t.Fatalf("%s %s via %s: %d, want %d", method, path, r.base, code, want)
	}
}

// waitProject polls project name through r until its state is one of want.
func (c *replicaClient) waitProject(r *testReplica, name string, want ...string) projectView {
	c.t.Helper()
	return waitProjectState(c.t, name, func() (v projectView) {
		c.mustCall(http.StatusOK, r, RoleOfficer, "GET", "/v1/projects/"+name, "", &v)
		return v
	}, want...)
}

// labelProject claims and labels every open record of the phase with
// its true class, the calls spread over rs in turn.
func (c *replicaClient) labelProject(name string, classes []int, rs ...*testReplica) {
	c.t.Helper()
	var q projectQueueView
	c.mustCall(http.StatusOK, rs[0], RoleAnnotator, "GET", "/v1/projects/"+name+"/queue", "", &q)
	for k, it := range q.Items {
		r := rs[k%len(rs)]
		base := fmt.Sprintf("/v1/projects/%s/queue/%d", name, it.Index)
		var cl claimAnswer
		c.mustCall(http.StatusOK, r, RoleAnnotator, "POST", base+"/claim", "", &cl)
		c.mustCall(http.StatusOK, r, RoleAnnotator, "POST", base+"/label", fmt.Sprintf(`{"label":%q}`, cl.Classes[classes[it.Index]]), nil)
	}
}

// officerViews reads what the officer sees of project name through r.
func (c *replicaClient) officerViews(r *testReplica, name string) map[string]json.RawMessage {
	c.t.Helper()
	out := map[string]json.RawMessage{}
	for _, p := range []string{"", "/plan", "/releases", "/privacy", "/records/0/epsilon"} {
		var v json.RawMessage
		c.mustCall(http.StatusOK, r, RoleOfficer, "GET", "/v1/projects/"+name+p, "", &v)
		out[p] = v
	}
	return out
}

// uploadProject uploads pool in two parts, through a and then b.
func (c *replicaClient) uploadProject(name, pool string, a, b *testReplica) {
	c.t.Helper()
	lines := strings.SplitAfter(pool, "\n")
	half := len(lines) / 2
	var up poolUpload
	c.mustCall(http.StatusOK, a, RoleIngest, "POST", "/v1/projects/"+name+"/pool", strings.Join(lines[:half], ""), &up, "Content-Type", "application/x-ndjson")
	c.mustCall(http.StatusOK, b, RoleIngest, "POST", fmt.Sprintf("/v1/projects/%s/pool?start=%d", name, up.Pooled), strings.Join(lines[half:], ""), &up, "Content-Type", "application/x-ndjson")
	if up.State != stateReady {
		c.t.Fatalf("upload: %+v", up)
	}
}

// TestReplicasProjects: two replicas on one PostgreSQL database run a
// pool project. It is created through replica B, which takes its lease
// and runs its jobs; its pool is uploaded, its start asked and its
// phases labelled through both (A forwards to B, the upload as a
// stream). The officer's views (the project, plan, releases, privacy
// report, a record's ε) read alike through both, A never hosts the
// project, and no record's ε exceeds the budget.
func TestReplicasProjects(t *testing.T) {
	a, b, c := replicaPair(t, time.Second)
	const n = 300
	pool, classes := projectBlobs(n, 3)
	c.mustCall(http.StatusCreated, b, RoleAdmin, "POST", "/v1/projects", projectBody("p", "poisson", "entropy", n), nil)
	c.mustCall(http.StatusConflict, a, RoleAdmin, "POST", "/v1/projects", projectBody("p", "poisson", "entropy", n), nil)
	c.uploadProject("p", pool, a, b)
	c.mustCall(http.StatusAccepted, a, RoleAdmin, "POST", "/v1/projects/p/start", "", nil)
	for phase := 0; ; phase++ {
		v := c.waitProject([]*testReplica{a, b}[phase%2], "p", stateLabelling, stateDone)
		if v.State == stateDone {
			break
		}
		c.labelProject("p", classes, a, b)
	}
	va, vb := c.officerViews(a, "p"), c.officerViews(b, "p")
	if !reflect.DeepEqual(va, vb) {
		t.Fatalf("the replicas answer differently:\n%s\n%s", va[""], vb[""])
	}
	if a.srv.projects.hosted("p") || !b.srv.projects.hosted("p") {
		t.Error("replica A hosted the project that B owns, rather than forward its requests")
	}
	var pr privacyView
	if err := json.Unmarshal(va["/privacy"], &pr); err != nil {
		t.Fatal(err)
	}
	var rels struct{ Releases []projectRelease }
	if err := json.Unmarshal(va["/releases"], &rels); err != nil {
		t.Fatal(err)
	}
	if len(rels.Releases) != 3 || pr.Charges == 0 {
		t.Fatalf("%d releases, %d charges", len(rels.Releases), pr.Charges)
	}
	checkProjectLedger(t, b.store, "p", rels.Releases)
}

// TestReplicasProjectFailover: the replica that owns a top-k project
// (which charges each round as it trains) is killed — no renewals, no
// answers, its leases left to expire — right after the last label of a
// phase queued its next training round. The other replica takes the
// lease within the lease time, resumes the round from the store, and
// the project finishes through it. The dead owner's late writes — a
// charge of its ledger, a change of the project — are refused by the
// fencing token; every release has its charges committed before it,
// and no record's ε exceeds the budget.
func TestReplicasProjectFailover(t *testing.T) {
	const ttl = 500 * time.Millisecond
	a, b, c := replicaPair(t, ttl)
	const n = 300
	records, classes := projectBlobs(n, 4)
	c.mustCall(http.StatusCreated, a, RoleAdmin, "POST", "/v1/projects", strings.NewReplacer(`"epochs":4`, `"epochs":40000`, `"queries":[30,30]`, `"queries":[5,5]`).Replace(projectBody("p", "topk", "random", n)), nil)
	c.uploadProject("p", records, b, a)
	c.mustCall(http.StatusAccepted, b, RoleAdmin, "POST", "/v1/projects/p/start", "", nil)
	c.waitProject(b, "p", stateLabelling)
	c.labelProject("p", classes, b, a) // the last label queues round 1 on A
	if !a.srv.projects.hosted("p") || b.srv.projects.hosted("p") {
		t.Fatal("replica A, which created the project, does not own it")
	}
	staleFence := a.srv.projects.fence("p")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, steps, _, ok := a.srv.projects.progress("p"); ok && steps > 0 {
			break // mid-job
		}
		if time.Now().After(deadline) {
			var v projectView
			c.mustCall(http.StatusOK, b, RoleOfficer, "GET", "/v1/projects/p", "", &v)
			t.Fatalf("round 1 did not start on replica A: %+v", v)
		}
	}
	killed := time.Now()
	a.kill()
	v := c.waitProject(b, "p", stateTraining, stateLabelling)
	took := time.Since(killed)
	t.Logf("the surviving replica served the project %v after the owner was killed (lease %v), state %s", took.Round(time.Millisecond), ttl, v.State)
	if took > ttl+2*time.Second {
		t.Errorf("takeover took %v, lease time %v", took, ttl)
	}
	if !b.srv.projects.hosted("p") {
		t.Fatal("replica B does not host the project after the takeover")
	}
	for {
		v := c.waitProject(b, "p", stateLabelling, stateDone)
		if v.State == stateDone {
			break
		}
		c.labelProject("p", classes, b)
	}

	// The dead owner's late writes are refused.
	_, err := a.srv.projects.updateFenced(staleFence, "p", func(_ kvTx, m *projectMeta) error {
		m.Error = "a late write"
		return nil
	})
	if !errors.Is(err, errFenced) {
		t.Errorf("the stale owner's project write: %v, want it refused by the fencing token", err)
	}
	m, err := b.srv.projects.meta("p")
	if err != nil {
		t.Fatal(err)
	}
	stale, err := a.store.openProjectLedger("p", account.Budget{}, m.Config.Conversion, staleFence)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := stale.Entries()
	if err != nil || len(entries) == 0 {
		t.Fatalf("%d entries, %v", len(entries), err)
	}
	if _, err := stale.Record(ledger.Charge{Groups: []string{pool.RecordID(0)}, Loss: entries[0].Loss, Note: "late"}); !errors.Is(err, errFenced) {
		t.Errorf("the stale owner's charge: %v, want it refused by the fencing token", err)
	}

	var rels struct{ Releases []projectRelease }
	c.mustCall(http.StatusOK, b, RoleOfficer, "GET", "/v1/projects/p/releases", "", &rels)
	if len(rels.Releases) != 3 {
		t.Fatalf("%d releases, want 3", len(rels.Releases))
	}
	for _, r := range rels.Releases {
		t.Logf("round %d: %d steps, %.2f s", r.Round, r.Steps, r.Seconds)
	}
	if r1 := rels.Releases[0].Time; r1.Before(killed.Add(ttl)) {
		t.Errorf("round 1 was released at %v, before the killed owner's lease ran out: the kill was not mid-job", r1.Sub(killed))
	}
	checkProjectLedger(t, b.store, "p", rels.Releases)
}

// checkProjectLedger checks project name's ledger against its releases:
// no record's ε over the budget, and under top-k selection each round's
// training charges committed before its release.
func checkProjectLedger(t *testing.T, st *Store, name string, rels []projectRelease) {
	t.Helper()
	m, err := viewOf(st.db, func(tx kvTx) (projectMeta, error) { return getProjectTx(tx, name) })
	if err != nil {
		t.Fatal(err)
	}
	led, err := st.openProjectLedger(name, account.Budget{}, m.Config.Conversion, nil)
	if err != nil {
		t.Fatal(err)
	}
	if g, eps := led.MaxEpsilon(); eps > m.Config.Epsilon+1e-9 {
		t.Errorf("record %s holds ε %v, over the budget %v", g, eps, m.Config.Epsilon)
	}
	entries, err := led.Entries()
	if err != nil {
		t.Fatal(err)
	}
	for _, rel := range rels {
		if rel.EpsilonMax > m.Config.Epsilon+1e-9 {
			t.Errorf("release %d: ε %v over the budget %v", rel.Round, rel.EpsilonMax, m.Config.Epsilon)
		}
		if m.Config.Selection != pool.TopK {
			continue
		}
		charged := false
		for _, e := range entries {
			if strings.Contains(e.Once, fmt.Sprintf("/round-%d/", rel.Round)) && !e.Time.After(rel.Time) {
				charged = true
			}
		}
		if !charged {
			t.Errorf("release %d (at %v) has no training charge committed before it", rel.Round, rel.Time)
		}
	}
}

// TestReplicasProjectStreamedUpload: a pool upload that lasts longer
// than the forwarding replica's read and write timeouts (0.5 s here, as
// `dpal serve` sets 60 s) is forwarded as a stream, its deadline renewed
// as the body arrives, as the owner's own handler renews it.
func TestReplicasProjectStreamedUpload(t *testing.T) {
	const timeout = 500 * time.Millisecond
	a, b, c := replicaPair(t, time.Second, func(hs *http.Server) { hs.ReadTimeout, hs.WriteTimeout = timeout, timeout })
	const n, parts = 300, 6
	records, _ := projectBlobs(n, 5)
	c.mustCall(http.StatusCreated, b, RoleAdmin, "POST", "/v1/projects", projectBody("p", "poisson", "entropy", n), nil)
	lines := strings.SplitAfter(records, "\n")
	pr, pw := io.Pipe()
	go func() {
		for k := range parts {
			time.Sleep(timeout / 2)
			if _, err := io.WriteString(pw, strings.Join(lines[k*n/parts:(k+1)*n/parts], "")); err != nil {
				pw.CloseWithError(err)
				return
			}
		}
		pw.Close()
	}()
	req, _ := http.NewRequest("POST", a.base+"/v1/projects/p/pool", pr)
	req.Header.Set("Authorization", "Bearer "+c.tok[RoleIngest])
	req.Header.Set("Content-Type", "application/x-ndjson")
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var up poolUpload
	jsonDecode(resp, &up)
	if resp.StatusCode != http.StatusOK || up.Pooled != n || up.State != stateReady {
		t.Fatalf("upload through the forwarding replica: %d %+v", resp.StatusCode, up)
	}
	t.Logf("a %v upload forwarded through a replica with %v timeouts", time.Since(start).Round(time.Millisecond), timeout)

	// Another process takes B's lease (its token raised): B's next write
	// is refused by the fence and answered 503 with Retry-After; a retry
	// reaches the lease's holder.
	if _, err := b.store.db.(*pgKV).pool.Exec(context.Background(), `UPDATE service_leases SET token = token + 1 WHERE learner = $1`, projectLease("p")); err != nil {
		t.Fatal(err)
	}
	req, _ = http.NewRequest("POST", b.base+"/v1/projects/p/start", nil)
	req.Header.Set("Authorization", "Bearer "+c.tok[RoleAdmin])
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a write refused by the fence: %d (Retry-After %q), want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	retried := time.Now()
	c.mustCall(http.StatusAccepted, b, RoleAdmin, "POST", "/v1/projects/p/start", "", nil)
	t.Logf("the retried write was accepted after %v", time.Since(retried).Round(time.Millisecond))
}
