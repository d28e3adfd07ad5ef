package service

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/ledger/pgstore/pgtest"
)

// childEnv makes the test binary a server on the store it names (see
// TestMain): the crash test kills such children.
const childEnv = "DPAL_SERVE_CRASH_CHILD"

func TestMain(m *testing.M) {
	if path := os.Getenv(childEnv); path != "" {
		// A short lease by default: on a shared store, a restarted child
		// waits for its killed predecessor's lease to expire.
		err := Run(context.Background(), Config{Store: path, Listen: "127.0.0.1:0", LeaseSeconds: crashLease().Seconds()}, io.Discard,
			slog.New(slog.NewJSONHandler(childLog(), nil)),
			func(addr string) { fmt.Printf("ADDR %s\n", addr) })
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(pgtest.Main(m))
}

// childLog is where a child server logs: a file per process in the
// directory DPAL_CRASH_LOG names (to see why a crash test failed), else
// nowhere.
func childLog() io.Writer {
	dir := os.Getenv("DPAL_CRASH_LOG")
	if dir == "" {
		return io.Discard
	}
	f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("child-%d.log", os.Getpid())), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return io.Discard
	}
	return f
}

// crashLease is the child servers' lease: DPAL_REPLICA_LEASE (a Go
// duration; the documented run uses the default lease, 10s), else 0.5 s
// so that the test's many kills fit in a unit test's time.
func crashLease() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("DPAL_REPLICA_LEASE")); err == nil && d > 0 {
		return d
	}
	return 500 * time.Millisecond
}

// crashClient talks to one child server.
type crashClient struct {
	t    *testing.T
	base string
	tok  map[Role]string
}

// call sends a request; err is a transport error (the server died). An
// answer to retry (502 or 503 with Retry-After: on a shared store, while
// the lease of a killed server's learner expires) is retried, with the
// same key, for up to 10 s more than twice the lease.
func (c *crashClient) call(role Role, method, path, body string, out any, key string) (int, error) {
	deadline := time.Now().Add(10*time.Second + 2*crashLease())
	for {
		code, retry, err := c.callOnce(role, method, path, body, out, key)
		if !retry || time.Now().After(deadline) {
			return code, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (c *crashClient) callOnce(role Role, method, path, body string, out any, key string) (code int, retry bool, err error) {
	req, _ := http.NewRequest(method, c.base+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+c.tok[role])
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, false, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, false, err
	}
	if resp.Header.Get("Retry-After") != "" && (resp.StatusCode == http.StatusBadGateway || resp.StatusCode == http.StatusServiceUnavailable) {
		return resp.StatusCode, true, nil
	}
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(b, out); err != nil {
			return 0, false, err
		}
	}
	return resp.StatusCode, false, nil
}

// startChild runs a server on path and returns it with its address.
func startChild(t *testing.T, path string) (*exec.Cmd, string) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "ADDR ")
	if err != nil || !ok {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child did not start: %q %v", line, err)
	}
	return cmd, "http://" + addr
}

// crashState is what the clients were told, and what they still owe.
type crashState struct {
	acked     int    // events acknowledged as accepted
	labels    int    // labels acknowledged (or found committed on retry)
	batch     int    // sequence of the next batch
	inflight  string // key of a batch sent but not acknowledged
	inLabel   uint64 // a label sent but not acknowledged
	maxSpent  map[string]float64
	batchSize int
	until     time.Time // load stops then (zero: when the server dies)
}

