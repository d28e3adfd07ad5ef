package pgstore_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/ledger/pgstore/pgtest"
)

// The charging child is this test binary run with -test.run of
// TestChargeChild and these variables set.
const (
	childURLEnv     = "DPAL_PG_CHILD_URL"     // the ledger's URL
	childStartEnv   = "DPAL_PG_CHILD_START"   // when to start charging, Unix nanoseconds
	childWorkersEnv = "DPAL_PG_CHILD_WORKERS" // goroutines, each with its own Ledger
	childChargesEnv = "DPAL_PG_CHILD_CHARGES" // charges per goroutine; 0 for until killed
)

// spendLoss is every child's charge to group "g".
var spendLoss = account.Pure("laplace", 0.01)

// TestChargeChild is the child of TestNoDoubleSpend and TestCrash: each of
// its workers opens the ledger at childURLEnv for itself (its own
// connections, as another process would) and charges spendLoss to group
// "g", once with the Once key "shared" first. It prints one line per
// charge: "ok NOTE SEQ" once recorded, "refused NOTE" for a charge over
// the budget; any other error fails it.
func TestChargeChild(t *testing.T) {
	u := os.Getenv(childURLEnv)
	if u == "" {
		t.Skip("the child of TestNoDoubleSpend and TestCrash")
	}
	start, _ := strconv.ParseInt(os.Getenv(childStartEnv), 10, 64)
	workers, _ := strconv.Atoi(os.Getenv(childWorkersEnv))
	charges, _ := strconv.Atoi(os.Getenv(childChargesEnv))
	ls := make([]*ledger.Ledger, workers)
	for w := range ls {
		l, err := ledger.OpenRun(u, ledger.RunBudget{})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ls[w] = l
	}
	time.Sleep(time.Until(time.Unix(0, start)))
	var mu sync.Mutex // one write(2) per line
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(os.Stdout, format+"\n", args...)
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w, l := range ls {
		wg.Go(func() {
			if _, err := l.Record(ledger.Charge{Groups: []string{"o"}, Loss: spendLoss, Once: "shared"}); err != nil {
				errs <- err
				return
			}
			// A child charging until killed stops by itself if its parent is gone.
			deadline := time.Now().Add(30 * time.Second)
			for i := 0; charges == 0 && time.Now().Before(deadline) || i < charges; i++ {
				note := fmt.Sprintf("%d/%d/%d", os.Getpid(), w, i)
				e, err := l.Record(ledger.Charge{Groups: []string{"g"}, Loss: spendLoss, Note: note})
				switch {
				case errors.Is(err, account.ErrBudgetExceeded):
					say("refused %s", note)
				case err != nil:
					errs <- fmt.Errorf("charge %s: %w", note, err)
					return
				default:
					say("ok %s %d", note, e.Seq)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// chargeChild is the command of one charging child.
func chargeChild(u string, start time.Time, workers, charges int) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestChargeChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), childURLEnv+"="+u, childStartEnv+"="+strconv.FormatInt(start.UnixNano(), 10),
		childWorkersEnv+"="+strconv.Itoa(workers), childChargesEnv+"="+strconv.Itoa(charges))
	return cmd
}

// childLines is what children reported: the notes of the recorded
// charges with their sequence numbers, and of the refused ones.
type childLines struct {
	ok      map[string]uint64
	refused map[string]bool
}

// parse adds a child's output to c, failing t on a line it does not
// know or a note reported twice. A last line cut short by a kill is
// ignored.
func (c *childLines) parse(t *testing.T, out []byte, killed bool) {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 3 && f[0] == "ok":
			seq, err := strconv.ParseUint(f[2], 10, 64)
			if _, dup := c.ok[f[1]]; dup || err != nil {
				t.Fatalf("child line %q: repeated or malformed", sc.Text())
			}
			c.ok[f[1]] = seq
		case len(f) == 2 && f[0] == "refused":
			c.refused[f[1]] = true
		case killed && !bytes.HasSuffix(out, []byte("\n")) && bytes.HasSuffix(out, sc.Bytes()):
		case strings.HasPrefix(sc.Text(), "PASS") || strings.HasPrefix(sc.Text(), "ok "):
		default:
			t.Fatalf("child line %q", sc.Text())
		}
	}
}

// TestNoDoubleSpend charges one group of one ledger from two processes at
// once, eight connections each, with a budget that fits a third of the
// charges: the log holds exactly the charges the children reported as
// recorded, each once, under the sequence number they were told; every
// other charge was refused with account.ErrBudgetExceeded; the group's
// total is within the budget; and the Once charge all workers made is in
// the log once.
func TestNoDoubleSpend(t *testing.T) {
	if os.Getenv(childURLEnv) != "" {
		t.Skip("in the child")
	}
	const workers, charges, fits = 8, 20, 100 // 320 charges of 0.01, budget 1
	u := withLedger(pgtest.Start(t), "spend")
	l, err := ledger.OpenRun(u, ledger.RunBudget{New: account.Budget{Epsilon: fits * spendLoss.Epsilon}})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()

	start := time.Now().Add(2 * time.Second) // both children connected by then
	outs := make([][]byte, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range outs {
		wg.Go(func() {
			cmd := chargeChild(u, start, workers, charges)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			outs[i], errs[i] = cmd.Output()
			if errs[i] != nil {
				errs[i] = fmt.Errorf("%w: %s%s", errs[i], outs[i], stderr.Bytes())
			}
		})
	}
	wg.Wait()
	t.Logf("two processes made %d charges in %v after the start", 2*workers*charges, time.Since(start).Round(time.Millisecond))
	lines := childLines{ok: map[string]uint64{}, refused: map[string]bool{}}
	for i, out := range outs {
		if errs[i] != nil {
			t.Fatalf("child %d: %v", i, errs[i])
		}
		lines.parse(t, out, false)
	}
	if n := len(lines.ok) + len(lines.refused); n != 2*workers*charges {
		t.Fatalf("children reported %d charges, want %d", n, 2*workers*charges)
	}
	perProcess := map[string]int{}
	for note := range lines.ok {
		perProcess[strings.Split(note, "/")[0]]++
	}
	t.Logf("%d charges recorded (by process: %v), %d refused", len(lines.ok), perProcess, len(lines.refused))
	if len(lines.ok) != fits {
		t.Errorf("%d charges recorded, want the %d that fit", len(lines.ok), fits)
	}
	checkLog(t, u, lines.ok, fits*spendLoss.Epsilon)
}

// checkLog loads the ledger at u and checks that its entries on "g" are
// exactly ok (note → sequence number), that "g" is within budget and
// that the Once charge is there at most once.
func checkLog(t *testing.T, u string, ok map[string]uint64, budget float64) {
	t.Helper()
	r, err := ledger.Load(u)
	if err != nil {
		t.Fatalf("the ledger after the children: %v", err)
	}
	defer r.Close()
	entries, err := r.Entries()
	if err != nil {
		t.Fatal(err)
	}
	once, inLog := 0, map[string]bool{}
	for _, e := range entries {
		if e.Once == "shared" {
			once++
			continue
		}
		if inLog[e.Note] {
			t.Errorf("charge %s is in the log twice", e.Note)
		}
		inLog[e.Note] = true
		if seq, reported := ok[e.Note]; reported && seq != e.Seq {
			t.Errorf("charge %s is entry %d, its child was told %d", e.Note, e.Seq, seq)
		}
	}
	for note := range ok {
		if !inLog[note] {
			t.Errorf("charge %s was reported recorded but is not in the log", note)
		}
	}
	if once > 1 {
		t.Errorf("the Once charge is in the log %d times", once)
	}
	if eps, _ := r.Spent("g"); eps > budget*(1+1e-9) {
		t.Errorf("group g spent ε = %g, over its budget %g", eps, budget)
	}
}

// TestCrash SIGKILLs a charging process at random moments while another
// keeps charging: after each kill the ledger opens and replays whole, and
// every charge a child reported as recorded is in it once.
func TestCrash(t *testing.T) {
	if os.Getenv(childURLEnv) != "" {
		t.Skip("in the child")
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	u := withLedger(pgtest.Start(t), "crash")
	l, err := ledger.OpenRun(u, ledger.RunBudget{New: account.Budget{Epsilon: 1e9}})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	lines := childLines{ok: map[string]uint64{}, refused: map[string]bool{}}
	for range 5 {
		var outs [2]bytes.Buffer
		cmds := [2]*exec.Cmd{chargeChild(u, time.Now(), 2, 0), chargeChild(u, time.Now(), 2, 0)}
		for i, cmd := range cmds {
			cmd.Stdout = &outs[i]
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(time.Duration(300+rng.IntN(400)) * time.Millisecond)
		victim := rng.IntN(2)
		cmds[victim].Process.Signal(syscall.SIGKILL)
		time.Sleep(time.Duration(rng.IntN(100)) * time.Millisecond)
		cmds[1-victim].Process.Signal(syscall.SIGKILL)
		for i, cmd := range cmds {
			cmd.Wait()
			lines.parse(t, outs[i].Bytes(), true)
		}
		checkLog(t, u, lines.ok, 1e9)
	}
	if len(lines.ok) == 0 {
		t.Fatal("the children recorded nothing before they were killed")
	}
	t.Logf("%d charges reported across the kills", len(lines.ok))
}
