package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/ledger/pgstore"
	"github.com/dpal-dev/dpal/dp/ledger/pgstore/pgtest"
)

// kvBackends are the stores to test: a bbolt file and, where PostgreSQL
// is installed, a database.
func kvBackends(t *testing.T) []struct {
	name string
	path func(*testing.T) string
} {
	return []struct {
		name string
		path func(*testing.T) string
	}{
		{"bbolt", func(t *testing.T) string { return testStorePath(t, "kv.db") }},
		{"postgres", func(t *testing.T) string { return pgtest.Start(t) }},
	}
}

// TestKV: both backends keep buckets of ordered keys alike: cursors walk
// in bytewise order across pages, writes in a transaction are seen by its
// own reads, a failed transaction leaves nothing, and a read-only one
// writes nothing.
func TestKV(t *testing.T) {
	for _, be := range kvBackends(t) {
		t.Run(be.name, func(t *testing.T) {
			st, err := OpenStore(be.path(t))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			n := pgPage*2 + 7 // more than two cursor pages
			err = st.db.Update(func(tx kvTx) error {
				if tx.Bucket([]byte("b")) != nil {
					return errors.New("bucket b exists before its creation")
				}
				b, err := tx.CreateBucketIfNotExists([]byte("b"))
				if err != nil {
					return err
				}
				for i := n - 1; i >= 0; i-- {
					if err := b.Put(ledger.Uint64Key(uint64(i)), fmt.Appendf(nil, "v%d", i)); err != nil {
						return err
					}
				}
				if got := string(b.Get(ledger.Uint64Key(3))); got != "v3" {
					return fmt.Errorf("own write reads %q", got)
				}
				return b.Delete(ledger.Uint64Key(5))
			})
			if err != nil {
				t.Fatal(err)
			}
			err = st.db.View(func(tx kvTx) error {
				b := tx.Bucket([]byte("b"))
				if b.KeyN() != n-1 {
					return fmt.Errorf("KeyN %d, want %d", b.KeyN(), n-1)
				}
				var keys []uint64
				if err := b.ForEach(func(k, _ []byte) error { keys = append(keys, ledger.KeyUint64(k)); return nil }); err != nil {
					return err
				}
				if len(keys) != n-1 || !slices.IsSorted(keys) || slices.Contains(keys, 5) {
					return fmt.Errorf("ForEach walked %d keys, sorted %v", len(keys), slices.IsSorted(keys))
				}
				c := b.Cursor()
				if k, v := c.Seek(ledger.Uint64Key(5)); ledger.KeyUint64(k) != 6 || string(v) != "v6" {
					return fmt.Errorf("Seek(5) at %d %q", ledger.KeyUint64(k), v)
				}
				if k, _ := c.Prev(); ledger.KeyUint64(k) != 4 {
					return fmt.Errorf("Prev at %d", ledger.KeyUint64(k))
				}
				if k, _ := c.Last(); ledger.KeyUint64(k) != uint64(n-1) {
					return fmt.Errorf("Last at %d", ledger.KeyUint64(k))
				}
				if k, _ := c.Next(); k != nil {
					return fmt.Errorf("Next after Last at %d", ledger.KeyUint64(k))
				}
				if k, _ := c.First(); ledger.KeyUint64(k) != 0 {
					return fmt.Errorf("First at %d", ledger.KeyUint64(k))
				}
				if b.Put([]byte("x"), []byte("y")) == nil {
					return errors.New("a read-only transaction wrote")
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			boom := errors.New("boom")
			err = st.db.Update(func(tx kvTx) error {
				tx.Bucket([]byte("b")).Put([]byte("undone"), []byte("1"))
				tx.CreateBucketIfNotExists([]byte("undone"))
				return boom
			})
			if !errors.Is(err, boom) {
				t.Fatalf("failed transaction: %v", err)
			}
			err = st.db.Update(func(tx kvTx) error {
				if tx.Bucket([]byte("b")).Get([]byte("undone")) != nil || tx.Bucket([]byte("undone")) != nil {
					return errors.New("a failed transaction's writes are there")
				}
				if err := tx.DeleteBucket([]byte("b")); err != nil {
					return err
				}
				if !errors.Is(tx.DeleteBucket([]byte("b")), errBucketNotFound) {
					return errors.New("deleting a missing bucket did not fail with errBucketNotFound")
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestPostgresNewerSchema: a database whose service schema a newer dpal
// wrote is refused, naming the versions.
func TestPostgresNewerSchema(t *testing.T) {
	dsn := pgtest.Start(t)
	st, err := OpenStore(dsn)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(context.Background(), `UPDATE schema_version SET version = version + 1 WHERE component = 'service'`)
	conn.Close(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	_, err = OpenStore(dsn)
	if !errors.Is(err, pgstore.ErrNewerSchema) || !strings.Contains(err.Error(), "service schema") {
		t.Fatalf("a newer schema: %v", err)
	}
	if strings.Contains(err.Error(), "password") {
		t.Error("the error shows the URL's password")
	}
}

// TestSharedLedgerNoDoubleSpend: four ledgers of one learner, on two
// stores (as two replicas) of one database, charge one group
// concurrently: exactly as many charges pass as the budget fits, and the
// stored log is gapless and within the budget.
func TestSharedLedgerNoDoubleSpend(t *testing.T) {
	dsn := pgtest.Start(t)
	var stores []*Store
	for range 2 {
		st, err := OpenStore(dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		stores = append(stores, st)
	}
	if err := stores[0].db.Update(func(tx kvTx) error { return learnerBuckets(tx, "x") }); err != nil {
		t.Fatal(err)
	}
	budget := account.Budget{Epsilon: 1}
	var leds []*ledger.Ledger
	for i := range 4 {
		b := budget
		if i > 0 {
			b = account.Budget{} // the stored one
		}
		l, err := stores[i%2].openLedger("x", b)
		if err != nil {
			t.Fatal(err)
		}
		leds = append(leds, l)
	}
	var mu sync.Mutex
	passed := 0
	var wg sync.WaitGroup
	for _, l := range leds {
		wg.Go(func() {
			for {
				_, err := l.Record(ledger.Charge{Groups: []string{"g"}, Loss: account.Pure("laplace", 0.03)})
				if errors.Is(err, account.ErrBudgetExceeded) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				passed++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if passed != 33 {
		t.Errorf("%d charges of ε 0.03 passed a budget of 1, want 33", passed)
	}
	l, err := stores[1].openLedger("x", account.Budget{})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := l.Spent("g"); got > 1 {
		t.Errorf("stored spend %v exceeds the budget", got)
	}
	n := 0
	if err := stores[0].ledgerStore("x").Scan(func(e ledger.Entry) error {
		n++
		if e.Seq != uint64(n) {
			return fmt.Errorf("entry %d at position %d", e.Seq, n)
		}
		return nil
	}); err != nil || n != passed {
		t.Errorf("log of %d entries for %d charges passed: %v", n, passed, err)
	}
}

// TestPostgresWriteOnly: runWrites commits its puts and deletes in one
// implicit transaction (readOne sees them), fails a read with
// errWriteOnly, and a refused deferred check undoes every write of its
// batch.
func TestPostgresWriteOnly(t *testing.T) {
	st, err := OpenStore(pgtest.Start(t))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	p := st.db.(*pgKV)
	if err := p.Update(func(tx kvTx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("w"))
		if err == nil {
			err = b.Put([]byte("gone"), []byte("x"))
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	refused := errors.New("refused")
	for _, tc := range []struct {
		name    string
		fn      func(kvTx) error
		want    error
		present map[string]bool
	}{
		{"writes", func(tx kvTx) error {
			b := tx.Bucket([]byte("w"))
			if err := b.Put([]byte("k"), []byte("v")); err != nil {
				return err
			}
			return b.Delete([]byte("gone"))
		}, nil, map[string]bool{"k": true, "gone": false}},
		{"read", func(tx kvTx) error {
			tx.Bucket([]byte("w")).Get([]byte("k"))
			return nil
		}, errWriteOnly, map[string]bool{"k": true}},
		{"refused check", func(tx kvTx) error {
			tx.(*pgTx).deferCheck(pgCheck{sql: `SELECT 1 / 0`, refused: refused})
			return tx.Bucket([]byte("w")).Put([]byte("late"), []byte("v"))
		}, refused, map[string]bool{"late": false}},
		{"passed check", func(tx kvTx) error {
			tx.(*pgTx).deferCheck(pgCheck{sql: `SELECT 1 / 1`, refused: refused})
			return tx.Bucket([]byte("w")).Put([]byte("ok"), []byte("v"))
		}, nil, map[string]bool{"ok": true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := p.runWrites(tc.fn); !errors.Is(err, tc.want) {
				t.Fatalf("runWrites: %v, want %v", err, tc.want)
			}
			for k, want := range tc.present {
				v, err := readOne(p, []byte("w"), []byte(k))
				if err != nil || (v != nil) != want {
					t.Errorf("key %s: %q %v, want present %v", k, v, err, want)
				}
			}
		})
	}
}

// TestPGUnavailable: an unreachable or restarting PostgreSQL is a 503
// the client retries (with Retry-After), a statement's own error is not.
func TestPGUnavailable(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"admin shutdown", &pgconn.PgError{Code: "57P01"}, true},
		{"not yet accepting connections", fmt.Errorf("postgres store: %w", &pgconn.PgError{Code: "57P03"}), true},
		{"connection failure", &pgconn.PgError{Code: "08006"}, true},
		{"unique violation", &pgconn.PgError{Code: "23505"}, false},
		{"connection reset", &net.OpError{Op: "read", Err: syscall.ECONNRESET}, true},
		{"unexpected EOF", fmt.Errorf("postgres store: %w", io.ErrUnexpectedEOF), true},
		{"conn closed", pgconn.ErrConnClosed, true},
		{"no such request", errNoRequest, false},
		{"other", errors.New("boom"), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := pgUnavailable(c.err); got != c.want {
				t.Errorf("pgUnavailable(%v) = %v, want %v", c.err, got, c.want)
			}
			want := statusOf(c.err)
			if c.want {
				want = http.StatusServiceUnavailable
			}
			if got := statusOf(storeErr(c.err)); got != want {
				t.Errorf("status of storeErr(%v) = %d, want %d", c.err, got, want)
			}
		})
	}
}
