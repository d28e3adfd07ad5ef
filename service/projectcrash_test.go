package service

import (
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dpal-dev/dpal/dp/account"
)

// TestProjectCrash kills a server running a top-k project with SIGKILL at
// random moments while annotators label and rounds train, until the
// project is done. After each kill the store is read directly: every
// acknowledged label is stored (in the queue or in its group, with its
// class), and every release has its round's DP-SGD charges in the
// project's ledger (written before it); the next server resumes from the
// last finished phase.
func TestProjectCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("kills servers")
	}
	path := filepath.Join(t.TempDir(), "crash.db")
	st, err := OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	tok := map[Role]string{}
	for _, r := range []Role{RoleIngest, RoleAnnotator, RoleOfficer, RoleAdmin} {
		if tok[r], err = st.CreateToken(r); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := New(st, Options{Log: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	const n = 400
	pool, classes := projectBlobs(n, 9)
	ts := httpRecorder{srv: srv, tok: tok}
	body := strings.Replace(projectBody("crash", "topk", "random", n), `"epochs":4`, `"epochs":40`, 1)
	if code := ts.do(RoleAdmin, "POST", "/v1/projects", body, "application/json"); code != 201 {
		t.Fatalf("create: %d", code)
	}
	if code := ts.do(RoleIngest, "POST", "/v1/projects/crash/pool", pool, "application/x-ndjson"); code != 200 {
		t.Fatalf("upload: %d", code)
	}
	st.Close()

	acked := map[int]int{} // pool index → class acknowledged
	rnd := rand.New(rand.NewPCG(3, 4))
	kills, done := 0, false
	for ; kills < 40 && !done; kills++ {
		cmd, base := startChild(t, path)
		c := &crashClient{t: t, base: base, tok: tok}
		timer := time.AfterFunc(time.Duration(5+rnd.IntN(80))*time.Millisecond, func() { cmd.Process.Signal(syscall.SIGKILL) })
		done = projectLoad(c, acked, classes, time.Now().Add(10*time.Second))
		timer.Stop()
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		checkProjectStore(t, path, acked, kills)
	}
	cmd, base := startChild(t, path)
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	c := &crashClient{t: t, base: base, tok: tok}
	for deadline := time.Now().Add(2 * time.Minute); !done; {
		if time.Now().After(deadline) {
			t.Fatal("the project did not finish after the kills")
		}
		done = projectLoad(c, acked, classes, deadline)
	}
	// A label committed just before a kill is stored though its answer
	// never arrived: at most one such label per kill, none acknowledged
	// and lost.
	var v projectView
	if code, err := c.call(RoleOfficer, "GET", "/v1/projects/crash", "", &v, ""); err != nil || code != 200 || v.Round != 3 || v.Labels < len(acked) || v.Labels > len(acked)+kills {
		t.Fatalf("final: %d %v %+v, %d labels acknowledged", code, err, v, len(acked))
	}
	t.Logf("%d kills; %d labels acknowledged, all kept", kills, len(acked))
}

// projectLoad drives the project until the server dies (false) or the
// project is done (true): start it, label what is queued, wait for
// training.
func projectLoad(c *crashClient, acked map[int]int, classes []int, deadline time.Time) bool {
	names := []string{"a", "b", "c"}
	for time.Now().Before(deadline) {
		var v projectView
		if _, err := c.call(RoleOfficer, "GET", "/v1/projects/crash", "", &v, ""); err != nil {
			return false
		}
		switch v.State {
		case stateDone:
			return true
		case stateReady, statePaused, stateFailed:
			if _, err := c.call(RoleAdmin, "POST", "/v1/projects/crash/start", "", nil, ""); err != nil {
				return false
			}
		case stateLabelling:
			var q projectQueueView
			if _, err := c.call(RoleAnnotator, "GET", "/v1/projects/crash/queue?limit=5", "", &q, ""); err != nil {
				return false
			}
			for _, it := range q.Items {
				base := fmt.Sprintf("/v1/projects/crash/queue/%d", it.Index)
				code, err := c.call(RoleAnnotator, "POST", base+"/claim", "", nil, "")
				if err != nil {
					return false
				}
				if code != 200 {
					continue
				}
				code, err = c.call(RoleAnnotator, "POST", base+"/label", fmt.Sprintf(`{"label":%q}`, names[classes[it.Index]]), nil, "")
				if err != nil {
					return false
				}
				if code == 200 {
					acked[it.Index] = classes[it.Index]
				}
			}
		default:
			time.Sleep(5 * time.Millisecond)
		}
	}
	return false
}

// checkProjectStore reads the store of a killed server: the acknowledged
// labels are there, and no release lacks its round's charges.
func checkProjectStore(t *testing.T, path string, acked map[int]int, kill int) {
	t.Helper()
	st, err := OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	stored := map[int]int{}
	var rels []projectRelease
	var m projectMeta
	err = st.db.View(func(tx kvTx) error {
		var err error
		if m, err = getProjectTx(tx, "crash"); err != nil {
			return err
		}
		groups, err := groupsTx(tx, "crash")
		if err != nil {
			return err
		}
		for _, g := range groups {
			for i, x := range g.Indices {
				stored[x] = g.Labels[i]
			}
		}
		if err := forQueueTx(tx, "crash", -1, func(it queueItem) (bool, error) {
			if it.Status == statusLabelled {
				stored[it.Index] = it.Label
			}
			return true, nil
		}); err != nil {
			return err
		}
		rels, err = releasesTx(tx, "crash")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range acked {
		if got, ok := stored[i]; !ok || got != c {
			t.Fatalf("kill %d: acknowledged label %d of record %d is not stored (%v, %v)", kill, c, i, got, ok)
		}
	}
	led, err := st.openProjectLedger("crash", account.Budget{}, m.Config.Conversion, nil)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := led.Entries()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rels {
		paid := false
		for _, e := range entries {
			paid = paid || strings.HasPrefix(e.Note, fmt.Sprintf("round %d:", r.Round))
		}
		if !paid {
			t.Fatalf("kill %d: release %d has no charge in the ledger (%d entries)", kill, r.Round, len(entries))
		}
	}
}

// httpRecorder calls a server's handler in process.
type httpRecorder struct {
	srv *Server
	tok map[Role]string
}

// do sends a request as role with a content type; it returns the status.
func (h httpRecorder) do(role Role, method, path, body, ctype string) int {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+h.tok[role])
	req.Header.Set("Content-Type", ctype)
	w := httptest.NewRecorder()
	h.srv.Handler().ServeHTTP(w, req)
	return w.Code
}
