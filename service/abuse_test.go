package service

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dpal-dev/dpal/dp/ledger"
)

// TestAuth: every endpoint but the health checks and the API document
// wants a token of an admitted role; admin is admitted everywhere.
func TestAuth(t *testing.T) {
	ts := newTestServer(t)
	ts.createLearner("a")
	ep := map[string][]Role{
		"POST /v1/learners/a/events":           {RoleIngest},
		"GET /v1/learners/a/requests":          {RoleAnnotator},
		"POST /v1/learners/a/requests/1/claim": {RoleAnnotator},
		"POST /v1/learners/a/labels":           {RoleAnnotator},
		"GET /v1/learners/a/releases":          {RoleOfficer},
		"GET /v1/learners/a/model":             {RoleOfficer},
		"GET /v1/learners/a/budget":            {RoleOfficer},
		"GET /v1/records/a:1/epsilon":          {RoleOfficer},
		"GET /v1/ledger":                       {RoleOfficer},
		"GET /metrics":                         {RoleOfficer},
		"POST /v1/learners":                    {},
	}
	for route, allowed := range ep {
		method, path, _ := strings.Cut(route, " ")
		t.Run(route, func(t *testing.T) {
			if got := ts.do("", method, path, "", nil); got != http.StatusUnauthorized {
				t.Errorf("no token: %d", got)
			}
			ts.tok["bogus"] = "dpal_admin_" + strings.Repeat("A", 43)
			if got := ts.do("bogus", method, path, "", nil); got != http.StatusUnauthorized {
				t.Errorf("unknown token: %d", got)
			}
			for _, r := range Roles {
				got := ts.do(r, method, path, "", nil)
				if admitted := r == RoleAdmin || contains(allowed, r); admitted == (got == http.StatusForbidden) || got == http.StatusUnauthorized {
					t.Errorf("role %s: status %d (admitted %v)", r, got, admitted)
				}
			}
		})
	}
	for _, p := range []string{"/healthz", "/readyz", "/openapi.json"} {
		if got := ts.do("", "GET", p, "", nil); got != http.StatusOK {
			t.Errorf("%s without a token: %d", p, got)
		}
	}
}

func contains(rs []Role, r Role) bool {
	for _, x := range rs {
		if x == r {
			return true
		}
	}
	return false
}

