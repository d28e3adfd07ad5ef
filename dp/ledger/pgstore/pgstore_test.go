package pgstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/ledger/pgstore"
	"github.com/dpal-dev/dpal/dp/ledger/pgstore/pgtest"
)

// TestMain runs the tests on one throw-away cluster (a new database per
// test) and stops it at the end.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// withLedger is the URL of the ledger called name in the database dsn.
func withLedger(dsn, name string) string {
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + pgstore.NameParam + "=" + name
}

// query runs one query on dsn and scans its single row into dst.
func query(t *testing.T, dsn, sql string, dst ...any) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if len(dst) == 0 {
		_, err = conn.Exec(ctx, sql)
	} else {
		err = conn.QueryRow(ctx, sql).Scan(dst...)
	}
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

var budget = account.Budget{Epsilon: 1, Delta: 1e-5}

// TestRoundTrip writes charges through ledger.OpenRun by URL, reopens the
// ledger and reads back the same settings, entries and totals; each
// entry is stored as the JSON the bbolt store keeps.
func TestRoundTrip(t *testing.T) {
	u := withLedger(pgtest.Start(t), "rt")
	l, err := ledger.OpenRun(u, ledger.RunBudget{New: budget})
	if err != nil {
		t.Fatal(err)
	}
	charges := []ledger.Charge{
		{Groups: []string{"a"}, Loss: account.Pure("laplace", 0.25), Note: "first"},
		{Groups: []string{"a", "b"}, Loss: account.Approx("gaussian", 0.25, 1e-6)},
		{Groups: []string{"b"}, Loss: account.Pure("select", 0.1), Once: "sel"},
		{Groups: []string{"b"}, Loss: account.Pure("select", 0.1), Once: "sel"}, // a no-op
	}
	for _, c := range charges {
		if _, err := l.Record(c); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.Record(ledger.Charge{Groups: []string{"a"}, Loss: account.Pure("laplace", 0.6)}); !errors.Is(err, account.ErrBudgetExceeded) {
		t.Fatalf("over the budget: %v, want ErrBudgetExceeded", err)
	}
	want, err := l.Entries()
	if err != nil {
		t.Fatal(err)
	}
	wantSum := l.Summary()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if len(want) != 3 {
		t.Fatalf("%d entries, want 3", len(want))
	}

	r, err := ledger.Load(u)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got, err := r.Entries()
	if err != nil {
		t.Fatal(err)
	}
	if a, b := mustJSON(t, got), mustJSON(t, want); a != b {
		t.Errorf("entries read back:\n%s\nwant\n%s", a, b)
	}
	if a, b := mustJSON(t, r.Summary()), mustJSON(t, wantSum); a != b {
		t.Errorf("summary read back %s, want %s", a, b)
	}
	if r.Meta().Budget != budget {
		t.Errorf("budget %+v, want %+v", r.Meta().Budget, budget)
	}
	var raw string
	query(t, pgURL(u), `SELECT entry::text FROM ledger_entries WHERE ledger = 'rt' AND seq = 1`, &raw)
	if b := mustJSON(t, want[0]); raw != b {
		t.Errorf("stored entry %s, want the bbolt store's %s", raw, b)
	}
	if _, err := r.Record(charges[0]); err == nil || !strings.Contains(err.Error(), "reading only") {
		t.Errorf("a charge through a read-only ledger: %v", err)
	}
}

// pgURL is the DSN of a ledger URL.
func pgURL(u string) string {
	dsn, _, _ := pgstore.SplitURL(u)
	return dsn
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestMigrations: Open creates the schema once and records its version;
// concurrent openers of a fresh database all succeed; a database at a
// newer version is refused, for writing and for reading.
func TestMigrations(t *testing.T) {
	dsn := pgtest.Start(t)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			st, err := pgstore.Open(dsn, "m")
			if err == nil {
				st.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("concurrent open: %v", err)
		}
	}
	var v int
	query(t, dsn, `SELECT version FROM schema_version WHERE component = 'ledger'`, &v)
	if v != pgstore.SchemaVersion {
		t.Fatalf("schema version %d, want %d", v, pgstore.SchemaVersion)
	}

	query(t, dsn, `UPDATE schema_version SET version = version + 1 WHERE component = 'ledger'`)
	for name, open := range map[string]func(string, string) (*pgstore.Store, error){"Open": pgstore.Open, "OpenReadOnly": pgstore.OpenReadOnly} {
		st, err := open(dsn, "m")
		if err == nil {
			st.Close()
		}
		if !errors.Is(err, pgstore.ErrNewerSchema) || !strings.Contains(err.Error(), "newer") {
			t.Errorf("%s of a newer schema: %v, want ErrNewerSchema", name, err)
		}
	}
}

// TestReadOnly: reading never creates the schema nor a ledger, and names
// what is missing.
func TestReadOnly(t *testing.T) {
	dsn := pgtest.Start(t)
	if _, err := ledger.Load(withLedger(dsn, "x")); err == nil || !strings.Contains(err.Error(), "no dpal ledgers") {
		t.Fatalf("Load of an empty database: %v", err)
	}
	var n int
	query(t, dsn, `SELECT count(*) FROM pg_tables WHERE tablename = 'schema_version'`, &n)
	if n != 0 {
		t.Fatal("Load created the schema")
	}
	l, err := ledger.OpenRun(withLedger(dsn, "x"), ledger.RunBudget{New: budget})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	if _, err := ledger.Load(withLedger(dsn, "y")); err == nil || !strings.Contains(err.Error(), "holds no ledger of that name") {
		t.Fatalf("Load of a missing ledger: %v", err)
	}
}

// TestNamedLedgers: ledgers in one database are independent, each with
// its own settings and log.
func TestNamedLedgers(t *testing.T) {
	dsn := pgtest.Start(t)
	a, err := ledger.OpenRun(withLedger(dsn, "a"), ledger.RunBudget{New: account.Budget{Epsilon: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := ledger.OpenRun(dsn, ledger.RunBudget{New: account.Budget{Epsilon: 2}}) // DefaultName
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for range 3 {
		if _, err := b.Record(ledger.Charge{Groups: []string{"g"}, Loss: account.Pure("laplace", 0.5)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.Record(ledger.Charge{Groups: []string{"g"}, Loss: account.Pure("laplace", 1)}); err != nil {
		t.Fatalf("ledger a charged by b's charges: %v", err)
	}
	if a.Len() != 1 || b.Len() != 3 || a.Meta().Budget.Epsilon != 1 || b.Meta().Budget.Epsilon != 2 {
		t.Errorf("a: %d entries, ε budget %g; b: %d entries, ε budget %g", a.Len(), a.Meta().Budget.Epsilon, b.Len(), b.Meta().Budget.Epsilon)
	}
}

// TestShared: two Ledgers on one ledger (as two processes would have)
// see each other's charges: a charge folds in the other's first, Refresh
// brings the totals up to date, and the one that does not fit is refused.
// Concurrent creators of one new ledger all get the same settings.
func TestShared(t *testing.T) {
	u := withLedger(pgtest.Start(t), "s")
	ls := make([]*ledger.Ledger, 4)
	var wg sync.WaitGroup
	errs := make([]error, len(ls))
	for i := range ls {
		wg.Go(func() { ls[i], errs[i] = ledger.OpenRun(u, ledger.RunBudget{New: budget}) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("creator %d: %v", i, err)
		}
		defer ls[i].Close()
	}
	a, b := ls[0], ls[1]
	if a.Meta() != b.Meta() {
		t.Fatalf("creators disagree on the settings: %+v, %+v", a.Meta(), b.Meta())
	}
	charge := ledger.Charge{Groups: []string{"g"}, Loss: account.Pure("laplace", 0.4)}
	for _, l := range []*ledger.Ledger{a, b} {
		if _, err := l.Record(charge); err != nil {
			t.Fatal(err)
		}
	}
	if eps, _ := a.Spent("g"); eps != 0.4 {
		t.Errorf("a before Refresh: ε = %g, want its own 0.4", eps)
	}
	if err := a.Refresh(); err != nil {
		t.Fatal(err)
	}
	if eps, _ := a.Spent("g"); eps != 0.8 || a.Len() != 2 {
		t.Errorf("a after Refresh: ε = %g over %d entries, want 0.8 over 2", eps, a.Len())
	}
	if _, err := ls[2].Record(charge); !errors.Is(err, account.ErrBudgetExceeded) {
		t.Errorf("a third charge of 0.4 on a budget of 1: %v, want ErrBudgetExceeded", err)
	}
}

// TestSecretsStayOut: an error of a URL with a password does not print it.
func TestSecretsStayOut(t *testing.T) {
	dsn := pgtest.Start(t)
	u := strings.Replace(withLedger(dsn, "p"), "postgres@", "nobody:s3cret@", 1)
	_, err := ledger.OpenRun(u, ledger.RunBudget{New: budget})
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("OpenRun with a wrong user: %v", err)
	}
	_, err = ledger.OpenRun("postgres://u:s3cret@h/%zz", ledger.RunBudget{New: budget})
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("OpenRun of an invalid URL: %v", err)
	}
}

// TestStoreDirect: the Store interface without a Ledger: Init once, then
// Append refuses an entry that does not follow the last one, and Scan
// reads back what Append stored.
func TestStoreDirect(t *testing.T) {
	dsn := pgtest.Start(t)
	st, err := pgstore.Open(dsn, "d")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e := ledger.Entry{Seq: 1, Groups: []string{"g"}, Loss: account.Pure("laplace", 1)}
	if err := st.Append(e); err == nil {
		t.Fatal("Append before Init succeeded")
	}
	meta := ledger.Meta{Version: ledger.Version, Budget: budget, Conversion: account.Balle2020}
	if err := st.Init(meta); err != nil {
		t.Fatal(err)
	}
	if err := st.Init(meta); !errors.Is(err, ledger.ErrInitialised) {
		t.Fatalf("second Init: %v, want ErrInitialised", err)
	}
	if err := st.Append(e); err != nil {
		t.Fatal(err)
	}
	for _, seq := range []uint64{1, 3} {
		e.Seq = seq
		if err := st.Append(e); err == nil || !strings.Contains(err.Error(), "not appended") {
			t.Errorf("Append of entry %d after entry 1: %v", seq, err)
		}
	}
	var got []uint64
	if err := st.Scan(func(e ledger.Entry) error { got = append(got, e.Seq); return nil }); err != nil || len(got) != 1 || got[0] != 1 {
		t.Errorf("Scan: %v, %v; want entry 1 alone", got, err)
	}
	// A log shorter than a process saw (restored from an older backup)
	// is an error, not a place to append.
	l, err := ledger.Open(st, account.Budget{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Record(ledger.Charge{Groups: []string{"h"}, Loss: account.Pure("laplace", 0.1)}); err != nil {
		t.Fatal(err)
	}
	query(t, dsn, `DELETE FROM ledger_entries WHERE ledger = 'd' AND seq = 2`)
	if _, err := l.Record(ledger.Charge{Groups: []string{"h"}, Loss: account.Pure("laplace", 0.1)}); err == nil || !strings.Contains(err.Error(), "entry 2 is not stored") {
		t.Errorf("a charge on a log shorter than the Ledger saw: %v", err)
	}
}
