// Package pgstore keeps dpal's privacy ledgers in PostgreSQL (through
// github.com/jackc/pgx/v5), so that several processes — runs on several
// machines, service replicas — can charge one ledger with no double
// spend. It is a subpackage so that dp/ledger's core links no database
// driver: a program that imports it can open `postgres://…` wherever it
// opens a ledger file (ledger.OpenRun, ledger.Load).
//
// A Store implements ledger.SyncStore: every charge is one transaction
// that locks the ledger's row (SELECT … FOR UPDATE), reads the entries
// other processes committed since this process last looked, lets the
// Ledger fold them into its totals and check the budget, and inserts the
// new entry only if the Ledger accepts it. Whatever the interleaving, the
// composed loss of the entries naming a group never exceeds the budget,
// and an entry reported as committed is in the log exactly once.
//
// The schema (component "ledger" of table schema_version, applied on
// open, one migration per version): table ledgers holds one row per named
// ledger with its settings (ledger.Meta's JSON); table ledger_entries
// holds each entry's JSON (ledger.Entry, as the bbolt store keeps it)
// under (ledger, seq). A database written by a newer schema is refused
// (ErrNewerSchema). Several ledgers share one database by name.
package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/dpal-dev/dpal/dp/ledger"
)

func init() {
	open := func(u string, readOnly bool) (ledger.Store, error) { return OpenURL(u, readOnly) }
	ledger.RegisterStore("postgres", open)
	ledger.RegisterStore("postgresql", open)
}

// NameParam is the URL query parameter that names the ledger within the
// database (postgres://…/DB?ledger=NAME); DefaultName is used without it.
const (
	NameParam   = "ledger"
	DefaultName = "default"
)

// opTimeout bounds one operation, waiting for the ledger's row lock
// included: other processes' charges hold it for one short transaction
// each.
const opTimeout = time.Minute

// Store is one named ledger in a PostgreSQL database. It is safe for
// concurrent use, and other processes may use the same ledger at the
// same time.
type Store struct {
	pool     *pgxpool.Pool
	name     string
	readOnly bool
}

// OpenURL opens the ledger a postgres:// (or postgresql://) URL names:
// the database is the URL's, the ledger the value of its NameParam
// parameter (DefaultName without one), which is removed before the URL
// is given to pgx; every other parameter (sslmode, search_path, …) is
// pgx's. A read-only store never migrates the schema nor writes.
func OpenURL(rawURL string, readOnly bool) (*Store, error) {
	dsn, name, err := SplitURL(rawURL)
	if err != nil {
		return nil, err
	}
	if readOnly {
		return OpenReadOnly(dsn, name)
	}
	return Open(dsn, name)
}

// SplitURL splits a postgres:// URL into the DSN pgx takes and the
// ledger's name (its NameParam parameter, else DefaultName).
func SplitURL(rawURL string) (dsn, name string, err error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", "", errors.New("not a valid postgres:// URL") // url's error would print the password
	}
	if u.Scheme != "postgres" && u.Scheme != "postgresql" {
		return "", "", fmt.Errorf("scheme %s: want postgres://", u.Scheme)
	}
	q := u.Query()
	name = DefaultName
	if q.Has(NameParam) {
		name = q.Get(NameParam)
		q.Del(NameParam)
		u.RawQuery = q.Encode()
	}
	return u.String(), name, nil
}

// Open opens the ledger called name in the database dsn (any connection
// string pgx takes) for reading and writing, first applying the schema
// migrations this dpal knows and the database lacks.
func Open(dsn, name string) (*Store, error) { return open(dsn, name, false) }

// OpenReadOnly opens the ledger called name in the database dsn for
// reading only: it never changes the schema nor writes, and refuses a
// database without dpal's current schema.
func OpenReadOnly(dsn, name string) (*Store, error) { return open(dsn, name, true) }

func open(dsn, name string, readOnly bool) (*Store, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	pool, err := ledgerSchema.Connect(ctx, dsn, readOnly)
	if err != nil {
		return nil, err
	}
	return &Store{pool: pool, name: name, readOnly: readOnly}, nil
}

// checkName accepts a ledger name: non-empty, at most 256 bytes, no
// control characters.
func checkName(name string) error {
	if name == "" || len(name) > 256 || strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return fmt.Errorf("invalid ledger name %q: want 1 to 256 bytes, no control characters", name)
	}
	return nil
}

// Name is the ledger's name within its database.
func (s *Store) Name() string { return s.name }

// errReadOnly is the error of a write to a read-only store.
var errReadOnly = errors.New("the ledger is open for reading only")

// Meta implements ledger.Store.
func (s *Store) Meta() (ledger.Meta, bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	var raw []byte
	err := s.pool.QueryRow(ctx, `SELECT meta FROM ledgers WHERE name = $1`, s.name).Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return ledger.Meta{}, false, nil
	}
	if err != nil {
		return ledger.Meta{}, false, s.errorf("reading settings: %w", err)
	}
	var m ledger.Meta
	if err := ledger.DecodeMeta(raw, &m); err != nil {
		return ledger.Meta{}, false, s.errorf("%w", err)
	}
	return m, true, nil
}

