package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Schema is one component's versioned tables in a database that several
// parts of dpal share (the ledgers', the service's): its row in table
// schema_version holds the number of Migrations applied. Migrations[i]
// takes version i to i+1; a released migration is never edited, a change
// is a new one.
type Schema struct {
	Component  string   // its row in schema_version, e.g. "ledger"
	What       string   // what its tables hold, for errors: "ledgers"
	Migrations []string // SQL, one element per version
}

// Version is the schema version this dpal writes.
func (s Schema) Version() int { return len(s.Migrations) }

// ledgerSchema is this package's tables.
var ledgerSchema = Schema{Component: "ledger", What: "ledgers", Migrations: []string{
	// 1: one row per named ledger (its settings, ledger.Meta's JSON); its
	// entries (ledger.Entry's JSON, as the bbolt store keeps them) by
	// (ledger, seq). The ledger's row is what a charge locks.
	`CREATE TABLE ledgers (
		name    text PRIMARY KEY,
		meta    json NOT NULL,
		created timestamptz NOT NULL DEFAULT now()
	);
	CREATE TABLE ledger_entries (
		ledger    text   NOT NULL REFERENCES ledgers (name),
		seq       bigint NOT NULL CHECK (seq > 0),
		entry     json   NOT NULL,
		committed timestamptz NOT NULL DEFAULT now(),
		PRIMARY KEY (ledger, seq)
	);`,
}}

// SchemaVersion is the ledger schema version this dpal writes.
var SchemaVersion = ledgerSchema.Version()

// ErrNewerSchema is returned (wrapped) when the database's schema was
// written by a newer dpal: this one refuses it rather than misread it.
var ErrNewerSchema = errors.New("the database's schema is newer than this dpal's")

// migrateLock is the advisory lock key that serialises migrations of one
// database by concurrent openers, whatever the component ("dpal" in
// ASCII, then "ledg").
const migrateLock int64 = 0x6470616c_6c656467

// Connect opens a connection pool on dsn (any connection string pgx
// takes) and applies s (Apply), closing the pool on an error.
func (s Schema) Connect(ctx context.Context, dsn string, readOnly bool) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if err := s.Apply(ctx, pool, readOnly); err != nil {
		pool.Close()
		return nil, err
	}
	return pool, nil
}

// Apply brings the database's schema of s's component to s.Version() in
// one transaction, or, for a read-only opener, checks that it is there.
// A database written by a newer schema is refused (ErrNewerSchema).
func (s Schema) Apply(ctx context.Context, pool *pgxpool.Pool, readOnly bool) error {
	v, err := s.version(ctx, pool)
	switch {
	case err != nil:
		return err
	case v > s.Version():
		return s.newer(v)
	case v == s.Version():
		return nil
	case readOnly && v == 0:
		return fmt.Errorf("postgres: the database holds no dpal %s (no %s schema)", s.What, s.Component)
	case readOnly:
		return fmt.Errorf("postgres: the database's %s schema is version %d, this dpal reads %d: open it once for writing to migrate it", s.Component, v, s.Version())
	}
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrateLock); err != nil {
			return fmt.Errorf("postgres: locking the schema: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_version (
			component text PRIMARY KEY,
			version   integer NOT NULL,
			updated   timestamptz NOT NULL DEFAULT now()
		)`); err != nil {
			return fmt.Errorf("postgres: creating schema_version: %w", err)
		}
		v, err := s.version(ctx, tx) // another opener may have migrated meanwhile
		if err != nil {
			return err
		}
		if v > s.Version() {
			return s.newer(v)
		}
		for i := v; i < s.Version(); i++ {
			if _, err := tx.Exec(ctx, s.Migrations[i]); err != nil {
				return fmt.Errorf("postgres: %s schema migration %d: %w", s.Component, i+1, err)
			}
		}
		_, err = tx.Exec(ctx, `INSERT INTO schema_version (component, version) VALUES ($1, $2)
			ON CONFLICT (component) DO UPDATE SET version = EXCLUDED.version, updated = now()`, s.Component, s.Version())
		return err
	})
}

func (s Schema) newer(v int) error {
	return fmt.Errorf("postgres: %w: the %s schema is version %d, this dpal knows %d; use the dpal that wrote it, or a newer one",
		ErrNewerSchema, s.Component, v, s.Version())
}

// queryRower is a pool or a transaction.
type queryRower interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// version is the component's schema version in the database, 0 when it
// has none.
func (s Schema) version(ctx context.Context, q queryRower) (int, error) {
	var v int
	err := q.QueryRow(ctx, `SELECT version FROM schema_version WHERE component = $1`, s.Component).Scan(&v)
	var pe *pgconn.PgError
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, nil
	case errors.As(err, &pe) && pe.Code == "42P01": // undefined_table: a database dpal never wrote
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("postgres: reading the schema version: %w", err)
	}
	return v, nil
}
