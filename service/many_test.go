package service

import (
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// manyStore makes a store of n learners (dim 2, a few events each) at path,
// without fsync (a test fixture, not the service's path).
func manyStore(t testing.TB, path string, n int) {
	t.Helper()
	st, err := OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	st.db.(boltKV).db.NoSync = true
	srv, err := New(st, Options{Log: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := srv.ensureLearner(fmt.Appendf(nil, `{"name":"l%05d","dim":2}`, i)); err != nil {
			t.Fatal(err)
		}
	}
}

// heapMiB is the live heap after a collection.
func heapMiB() float64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapAlloc) / (1 << 20)
}

// TestManyLearnersRestart: a restart of a store of many learners restores
// none of them until one is called, so its time and memory do not grow
// with the learners' state. DPAL_MANY_LEARNERS=10000 measures the issue's
// case and logs the time and memory.
func TestManyLearnersRestart(t *testing.T) {
	n := 300
	if v := os.Getenv("DPAL_MANY_LEARNERS"); v != "" {
		n, _ = strconv.Atoi(v)
	}
	path := filepath.Join(t.TempDir(), "many.db")
	if p := os.Getenv("DPAL_MANY_STORE"); p != "" {
		path = p // kept, to time `dpal serve` on it
	}
	t0 := time.Now()
	manyStore(t, path, n)
	t.Logf("%d learners created in %v", n, time.Since(t0))
	base := heapMiB()
	t0 = time.Now()
	st, err := OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srv, err := New(st, Options{Log: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	took, heap := time.Since(t0), heapMiB()-base
	t.Logf("restart of %d learners: %v, heap +%.1f MiB, RSS %.0f MiB", n, took, heap, rssMiB())
	loaded := 0
	for _, h := range srv.learners {
		if h.l != nil {
			loaded++
		}
	}
	if loaded != 0 {
		t.Errorf("%d of %d learners restored at start: want none until called", loaded, n)
	}
	if per := heap / float64(n) * 1024; per > 8 {
		t.Errorf("%.1f KiB of heap per learner after a restart", per)
	}
	// The officer's ledgers and metrics open each ledger, not the learner.
	base = heapMiB()
	t0 = time.Now()
	if err := srv.queueGauges(); err != nil { // a scrape
		t.Fatal(err)
	}
	t.Logf("a scrape of %d learners (their ledgers opened): %v, heap +%.1f MiB", n, time.Since(t0), heapMiB()-base)
	for name, h := range srv.learners {
		if h.l != nil {
			t.Fatalf("a scrape restored learner %s", name)
		}
	}
}

// TestLearnersPaged: GET /v1/learners pages by name with the total count
// and the cursor of the next page, and restores no learner.
func TestLearnersPaged(t *testing.T) {
	ts := newTestServer(t)
	for i := range 5 {
		ts.createLearner(fmt.Sprintf("p%d", i))
	}
	ts.restart()
	type page struct {
		Learners []learnerView `json:"learners"`
		Total    int           `json:"total"`
		Next     string        `json:"next"`
	}
	var p page
	ts.mustDo(200, RoleOfficer, "GET", "/v1/learners?limit=2", "", &p)
	if p.Total != 5 || len(p.Learners) != 2 || p.Learners[0].Name != "p0" || p.Next != "p1" || p.Learners[0].Dim != 2 {
		t.Fatalf("first page %+v", p)
	}
	var names []string
	for after := ""; ; {
		var q page
		ts.mustDo(200, RoleAnnotator, "GET", "/v1/learners?limit=2&after="+after, "", &q)
		for _, l := range q.Learners {
			names = append(names, l.Name)
		}
		if q.Next == "" {
			break
		}
		after = q.Next
	}
	if fmt.Sprint(names) != "[p0 p1 p2 p3 p4]" {
		t.Errorf("pages gave %v", names)
	}
	for name, h := range ts.srv.learners {
		if h.l != nil {
			t.Errorf("listing restored learner %s", name)
		}
	}
	ts.mustDo(400, RoleOfficer, "GET", "/v1/learners?limit=0", "", nil)
}

// TestBudgetSeries: the budget carries each group's ε after each of its
// ledger entries, composed as the ledger composes them (the Gaussian
// update's ρ included), ending at the group's spend.
func TestBudgetSeries(t *testing.T) {
	ts := newTestServer(t)
	ts.createLearner("a")
	ts.mustDo(200, RoleIngest, "POST", "/v1/learners/a/events", events(20), nil)
	ts.labelAll("a")
	var b budgetView
	ts.mustDo(200, RoleOfficer, "GET", "/v1/learners/a/budget", "", &b)
	if len(b.Groups) != 2 {
		t.Fatalf("groups %+v", b.Groups)
	}
	for _, g := range b.Groups {
		pts := b.Series[g.Group]
		if len(pts) == 0 || math.Abs(pts[len(pts)-1].Epsilon-g.Epsilon) > 1e-12 {
			t.Errorf("group %s: series %+v, spent %v", g.Group, pts, g.Epsilon)
		}
		for i := 1; i < len(pts); i++ {
			if pts[i].Epsilon < pts[i-1].Epsilon || pts[i].Time.Before(pts[i-1].Time) {
				t.Errorf("group %s: series goes back at %d: %+v", g.Group, i, pts)
			}
		}
	}
}