// TestAbuse: bad input gets the right 4xx, names the field, never echoes
// the values, and loses nothing already accepted.
func TestAbuse(t *testing.T) {
	ts := newTestServer(t)
	ts.createLearner("a")
	big := strings.Repeat("0.1,0.1\n", 200_000)
	for _, tc := range []struct {
		name, method, path, body string
		role                     Role
		want                     int
		field                    string
	}{
		{"oversized events", "POST", "/v1/learners/a/events", big, RoleIngest, 413, ""},
		{"oversized create", "POST", "/v1/learners", `{"name":"` + strings.Repeat("b", 70_000) + `"}`, RoleAdmin, 413, ""},
		{"malformed create", "POST", "/v1/learners", `{"name":`, RoleAdmin, 400, "body"},
		{"unknown field", "POST", "/v1/learners", `{"name":"b","dim":2,"secret":1}`, RoleAdmin, 400, "secret"},
		{"unknown config field", "POST", "/v1/learners", `{"name":"b","dim":2,"config":{"windw":3}}`, RoleAdmin, 400, "config.windw"},
		{"wrong type", "POST", "/v1/learners", `{"name":"b","dim":"two"}`, RoleAdmin, 400, "dim"},
		{"bad name", "POST", "/v1/learners", `{"name":"../x","dim":2}`, RoleAdmin, 400, "name"},
		{"bad dim", "POST", "/v1/learners", `{"name":"b","dim":0}`, RoleAdmin, 400, "dim"},
		{"bad epsilon", "POST", "/v1/learners", `{"name":"b","dim":2,"config":{"eps_select":-1}}`, RoleAdmin, 400, "config.eps_select"},
		{"non-private", "POST", "/v1/learners", `{"name":"b","dim":2,"config":{"non_private":true}}`, RoleAdmin, 400, "config.non_private"},
		{"tree update", "POST", "/v1/learners", `{"name":"b","dim":2,"config":{"update":"tree","label_budget":100}}`, RoleAdmin, 400, "config.update"},
		{"budget too small", "POST", "/v1/learners", `{"name":"b","dim":2,"budget":0.5}`, RoleAdmin, 400, "budget"},
		{"duplicate learner", "POST", "/v1/learners", `{"name":"a","dim":2}`, RoleAdmin, 409, "name"},
		{"unknown learner", "POST", "/v1/learners/zz/events", "0.1,0.1", RoleIngest, 404, ""},
		{"empty batch", "POST", "/v1/learners/a/events", "\n# nothing\n", RoleIngest, 400, "body"},
		{"label unknown request", "POST", "/v1/learners/a/labels", `{"id":999,"y":1}`, RoleAnnotator, 404, "id"},
		{"label bad y", "POST", "/v1/learners/a/labels", `{"id":1,"y":0.5}`, RoleAnnotator, 400, "y"},
		{"label malformed", "POST", "/v1/learners/a/labels", `{"id":1,"y":1}{}`, RoleAnnotator, 400, "body"},
		{"claim bad id", "POST", "/v1/learners/a/requests/x/claim", "", RoleAnnotator, 400, "id"},
		{"claim unknown", "POST", "/v1/learners/a/requests/999/claim", "", RoleAnnotator, 404, "id"},
		{"bad limit", "GET", "/v1/learners/a/releases?limit=0", "", RoleOfficer, 400, "limit"},
		{"unknown record", "GET", "/v1/records/nope/epsilon", "", RoleOfficer, 404, "id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var e errorBody
			if got := ts.do(tc.role, tc.method, tc.path, tc.body, &e); got != tc.want || e.Field != tc.field {
				t.Errorf("status %d field %q (%s), want %d %q", got, e.Field, e.Error, tc.want, tc.field)
			}
		})
	}
	// One batch mixing good and bad lines: the good ones are accepted.
	var ans ingestAnswer
	batch := "0.1,0.2\nNaN,1\n0.1,0.2,0.3\nsecret-value,1\n{\"x\":[0.1,1e999]}\n{\"x\":[0.1,0.2],\"id\":\"a:b\"}\n0.2,0.1\n"
	ts.mustDo(http.StatusOK, RoleIngest, "POST", "/v1/learners/a/events", batch, &ans)
	if ans.Accepted != 2 || ans.Rejected != 5 {
		t.Fatalf("answer %+v", ans)
	}
	for _, r := range ans.Results {
		if r.Status == "rejected" && (r.Field == "" || r.Error != "invalid-input") {
			t.Errorf("rejection %+v", r)
		}
	}
	if strings.Contains(ts.log.String(), "secret") {
		t.Errorf("the operator log echoes a record's value:\n%s", ts.log)
	}
	var b budgetView
	ts.mustDo(http.StatusOK, RoleOfficer, "GET", "/v1/learners/a/budget", "", &b)
	if b.Stats.Observed != 2 {
		t.Errorf("observed %d, want 2", b.Stats.Observed)
	}
}

