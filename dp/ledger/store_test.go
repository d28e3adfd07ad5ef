package ledger_test

import (
	"encoding/binary"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
)

// openLedger opens the ledger in the file at path with budget b.
func openLedger(t testing.TB, path string, b account.Budget) *ledger.Ledger {
	t.Helper()
	st := openFile(t, path)
	l, err := ledger.Open(st, b)
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	return l
}

// sameLoss compares losses by value (a nil and an empty slice or map are
// the same: the stored form does not tell them apart).
func sameLoss(a, b account.Loss) bool {
	return a.Mechanism == b.Mechanism && maps.Equal(a.Params, b.Params) &&
		a.Epsilon == b.Epsilon && a.Delta == b.Delta && a.Rho == b.Rho &&
		slices.Equal(a.Orders, b.Orders) && slices.Equal(a.RDP, b.RDP) && slices.Equal(a.PLD, b.PLD)
}

// TestPLDCharges: a group pays PLD losses, read at the budget's δ by the
// PLD accountant; a second DP-SGD run exceeds the budget; the stored terms
// come back on reopening with the same spend.
func TestPLDCharges(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	budget := account.Budget{Epsilon: 3, Delta: 1e-5}
	l := openLedger(t, path, budget)
	terms, err := account.PhaseTerms([]account.Phase{{SampleRate: 256.0 / 60000, NoiseMultiplier: 1.1, Steps: 14062}})
	if err != nil {
		t.Fatal(err)
	}
	run, err := account.PLDLoss("dp-sgd", terms...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Record(ledger.Charge{Groups: []string{"model"}, Loss: run}); err != nil {
		t.Fatal(err)
	}
	want, err := account.PLDEpsilon(terms, 1e-5, account.PLDOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if eps, delta := l.Spent("model"); eps != want.Epsilon || delta != 1e-5 {
		t.Errorf("spent (%v, %v), want (%v, 1e-5)", eps, delta, want.Epsilon)
	}
	if _, err := l.Record(ledger.Charge{Groups: []string{"model"}, Loss: run}); !errors.Is(err, account.ErrBudgetExceeded) {
		t.Errorf("a second run: %v, want the budget exceeded", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLedger(t, path, budget)
	defer l.Close()
	if eps, _ := l.Spent("model"); eps != want.Epsilon || !sameLoss(l.Loss("model"), run) {
		t.Errorf("reopened: spent %v, loss %+v", eps, l.Loss("model"))
	}
}

// sameEntry compares entries by value, times by the instant.
func sameEntry(a, b ledger.Entry) bool {
	return a.Seq == b.Seq && a.Time.Equal(b.Time) && slices.Equal(a.Groups, b.Groups) &&
		sameLoss(a.Loss, b.Loss) && a.Once == b.Once && a.Note == b.Note
}

func TestFileReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	budget := account.Budget{Epsilon: 2, Delta: 1e-5}
	l := openLedger(t, path, budget)
	curve, err := account.SubsampledGaussian([]account.Phase{{SampleRate: 0.01, NoiseMultiplier: 1.2, Steps: 100}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []ledger.Charge{
		{Groups: []string{"a", "b"}, Loss: lap(0.25), Note: "count"},
		{Groups: []string{"b"}, Loss: gauss(0.5, 1e-6), Once: "select"},
		{Groups: []string{"c"}, Loss: curve},
	} {
		if _, err := l.Record(c); err != nil {
			t.Fatal(err)
		}
	}
	entries := checkLog(t, l, 3)
	summary, meta := l.Summary(), l.Meta()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("ledger file: %v, %v, want mode 0600", info, err)
	}

	for _, tc := range []struct {
		name   string
		budget account.Budget
		ok     bool
	}{
		{"zero budget takes the stored one", account.Budget{}, true},
		{"same budget", budget, true},
		{"lower budget", account.Budget{Epsilon: 1, Delta: 1e-6}, true},
		{"larger ε refused", account.Budget{Epsilon: 3, Delta: 1e-5}, false},
		{"larger δ refused", account.Budget{Epsilon: 2, Delta: 1e-4}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := openFile(t, path)
			defer st.Close()
			l, err := ledger.Open(st, tc.budget)
			if !tc.ok {
				if err == nil {
					t.Fatalf("reopening with %+v over the stored %+v succeeded", tc.budget, budget)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// A ledger keeps the settings it was created with; a lower
			// budget is enforced for this session only.
			inForce := budget
			if tc.budget != (account.Budget{}) {
				inForce = tc.budget
			}
			if l.Meta() != meta || l.Budget() != inForce {
				t.Errorf("settings %+v in force %+v, want %+v, %+v", l.Meta(), l.Budget(), meta, inForce)
			}
			got := checkLog(t, l, 3)
			for i := range got {
				if !sameEntry(got[i], entries[i]) {
					t.Errorf("entry %d: %+v, want %+v", i+1, got[i], entries[i])
				}
			}
			if inForce == budget && !reflect.DeepEqual(l.Summary(), summary) || !l.Charged("select") {
				t.Errorf("summary %+v, want %+v", l.Summary(), summary)
			}
		})
	}
}

// TestFileExhaustion charges a durable ledger until the budget is spent,
// then checks that a reopened ledger still refuses.
func TestFileExhaustion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	budget := account.Budget{Epsilon: 1}
	l := openLedger(t, path, budget)
	n, sum := 0, 0.0
	for {
		_, err := l.Charge(mech{lap(0.15)}, "g")
		if errors.Is(err, account.ErrBudgetExceeded) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
		sum += 0.15
	}
	if n != 6 {
		t.Fatalf("%d charges of 0.15 fit a budget of 1, want 6", n)
	}
	l.Close()
	l = openLedger(t, path, account.Budget{})
	defer l.Close()
	if _, err := l.Charge(mech{lap(0.15)}, "g"); !errors.Is(err, account.ErrBudgetExceeded) {
		t.Errorf("reopened ledger: %v, want ErrBudgetExceeded", err)
	}
	entries := checkLog(t, l, n)
	total := 0.0
	for _, e := range entries {
		total += e.Loss.Epsilon
	}
	if eps, _ := l.Spent("g"); eps != sum || total != sum {
		t.Errorf("spent ε = %v, entries add up to %v, want %v", eps, total, sum)
	}
	// What is left still fits.
	if _, err := l.Charge(mech{lap(0.1)}, "g"); err != nil {
		t.Errorf("ε = 0.1 of the 0.1 left: %v", err)
	}
}

func TestFileLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	l := openLedger(t, path, account.Budget{Epsilon: 1})
	// bbolt locks with flock(2), which binds the lock to the open file
	// description: a second open of the file conflicts with the first even
	// within one process, as another process's would.
	start := time.Now()
	if st, err := ledger.OpenFile(path); !errors.Is(err, ledger.ErrLocked) {
		if err == nil {
			st.Close()
		}
		t.Fatalf("second open: %v, want ErrLocked", err)
	}
	t.Logf("second open refused after %v", time.Since(start).Round(time.Millisecond))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	openLedger(t, path, account.Budget{}).Close()
}

// TestFileTampered writes bad records into a ledger file behind its back:
// a reopened ledger refuses the file.
func TestFileTampered(t *testing.T) {
	key := func(seq uint64) []byte { return binary.BigEndian.AppendUint64(nil, seq) }
	good := func(seq uint64) []byte {
		return mustJSON(t, ledger.Entry{Seq: seq, Groups: []string{"g"}, Loss: lap(0.1)})
	}
	for _, tc := range []struct {
		name   string
		bucket string
		key    []byte
		value  []byte
	}{
		{"gap in seq", "entries", key(3), good(3)},
		{"seq under another key", "entries", key(2), good(5)},
		{"invalid loss", "entries", key(2), []byte(`{"seq":2,"groups":["g"],"loss":{"epsilon":-1}}`)},
		{"not json", "entries", key(2), []byte(`{"seq":2,`)},
		{"over the budget", "entries", key(2), mustJSON(t, ledger.Entry{Seq: 2, Groups: []string{"g"}, Loss: lap(5)})},
		{"invalid settings", "meta", []byte("ledger"), []byte(`{"version":2,"budget":{"epsilon":0}}`)},
		{"other version", "meta", []byte("ledger"), []byte(`{"version":3,"budget":{"epsilon":1},"conversion":"classic"}`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ledger.db")
			l := openLedger(t, path, account.Budget{Epsilon: 1})
			if _, err := l.Charge(mech{lap(0.1)}, "g"); err != nil {
				t.Fatal(err)
			}
			l.Close()
			db, err := bolt.Open(path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			err = db.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte(tc.bucket)).Put(tc.key, tc.value) })
			db.Close()
			if err != nil {
				t.Fatal(err)
			}
			st := openFile(t, path)
			defer st.Close()
			if _, err := ledger.Open(st, account.Budget{}); err == nil {
				t.Error("a tampered ledger file opened")
			}
		})
	}
}

func TestStoreAppendOrder(t *testing.T) {
	meta := ledger.Meta{Version: ledger.Version, Budget: account.Budget{Epsilon: 1}}
	entry := func(seq uint64) ledger.Entry { return ledger.Entry{Seq: seq, Groups: []string{"g"}, Loss: lap(0.1)} }
	t.Run("file", func(t *testing.T) {
		st := openFile(t, filepath.Join(t.TempDir(), "s.db"))
		defer st.Close()
		if err := st.Init(meta); err != nil {
			t.Fatal(err)
		}
		if err := st.Init(meta); err == nil {
			t.Error("a second Init succeeded")
		}
		for _, tc := range []struct {
			seq uint64
			ok  bool
		}{{2, false}, {1, true}, {1, false}, {3, false}, {2, true}} {
			if err := st.Append(entry(tc.seq)); (err == nil) != tc.ok {
				t.Errorf("Append(seq %d) = %v, want ok=%v", tc.seq, err, tc.ok)
			}
		}
		n := 0
		if err := st.Scan(func(ledger.Entry) error { n++; return nil }); err != nil || n != 2 {
			t.Errorf("Scan: %v, %d entries, want 2", err, n)
		}
		stop := errors.New("stop")
		if err := st.Scan(func(ledger.Entry) error { return stop }); !errors.Is(err, stop) {
			t.Errorf("Scan returned %v, want fn's error", err)
		}
	})
	t.Run("memory", func(t *testing.T) {
		st := ledger.NewMemStore()
		if err := st.Append(entry(1)); err == nil {
			t.Error("Append before Init succeeded")
		}
		if err := st.Init(meta); err != nil {
			t.Fatal(err)
		}
		if err := st.Init(meta); err == nil {
			t.Error("a second Init succeeded")
		}
	})
}

// TestLowerBudgetEnforced: reopening with a lower budget enforces it for
// that ledger, while the stored budget stays.
func TestLowerBudgetEnforced(t *testing.T) {
	st := ledger.NewMemStore()
	l, err := ledger.Open(st, account.Budget{Epsilon: 10})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Record(ledger.Charge{Groups: []string{"g"}, Loss: account.Pure("m", 2)}); err != nil {
		t.Fatal(err)
	}
	low, err := ledger.Open(st, account.Budget{Epsilon: 3})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := low.Record(ledger.Charge{Groups: []string{"g"}, Loss: account.Pure("m", 2)}); !errors.Is(err, account.ErrBudgetExceeded) {
		t.Fatalf("charge past the lower budget: %v", err)
	}
	if low.Meta().Budget.Epsilon != 10 || low.Remaining("g") != 1 {
		t.Errorf("stored budget %v, remaining %v; want 10 and 1", low.Meta().Budget, low.Remaining("g"))
	}
}
