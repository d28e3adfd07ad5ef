package service

import (
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/dpal-dev/dpal/dp/ledger"
)

// TestSearch: scores in, a run finds the anomaly, every answer is in the
// population's ledger, results and spend survive a restart, and a spent
// budget refuses further runs.
func TestSearch(t *testing.T) {
	ts := newTestServer(t)
	ts.mustDo(http.StatusCreated, RoleAdmin, "POST", "/v1/searches",
		`{"name":"hosts","oracle":"noisy-max","params":{"t_low":1,"t_high":10,"epsilon":0.5},"halting":{"posterior":0.99},"budget":6}`, nil)
	var b strings.Builder
	b.WriteString(hostScores())
	b.WriteString("x,1\n-1\n5,NaN\n")
	var ans struct{ Results []scoreResult }
	ts.mustDo(http.StatusOK, RoleIngest, "POST", "/v1/searches/hosts/scores", b.String(), &ans)
	rejected := 0
	for _, r := range ans.Results {
		if r.Status == "rejected" {
			rejected++
		}
	}
	if len(ans.Results) != 103 || rejected != 3 {
		t.Fatalf("%d results, %d rejected", len(ans.Results), rejected)
	}
	if got := ts.do(RoleIngest, "POST", "/v1/searches/hosts/runs", "", nil); got != http.StatusForbidden {
		t.Errorf("ingest runs a search: %d", got)
	}
	var run searchRun
	ts.mustDo(http.StatusOK, RoleAdmin, "POST", "/v1/searches/hosts/runs", "", &run)
	if len(run.Res.Top) != 1 || run.Res.Top[0] != 1057 || run.Size != 100 {
		t.Fatalf("run %+v", run)
	}
	ts.restart()
	var rep ledger.Report
	ts.mustDo(http.StatusOK, RoleOfficer, "GET", "/v1/ledger?search=hosts", "", &rep)
	if len(rep.Entries) != run.Res.Queries || len(rep.Groups) != 1 || rep.Groups[0].Epsilon != 0.5*float64(run.Res.Queries) {
		t.Errorf("ledger %d entries, groups %+v, for %d answers", len(rep.Entries), rep.Groups, run.Res.Queries)
	}
	var got struct{ Runs []searchRun }
	ts.mustDo(http.StatusOK, RoleOfficer, "GET", "/v1/searches/hosts", "", &got)
	if len(got.Runs) != 1 || got.Runs[0].Res.Top[0] != 1057 {
		t.Errorf("runs after restart %+v", got.Runs)
	}
	for i := 0; ; i++ {
		code := ts.do(RoleAdmin, "POST", "/v1/searches/hosts/runs", "", nil)
		if code == http.StatusConflict {
			break
		}
		if code != http.StatusOK || i > 12 {
			t.Fatalf("run %d: %d", i, code)
		}
	}
	ts.mustDo(http.StatusOK, RoleOfficer, "GET", "/v1/ledger?search=hosts", "", &rep)
	if rep.Groups[0].Epsilon > 6+1e-9 {
		t.Errorf("spent %v of a budget of 6", rep.Groups[0].Epsilon)
	}
}

func TestSearchAbuse(t *testing.T) {
	ts := newTestServer(t)
	for _, tc := range []struct{ name, body, field string }{
		{"bad oracle", `{"name":"s","oracle":"magic","params":{"t_low":1,"t_high":2,"epsilon":1}}`, "oracle"},
		{"bad thresholds", `{"name":"s","oracle":"rr","params":{"t_low":2,"t_high":1,"epsilon":1}}`, "params.t_high"},
		{"budget below one answer", `{"name":"s","oracle":"rr","params":{"t_low":1,"t_high":2,"epsilon":1},"budget":0.5}`, "budget"},
		{"bad name", `{"name":"S!","oracle":"rr","params":{"t_low":1,"t_high":2,"epsilon":1}}`, "name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var e errorBody
			if got := ts.do(RoleAdmin, "POST", "/v1/searches", tc.body, &e); got != 400 || e.Field != tc.field {
				t.Errorf("%d %+v", got, e)
			}
		})
	}
	ts.mustDo(http.StatusCreated, RoleAdmin, "POST", "/v1/searches", `{"name":"s","oracle":"rr","params":{"t_low":1,"t_high":5,"epsilon":1}}`, nil)
	ts.mustDo(http.StatusOK, RoleIngest, "POST", "/v1/searches/s/scores", "0.5\n3\n0.1\n", nil)
	var e errorBody
	if got := ts.do(RoleAdmin, "POST", "/v1/searches/s/runs", "", &e); got != http.StatusConflict || strings.Contains(e.Error, "3") {
		t.Errorf("a score in the gap: %d %+v (the answer must not name the score)", got, e)
	}
	if got := ts.do(RoleAdmin, "POST", "/v1/searches/nope/runs", "", nil); got != http.StatusNotFound {
		t.Errorf("unknown search: %d", got)
	}
}

// FuzzParseScore: a passed score is finite and ≥ 0 with a valid index.
func FuzzParseScore(f *testing.F) {
	for _, s := range []string{"1,0.5", "0.3", "x,1", "-1", "5,NaN", "7,1e999", ",", "1099511627776,1"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		idx, v, field := parseScore(line, 3)
		if field == "" && (idx < 0 || idx >= maxIndex || !(v >= 0) || math.IsInf(v, 0)) {
			t.Fatalf("%q passed as %d, %v", line, idx, v)
		}
	})
}

// FuzzDecodeSearch: a population that passes has a valid name, oracle,
// thresholds, and a finite budget of at least one answer.
func FuzzDecodeSearch(f *testing.F) {
	for _, s := range []string{`{"name":"s","oracle":"rr","params":{"t_low":1,"t_high":2,"epsilon":1}}`,
		`{"name":"s","oracle":"mean","params":{"t_low":1,"t_high":2,"epsilon":1},"budget":3,"halting":{"posterior":0.9}}`, `{"name":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeSearch(b)
		if err != nil {
			return
		}
		if !nameRE.MatchString(m.Name) || m.Params.Validate() != nil || !(m.Budget >= m.Params.Epsilon) || math.IsInf(m.Budget, 0) || m.Top < 1 {
			t.Fatalf("accepted %+v", m)
		}
	})
}

// hostScores is 100 scores of indexes 1000–1099, one anomaly (1057).
func hostScores() string {
	var b strings.Builder
	for i := range 100 {
		v := float64(i%10) / 10
		if i == 57 {
			v = 20
		}
		fmt.Fprintf(&b, "%d,%g\n", 1000+i, v)
	}
	return b.String()
}
