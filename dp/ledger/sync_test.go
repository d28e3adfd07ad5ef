package ledger_test

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
)

// sharedStore is a SyncStore over a MemStore that several Ledgers share,
// as processes share a database: Sync holds one lock for the whole unit.
// lose makes the next Sync commit its entry and then report an error, as
// a connection lost during COMMIT would.
type sharedStore struct {
	*ledger.MemStore
	mu   *sync.Mutex
	lose bool
}

func (s *sharedStore) Sync(seq uint64, fold func(ledger.Entry) error, decide func() (ledger.Entry, bool, error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.Scan(func(e ledger.Entry) error {
		if e.Seq <= seq {
			return nil
		}
		return fold(e)
	}); err != nil {
		return err
	}
	e, ok, err := decide()
	if err != nil || !ok {
		return err
	}
	if err := s.Append(e); err != nil {
		return err
	}
	if s.lose {
		s.lose = false
		return errors.New("connection lost")
	}
	return nil
}

// TestSyncStore: Ledgers sharing a SyncStore fold in each other's charges
// before checking the budget, share Once keys, and an entry whose commit
// was reported as failed is folded in once it turns out committed.
func TestSyncStore(t *testing.T) {
	mem, mu := ledger.NewMemStore(), &sync.Mutex{}
	a, err := ledger.Open(&sharedStore{MemStore: mem, mu: mu}, account.Budget{Epsilon: 1})
	if err != nil {
		t.Fatal(err)
	}
	bs := &sharedStore{MemStore: mem, mu: mu}
	b, err := ledger.Open(bs, account.Budget{})
	if err != nil {
		t.Fatal(err)
	}
	c := ledger.Charge{Groups: one("g"), Loss: lap(0.4)}
	if _, err := a.Record(c); err != nil {
		t.Fatal(err)
	}
	if e, err := b.Record(c); err != nil || e.Seq != 2 {
		t.Fatalf("b's charge after a's: entry %d, %v; want entry 2", e.Seq, err)
	}
	if _, err := a.Record(c); !errors.Is(err, account.ErrBudgetExceeded) {
		t.Fatalf("a's second charge (0.4 after 0.8 in all): %v, want ErrBudgetExceeded", err)
	}
	if eps, _ := a.Spent("g"); eps != 0.8 || a.Len() != 2 {
		t.Errorf("a folded in b's charge: ε = %g over %d entries, want 0.8 over 2", eps, a.Len())
	}
	once := ledger.Charge{Groups: one("h"), Loss: lap(0.1), Once: "k"}
	if _, err := a.Record(once); err != nil {
		t.Fatal(err)
	}
	if e, err := b.Record(once); err != nil || e.Seq != 3 || b.Len() != 3 {
		t.Fatalf("b's repeat of a's Once charge: entry %d, %v, %d entries; want entry 3 recorded once", e.Seq, err, b.Len())
	}

	bs.lose = true
	if _, err := b.Record(ledger.Charge{Groups: one("h"), Loss: lap(0.1)}); err == nil || !strings.Contains(err.Error(), "entry 4 not recorded: connection lost") {
		t.Fatalf("a lost commit: %v", err)
	}
	if eps, _ := b.Spent("h"); eps != 0.1 || b.Len() != 3 {
		t.Errorf("b counted an entry it was not told committed: ε = %g, %d entries", eps, b.Len())
	}
	if err := b.Refresh(); err != nil {
		t.Fatal(err)
	}
	if eps, _ := b.Spent("h"); eps != 0.2 || b.Len() != 4 {
		t.Errorf("b after Refresh: ε = %g over %d entries, want the committed 0.2 over 4", eps, b.Len())
	}
}

// TestURLStores: a URL path is never opened as a file: one whose scheme
// no linked package registered is an error naming the URL without its
// password.
func TestURLStores(t *testing.T) {
	_, err := ledger.OpenRun("nosuch://u:s3cret@host/db", ledger.RunBudget{New: account.Budget{Epsilon: 1}})
	if err == nil || !strings.Contains(err.Error(), "no store for nosuch://") || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("OpenRun of an unknown scheme: %v", err)
	}
	if _, err := ledger.Load("nosuch://h/db"); err == nil {
		t.Fatal("Load of an unknown scheme succeeded")
	}
	if !ledger.IsURL("postgres://h/db") || ledger.IsURL("/tmp/a://b") || ledger.IsURL("ledger.db") {
		t.Error("IsURL")
	}
}