// TestLabelConflicts: a labelled request cannot be labelled or claimed
// again; another annotator's claim blocks a second annotator.
func TestLabelConflicts(t *testing.T) {
	ts := newTestServer(t)
	ts.createLearner("a")
	other, err := ts.store.CreateToken(RoleAnnotator)
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.srv.auth.reload(); err != nil {
		t.Fatal(err)
	}
	ts.tok["other"] = other
	var list requestList
	for len(list.Requests) < 2 {
		ts.mustDo(http.StatusOK, RoleIngest, "POST", "/v1/learners/a/events", events(5), nil)
		ts.mustDo(http.StatusOK, RoleAnnotator, "GET", "/v1/learners/a/requests", "", &list)
	}
	id, id2 := list.Requests[0].ID, list.Requests[1].ID
	claim := fmt.Sprintf("/v1/learners/a/requests/%d/claim", id)
	ts.mustDo(http.StatusOK, RoleAnnotator, "POST", claim, "", nil)
	var e errorBody
	if got := ts.do("other", "POST", claim, "", &e); got != http.StatusConflict {
		t.Errorf("claim of a claimed request: %d", got)
	}
	if got := ts.do("other", "POST", "/v1/learners/a/labels", fmt.Sprintf(`{"id":%d,"y":1}`, id), nil); got != http.StatusConflict {
		t.Errorf("label of another's claim: %d", got)
	}
	lbl := fmt.Sprintf(`{"id":%d,"y":1}`, id)
	ts.mustDo(http.StatusOK, RoleAnnotator, "POST", "/v1/learners/a/labels", lbl, nil)
	for _, who := range []Role{RoleAnnotator, "other"} {
		if got := ts.do(who, "POST", "/v1/learners/a/labels", lbl, nil); got != http.StatusConflict {
			t.Errorf("%s relabels: %d", who, got)
		}
		if got := ts.do(who, "POST", claim, "", nil); got != http.StatusConflict {
			t.Errorf("%s claims a labelled request: %d", who, got)
		}
	}
	ts.mustDo(http.StatusOK, "other", "POST", fmt.Sprintf("/v1/learners/a/requests/%d/claim", id2), "", nil)
	ts.mustDo(http.StatusOK, "other", "POST", "/v1/learners/a/labels", fmt.Sprintf(`{"id":%d,"y":-1}`, id2), nil)
	var b budgetView
	ts.mustDo(http.StatusOK, RoleOfficer, "GET", "/v1/learners/a/budget", "", &b)
	if b.Stats.Labelled != 2 {
		t.Errorf("labelled %d, want 2", b.Stats.Labelled)
	}
}

// TestTokens: an admin makes a token over the API, it works at once, and
// stops working when revoked; a revoked or unknown id is a 404.
func TestTokens(t *testing.T) {
	ts := newTestServer(t)
	var tok struct{ Token, ID, Role string }
	ts.mustDo(http.StatusCreated, RoleAdmin, "POST", "/v1/tokens", `{"role":"officer"}`, &tok)
	ts.tok["new"] = tok.Token
	if got := ts.do("new", "GET", "/v1/ledger", "", nil); got != http.StatusOK {
		t.Fatalf("new officer token: %d", got)
	}
	if got := ts.do(RoleOfficer, "POST", "/v1/tokens", `{"role":"admin"}`, nil); got != http.StatusForbidden {
		t.Errorf("officer makes a token: %d", got)
	}
	var e errorBody
	if got := ts.do(RoleAdmin, "POST", "/v1/tokens", `{"role":"root"}`, &e); got != 400 || e.Field != "role" {
		t.Errorf("unknown role: %d %+v", got, e)
	}
	ts.mustDo(http.StatusNoContent, RoleAdmin, "DELETE", "/v1/tokens/"+tok.ID, "", nil)
	if got := ts.do("new", "GET", "/v1/ledger", "", nil); got != http.StatusUnauthorized {
		t.Errorf("revoked token: %d", got)
	}
	if got := ts.do(RoleAdmin, "DELETE", "/v1/tokens/"+tok.ID, "", nil); got != http.StatusNotFound {
		t.Errorf("revoking twice: %d", got)
	}
}

// TestFirstStartPrintsAdminToken: a fresh store prints one admin token,
// which works; a second start prints none.
func TestFirstStartPrintsAdminToken(t *testing.T) {
	path := testStorePath(t, "s.db")
	for i, want := range []bool{true, false} {
		st, err := OpenStore(path)
		if err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		srv, err := New(st, Options{Out: &out})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(out.String(), tokenPrefix+"admin_"); got != want {
			t.Errorf("start %d printed %q", i, out.String())
		}
		if want {
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			tok := lines[len(lines)-1]
			r := httptestRequest("GET", "/v1/ledger", tok)
			if role, _, ok := srv.auth.role(r); !ok || role != RoleAdmin {
				t.Errorf("printed token %q has role %q", tok, role)
			}
		}
		srv.Close()
		st.Close()
	}
}

