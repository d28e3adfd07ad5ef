package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/ledger/pgstore"
)

// serviceSchema is the service's tables in PostgreSQL, versioned as
// component "service" of schema_version (dp/ledger/pgstore's migration
// code): a row per bucket, and every bucket's keys and values in one
// table whose primary key orders them as bbolt does (bytea compares
// bytewise).
var serviceSchema = pgstore.Schema{Component: "service", What: "service store", Migrations: []string{
	// 1: buckets and their keys.
	`CREATE TABLE service_buckets (
		name    bytea PRIMARY KEY,
		created timestamptz NOT NULL DEFAULT now()
	);
	CREATE TABLE service_kv (
		bucket bytea NOT NULL,
		key    bytea NOT NULL,
		value  bytea NOT NULL,
		PRIMARY KEY (bucket, key)
	);`,
	// 2: one lease per learner owned by a replica (replica.go): the
	// owner's id and advertised URL, the fencing token (one above the
	// last at every change of owner), the expiry (the database's clock).
	`CREATE TABLE service_leases (
		learner text PRIMARY KEY,
		owner   text NOT NULL,
		address text NOT NULL,
		token   bigint NOT NULL,
		expires timestamptz NOT NULL
	);`,
}}

// pgOpTimeout bounds one transaction, waiting for locks included.
const pgOpTimeout = time.Minute

// pgPage is how many rows a cursor reads at a time.
const pgPage = 512

// pgKV is a kvDB in a PostgreSQL database that several replicas share.
// Update is one READ COMMITTED transaction whose writes are buffered and
// sent at commit, one statement per bucket; View is one REPEATABLE READ,
// read-only transaction (one snapshot, as a bbolt View). Transactions
// that must exclude each other across replicas lock a row (lockRow) or
// check a fencing token in the same transaction.
type pgKV struct {
	pool *pgxpool.Pool
	// known holds buckets this process saw exist: buckets are created
	// once and dropped only while a learner's creation is undone.
	known sync.Map
}

// openPG opens the service's store in the database dsn, applying the
// schema migrations it lacks.
func openPG(dsn string) (*pgKV, error) {
	ctx, cancel := context.WithTimeout(context.Background(), pgOpTimeout)
	defer cancel()
	pool, err := serviceSchema.Connect(ctx, dsn, false)
	if err != nil {
		return nil, err
	}
	return &pgKV{pool: pool}, nil
}

func (p *pgKV) Update(fn func(kvTx) error) error { return p.run(true, fn) }

func (p *pgKV) View(fn func(kvTx) error) error { return p.run(false, fn) }

// get is readOne's single statement: READ COMMITTED, it sees every
// transaction committed before it began.
func (p *pgKV) get(bucket, key []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), pgOpTimeout)
	defer cancel()
	var v []byte
	err := p.pool.QueryRow(ctx, `SELECT value FROM service_kv WHERE bucket = $1 AND key = $2`, bucket, key).Scan(&v)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, storeErr(fmt.Errorf("postgres store: %w", err))
	case v == nil:
		return []byte{}, nil // stored empty: present
	}
	return v, nil
}

func (p *pgKV) Close() error {
	p.pool.Close()
	return nil
}

func (p *pgKV) run(write bool, fn func(kvTx) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), pgOpTimeout)
	defer cancel()
	opts := pgx.TxOptions{IsoLevel: pgx.ReadCommitted}
	if !write {
		opts = pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}
	}
	tx, err := p.begin(ctx, opts)
	if err != nil {
		return storeErr(err)
	}
	t := &pgTx{ctx: ctx, tx: tx, kv: p, write: write, exists: map[string]bool{}}
	err = fn(t)
	// A failed query made a Get or cursor answer nil: its error, not
	// what fn made of the nil, is the cause.
	if t.err != nil {
		err = t.err
	}
	if err == nil {
		err = t.flush()
	}
	if err == nil {
		err = tx.Commit(ctx)
	}
	if err != nil {
		_ = tx.Rollback(ctx) // a no-op after a failed commit
		return storeErr(err)
	}
	for _, b := range t.created {
		p.known.Store(string(b), true)
	}
	return nil
}

