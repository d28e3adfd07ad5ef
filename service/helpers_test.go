package service

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// testServer is a server on a fresh store with one token per role.
type testServer struct {
	t     *testing.T
	path  string
	store *Store
	srv   *Server
	http  *httptest.Server
	tok   map[Role]string
	log   *bytes.Buffer
	keys  atomic.Int64 // idempotency keys made by do
}

func newTestServer(t *testing.T) *testServer {
	t.Helper()
	ts := &testServer{t: t, path: testStorePath(t, "serve.db"), tok: map[Role]string{}}
	ts.open()
	for _, r := range []Role{RoleIngest, RoleAnnotator, RoleOfficer, RoleAdmin} {
		tok, err := ts.store.CreateToken(r)
		if err != nil {
			t.Fatal(err)
		}
		ts.tok[r] = tok
	}
	if err := ts.srv.auth.reload(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ts.close)
	return ts
}

// open opens the store and starts the server on it.
func (ts *testServer) open() {
	ts.t.Helper()
	st, err := OpenStore(ts.path)
	if err != nil {
		ts.t.Fatal(err)
	}
	ts.log = &bytes.Buffer{}
	srv, err := New(st, Options{MaxEventsBody: 1 << 20, Log: slog.New(slog.NewJSONHandler(ts.log, nil))})
	if err != nil {
		ts.t.Fatal(err)
	}
	ts.store, ts.srv, ts.http = st, srv, httptest.NewServer(srv.Handler())
}

func (ts *testServer) close() {
	if ts.http != nil {
		ts.http.Close()
		ts.srv.Close()
		ts.store.Close()
		ts.http = nil
	}
}

// restart closes the server and store and opens them again.
func (ts *testServer) restart() {
	ts.close()
	ts.open()
}

// do sends a request as role ("" for none) and decodes a JSON answer into
// out (if non-nil); it returns the status.
func (ts *testServer) do(role Role, method, path, body string, out any, hdr ...string) int {
	ts.t.Helper()
	req, err := http.NewRequest(method, ts.http.URL+path, strings.NewReader(body))
	if err != nil {
		ts.t.Fatal(err)
	}
	if role != "" {
		req.Header.Set("Authorization", "Bearer "+ts.tok[role])
	}
	if method == "POST" && strings.HasSuffix(path, "/events") {
		// Every events call needs a key: a fresh one unless hdr sets one
		// (an empty value sends none).
		req.Header.Set("Idempotency-Key", fmt.Sprintf("test-%d", ts.keys.Add(1)))
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
		if hdr[i+1] == "" {
			req.Header.Del(hdr[i])
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		ts.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			ts.t.Fatalf("%s %s: %v in %q", method, path, err, b)
		}
	}
	return resp.StatusCode
}

// mustDo is do that fails the test on a status other than want.
func (ts *testServer) mustDo(want int, role Role, method, path, body string, out any, hdr ...string) {
	ts.t.Helper()
	var raw json.RawMessage
	if got := ts.do(role, method, path, body, &raw, hdr...); got != want {
		ts.t.Fatalf("%s %s as %q: status %d, want %d: %s", method, path, role, got, want, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			ts.t.Fatal(err)
		}
	}
}

// createLearner makes learner name of dimension 2 that updates on every
// label (FLMB, L = 1).
func (ts *testServer) createLearner(name string) {
	ts.t.Helper()
	ts.mustDo(http.StatusCreated, RoleAdmin, "POST", "/v1/learners",
		`{"name":"`+name+`","dim":2,"config":{"window":1}}`, nil)
}

// events is n CSV events of dimension 2.
func events(n int) string {
	var b strings.Builder
	for i := range n {
		v := float64(i%7)/10 - 0.3
		json.NewEncoder(&b).Encode(map[string]any{"x": []float64{v, 0.5 - v}})
	}
	return b.String()
}