func httptestRequest(method, path, tok string) *http.Request {
	r := httptest.NewRequest(method, path, nil)
	r.Header.Set("Authorization", "Bearer "+tok)
	return r
}

// TestRateLimit: a token over its rate gets 429; another token is not
// slowed by it.
func TestRateLimit(t *testing.T) {
	ts := newTestServer(t)
	ts.srv.lim = newLimiters(0.001, 3)
	for i := range 3 {
		if got := ts.do(RoleOfficer, "GET", "/v1/ledger", "", nil); got != http.StatusOK {
			t.Fatalf("request %d: %d", i, got)
		}
	}
	if got := ts.do(RoleOfficer, "GET", "/v1/ledger", "", nil); got != http.StatusTooManyRequests {
		t.Errorf("over the limit: %d", got)
	}
	if got := ts.do(RoleAdmin, "GET", "/v1/ledger", "", nil); got != http.StatusOK {
		t.Errorf("another token: %d", got)
	}
}

// TestLabelNeedsClaim: an annotator labels only a request it holds a live
// claim on; an admin may label any open request.
func TestLabelNeedsClaim(t *testing.T) {
	ts := newTestServer(t)
	ts.createLearner("a")
	var list requestList
	for len(list.Requests) < 3 {
		ts.mustDo(http.StatusOK, RoleIngest, "POST", "/v1/learners/a/events", events(5), nil)
		ts.mustDo(http.StatusOK, RoleAnnotator, "GET", "/v1/learners/a/requests", "", &list)
	}
	id, id2, id3 := list.Requests[0].ID, list.Requests[1].ID, list.Requests[2].ID
	var e errorBody
	ts.mustDo(http.StatusConflict, RoleAnnotator, "POST", "/v1/learners/a/labels", fmt.Sprintf(`{"id":%d,"y":1}`, id), &e)
	if e.Field != "id" || !strings.Contains(e.Error, "claim") {
		t.Errorf("label without a claim: %+v", e)
	}
	// A claim that has expired no longer admits the label.
	ts.mustDo(http.StatusOK, RoleAnnotator, "POST", fmt.Sprintf("/v1/learners/a/requests/%d/claim", id), "", nil)
	if err := ts.store.db.Update(func(tx kvTx) error {
		var r requestRecord
		if _, err := getJSON(bucket(tx, "a", subRequests), ledger.Uint64Key(id), &r); err != nil {
			return err
		}
		r.ClaimedAt = r.ClaimedAt.Add(-claimTTL - time.Second)
		return putJSON(bucket(tx, "a", subRequests), ledger.Uint64Key(id), r)
	}); err != nil {
		t.Fatal(err)
	}
	ts.mustDo(http.StatusConflict, RoleAnnotator, "POST", "/v1/learners/a/labels", fmt.Sprintf(`{"id":%d,"y":1}`, id), nil)
	ts.mustDo(http.StatusOK, RoleAnnotator, "POST", fmt.Sprintf("/v1/learners/a/requests/%d/claim", id), "", nil)
	ts.mustDo(http.StatusOK, RoleAnnotator, "POST", "/v1/learners/a/labels", fmt.Sprintf(`{"id":%d,"y":1}`, id), nil)
	// Admin aside: it labels an unclaimed request, but not another's claim.
	ts.mustDo(http.StatusOK, RoleAdmin, "POST", "/v1/learners/a/labels", fmt.Sprintf(`{"id":%d,"y":1}`, id2), nil)
	ts.mustDo(http.StatusOK, RoleAnnotator, "POST", fmt.Sprintf("/v1/learners/a/requests/%d/claim", id3), "", nil)
	ts.mustDo(http.StatusConflict, RoleAdmin, "POST", "/v1/learners/a/labels", fmt.Sprintf(`{"id":%d,"y":1}`, id3), nil)
}