// begin begins a transaction, trying again on another connection while
// the one it got turns out dead (PostgreSQL restarted, and the pool
// still held connections to the old server; each failure discards one).
// Nothing of the caller's has run yet, so trying again is safe.
func (p *pgKV) begin(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error) {
	for try := 0; ; try++ {
		tx, err := p.pool.BeginTx(ctx, opts)
		if err == nil || !pgUnavailable(err) || try == pgBeginTries-1 {
			return tx, err
		}
		time.Sleep(time.Duration(try*try) * 10 * time.Millisecond)
	}
}

// pgBeginTries bounds begin's attempts: more than the connections a pool
// of a small machine holds, few enough to answer within a second when
// PostgreSQL is down.
const pgBeginTries = 8

// pgUnavailable reports whether err says PostgreSQL could not be reached
// or dropped the connection (a restart, a failover, the network), as
// opposed to a statement's own error.
func pgUnavailable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		// Class 08: connection exception; 57P01-57P03: the server is
		// shutting down, crashed, or not yet accepting connections.
		return strings.HasPrefix(pe.Code, "08") || pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03"
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	return errors.As(err, &ce) || errors.As(err, &ne) || pgconn.SafeToRetry(err) ||
		errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED)
}

// storeErr makes err, if PostgreSQL was unreachable, an answer of 503
// with Retry-After (errStoreUnavailable) that still carries the cause
// for the log: the client retries, with its idempotency key, once the
// database is back; a write whose fate is unknown is then answered from
// the store. Other errors pass unchanged.
func storeErr(err error) error {
	if err == nil || !pgUnavailable(err) {
		return err
	}
	return &unavailableError{cause: err}
}

// unavailableError is a store error of an unreachable database.
type unavailableError struct{ cause error }

func (e *unavailableError) Error() string   { return "postgres store unavailable: " + e.cause.Error() }
func (e *unavailableError) Unwrap() []error { return []error{e.cause, errStoreUnavailable} }

// runWrites is Update for an fn that only writes (Put, Delete, and
// Bucket of buckets that exist): no transaction is begun; the writes and
// the deferred checks go in one batch that PostgreSQL runs as one
// implicit transaction, committed (durably, as any commit) when the
// batch ends or undone entirely by any statement's error. One round trip
// instead of three (BEGIN, the writes, COMMIT). A read in fn fails the
// transaction (errWriteOnly).
func (p *pgKV) runWrites(fn func(kvTx) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), pgOpTimeout)
	defer cancel()
	t := &pgTx{ctx: ctx, kv: p, write: true, exists: map[string]bool{}}
	err := fn(t)
	if t.err != nil {
		return t.err
	}
	if err != nil {
		return err
	}
	return storeErr(t.flush())
}

var errWriteOnly = errors.New("store: a query in a write-only transaction")

// inTx reports whether t is a transaction that can query (not one of
// runWrites), failing t otherwise.
func (t *pgTx) inTx() bool {
	if t.tx == nil {
		t.fail(errWriteOnly)
		return false
	}
	return true
}

// pgTx is one transaction. Its writes wait in pending until a query
// needs them (a cursor, a count) or the commit.
type pgTx struct {
	ctx     context.Context
	tx      pgx.Tx // nil in runWrites: the writes' batch is the transaction
	kv      *pgKV
	write   bool
	err     error                        // the first failed query's
	pending map[string]map[string][]byte // bucket → key → value; nil deletes
	exists  map[string]bool              // buckets this transaction looked up
	created [][]byte                     // buckets it created
	checks  []pgCheck                    // sent with the writes, before them
}

// pgCheck is a statement that a transaction sends just before its
// writes, in the same round trip: it fails with division_by_zero when
// the check does not hold, and the transaction is then undone and fails
// with refused. It costs no round trip of its own, and works in
// runWrites' implicit transaction, whose commit no answer can stop.
type pgCheck struct {
	sql     string
	args    []any
	refused error
}

// sqlDivisionByZero is the SQLSTATE of a refused pgCheck.
const sqlDivisionByZero = "22012"

// deferCheck queues c before the writes.
func (t *pgTx) deferCheck(c pgCheck) { t.checks = append(t.checks, c) }

var errReadOnlyTx = errors.New("store: write in a read-only transaction")

// fail records the first error.
func (t *pgTx) fail(err error) {
	if t.err == nil && err != nil {
		t.err = fmt.Errorf("postgres store: %w", err)
	}
}

