package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// component is this package's row in schema_version: other parts of dpal
// that keep tables in the same database version theirs under their own
// component name.
const component = "ledger"

// migrations are the schema's versions: migrations[i] takes version i to
// i+1. A released migration is never edited; a change is a new one.
var migrations = []string{
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
}

// SchemaVersion is the schema version this dpal writes.
var SchemaVersion = len(migrations)

// ErrNewerSchema is returned (wrapped) when the database's schema was
// written by a newer dpal: this one refuses it rather than misread it.
var ErrNewerSchema = errors.New("the database's ledger schema is newer than this dpal's")

// migrateLock is the advisory lock key that serialises migrations of one
// database by concurrent openers ("dpal" in ASCII, then "ledg").
const migrateLock int64 = 0x6470616c_6c656467

// migrate brings the database's schema to SchemaVersion in one
// transaction, or for a read-only store checks that it is there.
func migrate(ctx context.Context, pool *pgxpool.Pool, readOnly bool) error {
	v, err := version(ctx, pool)
	switch {
	case err != nil:
		return err
	case v > SchemaVersion:
		return newer(v)
	case v == SchemaVersion:
		return nil
	case readOnly && v == 0:
		return errors.New("postgres: the database holds no dpal ledgers (no ledger schema)")
	case readOnly:
		return fmt.Errorf("postgres: the database's ledger schema is version %d, this dpal reads %d: open it once for a run to migrate it", v, SchemaVersion)
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
		v, err := version(ctx, tx) // another opener may have migrated meanwhile
		if err != nil {
			return err
		}
		if v > SchemaVersion {
			return newer(v)
		}
		for i := v; i < SchemaVersion; i++ {
			if _, err := tx.Exec(ctx, migrations[i]); err != nil {
				return fmt.Errorf("postgres: ledger schema migration %d: %w", i+1, err)
			}
		}
		_, err = tx.Exec(ctx, `INSERT INTO schema_version (component, version) VALUES ($1, $2)
			ON CONFLICT (component) DO UPDATE SET version = EXCLUDED.version, updated = now()`, component, SchemaVersion)
		return err
	})
}

func newer(v int) error {
	return fmt.Errorf("postgres: %w: version %d, this dpal knows %d; use the dpal that wrote it, or a newer one",
		ErrNewerSchema, v, SchemaVersion)
}

// queryRower is a pool or a transaction.
type queryRower interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// version is the ledger schema's version in the database, 0 when it has
// none.
func version(ctx context.Context, q queryRower) (int, error) {
	var v int
	err := q.QueryRow(ctx, `SELECT version FROM schema_version WHERE component = $1`, component).Scan(&v)
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