// crashStore prepares the store the crash tests' child servers open:
// ingest, annotator and officer tokens (returned) and learner "c".
func crashStore(t *testing.T, store string) map[Role]string {
	t.Helper()
	st, err := OpenStore(store)
	if err != nil {
		t.Fatal(err)
	}
	tok := map[Role]string{}
	for _, r := range []Role{RoleIngest, RoleAnnotator, RoleOfficer} {
		if tok[r], err = st.CreateToken(r); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := New(st, Options{Log: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err == nil {
		err = srv.ensureLearner([]byte(`{"name":"c","dim":2,"config":{"window":2}}`))
		srv.Close()
	}
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestCrash kills a server with SIGKILL at random moments under load, 50
// times. After each restart: an unacknowledged batch resent with its key
// is observed at most once, so the events observed equal those
// acknowledged; every acknowledged label is there; every release has its
// ledger entry; and the recorded spend never decreases.
func TestCrash(t *testing.T) {
	path := testStorePath(t, "crash.db")
	tok := crashStore(t, path)
	s := &crashState{maxSpent: map[string]float64{}, batchSize: 20}
	rnd := rand.New(rand.NewPCG(1, 2))
	const kills = 50
	for i := range kills {
		cmd, base := startChild(t, path)
		c := &crashClient{t: t, base: base, tok: tok}
		s.check(t, c, i)
		timer := time.AfterFunc(time.Duration(2+rnd.IntN(30))*time.Millisecond, func() { cmd.Process.Signal(syscall.SIGKILL) })
		s.load(c)
		timer.Stop()
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
	}
	cmd, base := startChild(t, path)
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	s.check(t, &crashClient{t: t, base: base, tok: tok}, kills)
	t.Logf("%d kills: %d events and %d labels acknowledged", kills, s.acked, s.labels)
	if s.acked == 0 || s.labels == 0 {
		t.Error("the load acknowledged nothing: the kills came too early")
	}
}

// claimAndLabel claims request id and labels it +1. A claim refused with
// 409 means the request was labelled: its status is returned.
func (c *crashClient) claimAndLabel(id uint64) (int, error) {
	code, err := c.call(RoleAnnotator, "POST", fmt.Sprintf("/v1/learners/c/requests/%d/claim", id), "", nil, "")
	if err != nil || code != http.StatusOK {
		return code, err
	}
	return c.call(RoleAnnotator, "POST", "/v1/learners/c/labels", fmt.Sprintf(`{"id":%d,"y":1}`, id), nil, "")
}

// load sends batches and labels until the server dies.
// A 5xx answer is treated as a transport error: the call may or may not
// have committed (a database restarted under it), and check resends it.
// With until set, load also returns then.
func (s *crashState) load(c *crashClient) {
	for s.until.IsZero() || time.Now().Before(s.until) {
		key := fmt.Sprintf("b%d", s.batch)
		s.inflight = key
		var ans ingestAnswer
		if code, err := c.call(RoleIngest, "POST", "/v1/learners/c/events", events(s.batchSize), &ans, key); err != nil || code >= 500 {
			return
		}
		s.acked += ans.Accepted
		s.inflight, s.batch = "", s.batch+1
		var list requestList
		if code, err := c.call(RoleAnnotator, "GET", "/v1/learners/c/requests?limit=2", "", &list, ""); err != nil || code >= 500 {
			return
		}
		for _, r := range list.Requests {
			s.inLabel = r.ID
			code, err := c.claimAndLabel(r.ID)
			if err != nil || code >= 500 {
				return
			}
			// 409: the request was open when listed and only this client
			// labels, so a retried call (after a 502 from a forwarding
			// replica whose owner committed and died before answering)
			// found its own label committed.
			if code == http.StatusOK || code == http.StatusConflict {
				s.labels++
			}
			s.inLabel = 0
		}
	}
}

// check settles what was in flight at the kill and checks the invariants.
func (s *crashState) check(t *testing.T, c *crashClient, round int) {
	t.Helper()
	if s.inflight != "" {
		var ans ingestAnswer
		if code, err := c.call(RoleIngest, "POST", "/v1/learners/c/events", events(s.batchSize), &ans, s.inflight); err != nil || code != 200 {
			t.Fatalf("round %d: resending %s: %d %v", round, s.inflight, code, err)
		}
		s.acked += ans.Accepted
		s.inflight, s.batch = "", s.batch+1
	}
	if s.inLabel != 0 {
		code, err := c.claimAndLabel(s.inLabel)
		if err != nil || code != http.StatusOK && code != http.StatusConflict {
			t.Fatalf("round %d: resending the label of %d: %d %v", round, s.inLabel, code, err)
		}
		s.labels++ // 409: it was committed before the kill
		s.inLabel = 0
	}
	var b budgetView
	var rels struct{ Releases []releaseRecord }
	var rep ledger.Report
	for _, q := range []struct {
		path string
		out  any
	}{{"/v1/learners/c/budget", &b}, {"/v1/learners/c/releases", &rels}, {"/v1/ledger?learner=c", &rep}} {
		if code, err := c.call(RoleOfficer, "GET", q.path, "", q.out, ""); err != nil || code != 200 {
			t.Fatalf("round %d: %s: %d %v", round, q.path, code, err)
		}
	}
	if b.Stats.Observed != s.acked || b.Stats.Labelled != s.labels {
		t.Fatalf("round %d: observed %d labelled %d, acknowledged %d and %d", round, b.Stats.Observed, b.Stats.Labelled, s.acked, s.labels)
	}
	if len(rels.Releases) != b.Stats.Updates {
		t.Fatalf("round %d: %d releases stored for %d updates", round, len(rels.Releases), b.Stats.Updates)
	}
	paid := false
	for _, e := range rep.Entries {
		paid = paid || strings.HasSuffix(e.Once, "/update")
	}
	if len(rels.Releases) > 0 && !paid {
		t.Fatalf("round %d: %d releases without their ledger entry", round, len(rels.Releases))
	}
	for _, g := range rep.Groups {
		if g.Epsilon < s.maxSpent[g.Group] {
			t.Fatalf("round %d: group %s spend fell from %v to %v", round, g.Group, s.maxSpent[g.Group], g.Epsilon)
		}
		s.maxSpent[g.Group] = g.Epsilon
	}
}