func (t *pgTx) Bucket(name []byte) kvBucket {
	if t.bucketExists(name) {
		return &pgBucket{t: t, name: slices.Clone(name)}
	}
	return nil
}

func (t *pgTx) bucketExists(name []byte) bool {
	if ok, seen := t.exists[string(name)]; seen {
		return ok
	}
	if _, ok := t.kv.known.Load(string(name)); ok {
		return true
	}
	// Outside runWrites' batch: buckets are created once (and dropped
	// only while a learner's creation is undone), so a committed read
	// answers as one in the transaction would.
	var q interface {
		QueryRow(context.Context, string, ...any) pgx.Row
	} = t.kv.pool
	if t.tx != nil {
		q = t.tx
	}
	var one int
	err := q.QueryRow(t.ctx, `SELECT 1 FROM service_buckets WHERE name = $1`, name).Scan(&one)
	ok := err == nil
	if !errors.Is(err, pgx.ErrNoRows) {
		t.fail(err)
	}
	t.exists[string(name)] = ok
	if ok {
		t.kv.known.Store(string(name), true)
	}
	return ok
}

func (t *pgTx) CreateBucketIfNotExists(name []byte) (kvBucket, error) {
	if !t.write {
		return nil, errReadOnlyTx
	}
	if !t.bucketExists(name) {
		if !t.inTx() {
			return nil, t.err
		}
		if _, err := t.tx.Exec(t.ctx, `INSERT INTO service_buckets (name) VALUES ($1) ON CONFLICT (name) DO NOTHING`, name); err != nil {
			t.fail(err)
			return nil, t.err
		}
		t.exists[string(name)] = true
		t.created = append(t.created, slices.Clone(name))
	}
	return &pgBucket{t: t, name: slices.Clone(name)}, nil
}

func (t *pgTx) DeleteBucket(name []byte) error {
	if !t.write {
		return errReadOnlyTx
	}
	if !t.inTx() {
		return t.err
	}
	t.kv.known.Delete(string(name))
	delete(t.pending, string(name))
	tag, err := t.tx.Exec(t.ctx, `DELETE FROM service_buckets WHERE name = $1`, name)
	if err != nil {
		t.fail(err)
		return t.err
	}
	t.exists[string(name)] = false
	if _, err := t.tx.Exec(t.ctx, `DELETE FROM service_kv WHERE bucket = $1`, name); err != nil {
		t.fail(err)
		return t.err
	}
	if tag.RowsAffected() == 0 {
		return errBucketNotFound
	}
	return nil
}

// lockRow locks the row of key in bucket until the transaction ends
// (SELECT … FOR UPDATE): every statement after it sees what the previous
// holder committed (READ COMMITTED), as dp/ledger/pgstore locks a
// ledger's row. A missing row is an error.
func (t *pgTx) lockRow(bucket, key []byte) error {
	if !t.inTx() {
		return t.err
	}
	var one int
	err := t.tx.QueryRow(t.ctx, `SELECT 1 FROM service_kv WHERE bucket = $1 AND key = $2 FOR UPDATE`, bucket, key).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("store: no row %q in bucket %q to lock", key, bucket)
	}
	if err != nil {
		t.fail(err)
		return t.err
	}
	return nil
}

// lock takes the transaction-scoped advisory lock called name (in the
// service's key space: "service/" + name).
func (t *pgTx) lock(name string) error {
	if !t.inTx() {
		return t.err
	}
	if _, err := t.tx.Exec(t.ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, "service/"+name); err != nil {
		t.fail(err)
		return t.err
	}
	return nil
}