// Init implements ledger.Store. Settings that another process stored
// first are kept, and Init fails wrapping ledger.ErrInitialised.
func (s *Store) Init(m ledger.Meta) error {
	if s.readOnly {
		return s.errorf("%w", errReadOnly)
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	tag, err := s.pool.Exec(ctx, `INSERT INTO ledgers (name, meta) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING`, s.name, raw)
	if err != nil {
		return s.errorf("storing settings: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return s.errorf("%w", ledger.ErrInitialised)
	}
	return nil
}

// Append implements ledger.Store: it locks the ledger and refuses an
// entry whose sequence number does not follow the last committed one.
// A Ledger uses Sync instead.
func (s *Store) Append(e ledger.Entry) error {
	if e.Seq == 0 {
		return s.errorf("entry has sequence number 0")
	}
	err := s.Sync(e.Seq-1, func(got ledger.Entry) error {
		return fmt.Errorf("it does not follow the last stored entry: entry %d is stored", got.Seq)
	}, func() (ledger.Entry, bool, error) { return e, true, nil })
	if err != nil {
		return fmt.Errorf("entry %d not appended: %w", e.Seq, err)
	}
	return nil
}

// Sync implements ledger.SyncStore: one READ COMMITTED transaction that
// first locks the ledger's row, so that every statement after the lock
// sees every entry another Sync committed before it, and no other Sync on
// this ledger commits until this one ends.
func (s *Store) Sync(seq uint64, fold func(ledger.Entry) error, decide func() (ledger.Entry, bool, error)) error {
	if s.readOnly {
		return s.syncReadOnly(seq, fold, decide)
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
		var one int
		err := tx.QueryRow(ctx, `SELECT 1 FROM ledgers WHERE name = $1 FOR UPDATE`, s.name).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return s.errorf("not initialised")
		}
		if err != nil {
			return s.errorf("locking: %w", err)
		}
		last, err := s.scan(ctx, tx, seq, fold)
		if err != nil {
			return err
		}
		e, ok, err := decide()
		if err != nil || !ok {
			return err
		}
		if e.Seq != last+1 {
			return s.errorf("entry %d does not follow the last stored entry %d", e.Seq, last)
		}
		raw, err := json.Marshal(e)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO ledger_entries (ledger, seq, entry) VALUES ($1, $2, $3)`, s.name, int64(e.Seq), raw); err != nil {
			return s.errorf("entry %d: %w", e.Seq, err)
		}
		return nil
	})
}

// syncReadOnly is Sync on a read-only store: it folds in what is
// committed, without a lock, and refuses to append.
func (s *Store) syncReadOnly(seq uint64, fold func(ledger.Entry) error, decide func() (ledger.Entry, bool, error)) error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if _, err := s.scan(ctx, s.pool, seq, fold); err != nil {
		return err
	}
	_, ok, err := decide()
	if err == nil && ok {
		err = s.errorf("%w", errReadOnly)
	}
	return err
}

// Scan implements ledger.Store.
func (s *Store) Scan(fn func(ledger.Entry) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	_, err := s.scan(ctx, s.pool, 0, fn)
	return err
}

// querier is what scan reads through: the pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// scan calls fn with every entry after entry seq, in order, and returns
// the last sequence number seen (seq if none). Entry seq itself must be
// stored: a log shorter than the caller saw (a database restored from an
// older backup) is an error, not a place to append. It refuses an entry
// stored under another sequence number, and a gap.
func (s *Store) scan(ctx context.Context, q querier, seq uint64, fn func(ledger.Entry) error) (uint64, error) {
	rows, err := q.Query(ctx, `SELECT seq, entry FROM ledger_entries WHERE ledger = $1 AND seq >= $2 ORDER BY seq`, s.name, int64(seq))
	if err != nil {
		return seq, s.errorf("reading entries: %w", err)
	}
	defer rows.Close()
	last, found := seq, seq == 0
	for rows.Next() {
		var k int64
		var raw []byte
		if err := rows.Scan(&k, &raw); err != nil {
			return last, s.errorf("reading entries: %w", err)
		}
		if !found { // the entry the caller saw last
			if found = uint64(k) == seq; !found {
				break
			}
			continue
		}
		var e ledger.Entry
		if err := ledger.DecodeEntry(raw, &e); err != nil {
			return last, s.errorf("row %d: %w", k, err)
		}
		if e.Seq != uint64(k) || e.Seq != last+1 {
			return last, s.errorf("entry %d stored as row %d after entry %d: the log has a gap or a misplaced entry", e.Seq, k, last)
		}
		if err := fn(e); err != nil {
			return last, err
		}
		last = e.Seq
	}
	if err := rows.Err(); err != nil {
		return last, s.errorf("reading entries: %w", err)
	}
	if !found {
		return last, s.errorf("entry %d is not stored: the log is shorter than this process has seen (was the database restored from an older backup?)", seq)
	}
	return last, nil
}

// Close implements ledger.Store.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// errorf is an error naming the ledger.
func (s *Store) errorf(format string, args ...any) error {
	return fmt.Errorf("postgres ledger %q: "+format, append([]any{s.name}, args...)...)
}