// flush sends the deferred checks and then the pending writes, all in
// one round trip (a pgx.Batch): per bucket (in order, so that two
// transactions lock rows in one order), one upsert and one delete. A
// failed check becomes the transaction's error as it is.
func (t *pgTx) flush() error {
	if t.err != nil || len(t.pending) == 0 && len(t.checks) == 0 {
		return t.err
	}
	b := &pgx.Batch{}
	for _, c := range t.checks {
		b.Queue(c.sql, c.args...)
	}
	names := make([]string, 0, len(t.pending))
	for name := range t.pending {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		putK, putV, del := t.pendingOf(name)
		if len(putK) > 0 {
			b.Queue(`INSERT INTO service_kv (bucket, key, value)
				SELECT $1, k, v FROM unnest($2::bytea[], $3::bytea[]) AS u(k, v)
				ON CONFLICT (bucket, key) DO UPDATE SET value = EXCLUDED.value`, []byte(name), putK, putV)
		}
		if len(del) > 0 {
			b.Queue(`DELETE FROM service_kv WHERE bucket = $1 AND key = ANY($2::bytea[])`, []byte(name), del)
		}
	}
	checks := t.checks
	t.pending, t.checks = nil, nil
	var br pgx.BatchResults
	if t.tx != nil {
		br = t.tx.SendBatch(t.ctx, b)
	} else {
		br = t.kv.pool.SendBatch(t.ctx, b) // an implicit transaction
	}
	for i := range b.Len() {
		if _, err := br.Exec(); err != nil {
			var pe *pgconn.PgError
			if i < len(checks) && errors.As(err, &pe) && pe.Code == sqlDivisionByZero {
				err = checks[i].refused
			} else {
				err = fmt.Errorf("postgres store: %w", err)
			}
			if t.err == nil {
				t.err = err
			}
			break
		}
	}
	// Close reads up to the batch's end: for runWrites, the commit.
	t.fail(br.Close())
	return t.err
}

// pendingOf splits the pending writes of bucket name, in key order, into
// the keys and values put and the keys deleted.
func (t *pgTx) pendingOf(name string) (putK, putV, del [][]byte) {
	m := t.pending[name]
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if v := m[k]; v != nil {
			putK, putV = append(putK, []byte(k)), append(putV, v)
		} else {
			del = append(del, []byte(k))
		}
	}
	return putK, putV, del
}

// pgBucket is one bucket of a pgTx.
type pgBucket struct {
	t    *pgTx
	name []byte
}

func (b *pgBucket) Get(key []byte) []byte {
	if m, ok := b.t.pending[string(b.name)]; ok {
		if v, ok := m[string(key)]; ok {
			return v
		}
	}
	if !b.t.inTx() {
		return nil
	}
	var v []byte
	err := b.t.tx.QueryRow(b.t.ctx, `SELECT value FROM service_kv WHERE bucket = $1 AND key = $2`, b.name, key).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	b.t.fail(err)
	if v == nil && err == nil {
		v = []byte{} // stored empty: present
	}
	return v
}

func (b *pgBucket) Put(key, value []byte) error {
	if !b.t.write {
		return errReadOnlyTx
	}
	if len(key) == 0 {
		return errors.New("store: empty key")
	}
	b.set(key, append([]byte{}, value...)) // never nil: nil marks a delete
	return nil
}

func (b *pgBucket) Delete(key []byte) error {
	if !b.t.write {
		return errReadOnlyTx
	}
	b.set(key, nil)
	return nil
}

func (b *pgBucket) set(key, value []byte) {
	if b.t.pending == nil {
		b.t.pending = map[string]map[string][]byte{}
	}
	m := b.t.pending[string(b.name)]
	if m == nil {
		m = map[string][]byte{}
		b.t.pending[string(b.name)] = m
	}
	m[string(key)] = value
}

func (b *pgBucket) ForEach(fn func(k, v []byte) error) error {
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if err := fn(k, v); err != nil {
			return err
		}
	}
	return b.t.err
}

func (b *pgBucket) KeyN() int {
	if !b.t.inTx() || b.t.flush() != nil {
		return 0
	}
	var n int
	b.t.fail(b.t.tx.QueryRow(b.t.ctx, `SELECT count(*) FROM service_kv WHERE bucket = $1`, b.name).Scan(&n))
	return n
}

func (b *pgBucket) Cursor() kvCursor { return &pgCursor{b: b} }

// pgCursor reads a page of rows at a time, so that the caller may query
// other buckets between its steps (one connection runs one query at a
// time).
type pgCursor struct {
	b    *pgBucket
	page []kvPair
	i    int
	more bool // rows may follow the page
}

type kvPair struct{ k, v []byte }

func (c *pgCursor) cur() ([]byte, []byte) {
	if c.i < len(c.page) {
		return c.page[c.i].k, c.page[c.i].v
	}
	return nil, nil
}

// load reads up to n rows of the query into the page.
func (c *pgCursor) load(sql string, args ...any) ([]byte, []byte) {
	c.page, c.i, c.more = nil, 0, false
	if !c.b.t.inTx() || c.b.t.flush() != nil {
		return nil, nil
	}
	rows, err := c.b.t.tx.Query(c.b.t.ctx, sql, append([]any{c.b.name}, args...)...)
	if err != nil {
		c.b.t.fail(err)
		return nil, nil
	}
	for rows.Next() {
		var p kvPair
		if err := rows.Scan(&p.k, &p.v); err != nil {
			c.b.t.fail(err)
			break
		}
		c.page = append(c.page, p)
	}
	rows.Close()
	c.b.t.fail(rows.Err())
	if c.b.t.err != nil {
		c.page = nil
	}
	return c.cur()
}

func (c *pgCursor) First() ([]byte, []byte) { return c.Seek(nil) }

func (c *pgCursor) Seek(key []byte) ([]byte, []byte) {
	k, v := c.load(`SELECT key, value FROM service_kv WHERE bucket = $1 AND key >= $2 ORDER BY key LIMIT $3`, nonNil(key), pgPage)
	c.more = len(c.page) == pgPage
	return k, v
}

func (c *pgCursor) Last() ([]byte, []byte) {
	k, v := c.load(`SELECT key, value FROM service_kv WHERE bucket = $1 ORDER BY key DESC LIMIT 1`)
	c.more = k != nil
	return k, v
}

func (c *pgCursor) Next() ([]byte, []byte) {
	if c.i >= len(c.page) {
		return nil, nil
	}
	if c.i++; c.i < len(c.page) || !c.more {
		return c.cur()
	}
	after := c.page[len(c.page)-1].k
	k, v := c.load(`SELECT key, value FROM service_kv WHERE bucket = $1 AND key > $2 ORDER BY key LIMIT $3`, after, pgPage)
	c.more = len(c.page) == pgPage
	return k, v
}

func (c *pgCursor) Prev() ([]byte, []byte) {
	if c.i >= len(c.page) {
		return nil, nil
	}
	if c.i > 0 {
		c.i--
		return c.cur()
	}
	before := c.page[0].k
	k, v := c.load(`SELECT key, value FROM service_kv WHERE bucket = $1 AND key < $2 ORDER BY key DESC LIMIT 1`, before)
	c.more = k != nil
	return k, v
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// pgSyncLedger is a learner's ledger in a shared store: a
// ledger.SyncStore, so that a charge's budget check and its append are
// one transaction that holds the row lock of the ledger's settings, and
// two replicas can never both pass a budget that only one charge fits.
type pgSyncLedger struct{ ledgerStore }

// Sync implements ledger.SyncStore.
func (s *pgSyncLedger) Sync(seq uint64, fold func(ledger.Entry) error, decide func() (ledger.Entry, bool, error)) error {
	return s.update(func(tx kvTx) error {
		t, ok := tx.(*pgTx)
		if !ok {
			return errors.New("store: the ledger's store cannot lock a row")
		}
		if err := t.lockRow([]byte(s.name+subLedgerMeta), ledger.MetaKey()); err != nil {
			return s.wrap(err)
		}
		b := bucket(tx, s.name, subLedgerLog)
		c := b.Cursor()
		k, v := c.Seek(ledger.Uint64Key(seq))
		if seq > 0 {
			if ledger.KeyUint64(k) != seq {
				return s.wrap(fmt.Errorf("entry %d is not stored: the log is shorter than this process has seen (was the database restored from an older backup?)", seq))
			}
			k, v = c.Next()
		}
		last := seq
		for ; k != nil; k, v = c.Next() {
			e, err := ledger.StoredEntry(k, v)
			if err != nil {
				return s.wrap(err)
			}
			if e.Seq != last+1 {
				return s.wrap(fmt.Errorf("entry %d follows entry %d: the log has a gap", e.Seq, last))
			}
			if err := fold(e); err != nil {
				return err
			}
			last = e.Seq
		}
		if t.err != nil {
			return t.err
		}
		e, ok, err := decide()
		if err != nil || !ok {
			return err
		}
		return s.wrap(ledger.AppendEntry(b, last, e))
	})
}
