package service

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/dpal-dev/dpal/dp/ledger"
)

// Store is the service's one durable store: a bbolt file (single-file
// copy-on-write B+tree, fsync'd crash-atomic transactions, an exclusive
// file lock: one process), or a PostgreSQL database (postgres://… URL)
// that several replicas share, holding the same buckets (kvpg.go).
// Top-level buckets:
//
//	tokens                 SHA-256 of a token (hex) → tokenRecord
//	learners               name → learnerMeta
//	state                  name → the learner's last checkpoint (SaveState)
//	records                client record id → recordRef
//	kafka                  learner/topic/partition → next offset (8 bytes)
//	<name>/requests        event id (8 bytes) → requestRecord
//	<name>/open            event id of an open request → its time (Unix ns, 8 bytes)
//	<name>/releases        update number (8 bytes) → releaseRecord
//	<name>/idempotency     Idempotency-Key → the stored ingest answer
//	<name>/ledger/meta     "ledger" → ledger.Meta      (dp/ledger's layout)
//	<name>/ledger/entries  sequence (8 bytes) → ledger.Entry
//
// The store holds private data (records awaiting labels, model state):
// a file is created with mode 0600; a file or a database must be kept
// like the stream itself.
type Store struct {
	db     kvDB
	path   string // the file, or the URL without its password
	shared bool   // other processes may use the store at the same time
}

var (
	bucketTokens   = []byte("tokens")
	bucketLearners = []byte("learners")
	bucketState    = []byte("state")
	bucketRecords  = []byte("records")
	bucketKafka    = []byte("kafka")
)

// Per-learner bucket suffixes.
const (
	subRequests   = "/requests"
	subReleases   = "/releases"
	subIdem       = "/idempotency"
	subOpen       = "/open"
	subLedgerMeta = "/ledger/meta"
	subLedgerLog  = "/ledger/entries"
)

// ErrLocked is returned (wrapped) by OpenStore when another process holds
// the store.
var ErrLocked = errors.New("store is in use by another process")

// OpenStore opens (creating, mode 0600) the store at path, or the
// PostgreSQL database a postgres:// (or postgresql://) URL names,
// applying the schema migrations it lacks and refusing a database written
// by a newer dpal.
func OpenStore(path string) (*Store, error) {
	if ledger.IsURL(path) {
		return openSharedStore(path)
	}
	// Checked before bbolt maps it: a cut or damaged store is one error,
	// not a SIGBUS.
	if err := ledger.CheckBoltFile(path); err != nil {
		if errors.Is(err, ledger.ErrLocked) {
			return nil, fmt.Errorf("store %s: %w", path, ErrLocked)
		}
		return nil, fmt.Errorf("store %s: %w", path, err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 2 * time.Second})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("store %s: %w", path, ErrLocked)
	}
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", path, err)
	}
	st := &Store{db: boltKV{db}, path: path}
	if err := st.init(); err != nil {
		db.Close()
		return nil, err
	}
	return st, nil
}

// openSharedStore opens the PostgreSQL store rawURL names.
func openSharedStore(rawURL string) (*Store, error) {
	shown := ledger.Redact(rawURL)
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return nil, fmt.Errorf("store %s: want a postgres:// URL or a file", shown)
	}
	kv, err := openPG(rawURL)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", shown, err)
	}
	st := &Store{db: kv, path: shown, shared: true}
	if err := st.init(); err != nil {
		kv.Close()
		return nil, err
	}
	return st, nil
}

// init creates the top-level buckets.
func (s *Store) init() error {
	err := s.db.Update(func(tx kvTx) error {
		for _, b := range [][]byte{bucketTokens, bucketLearners, bucketState, bucketRecords, bucketKafka} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store %s: %w", s.path, err)
	}
	return nil
}

// Path is the store's file, or its URL without the password.
func (s *Store) Path() string { return s.path }

// Shared reports whether other processes may use the store at the same
// time (a PostgreSQL store).
func (s *Store) Shared() bool { return s.shared }

// Close closes the file.
func (s *Store) Close() error { return s.db.Close() }

// learnerBuckets creates the per-learner buckets of name.
func learnerBuckets(tx kvTx, name string) error {
	for _, sub := range []string{subRequests, subOpen, subReleases, subIdem, subLedgerMeta, subLedgerLog} {
		if _, err := tx.CreateBucketIfNotExists([]byte(name + sub)); err != nil {
			return err
		}
	}
	return nil
}

// dropLearnerBuckets removes the buckets of a learner whose creation never
// committed (its ledger, if any, holds no charge: a learner spends only
// after its creation is committed).
func dropLearnerBuckets(tx kvTx, name string) error {
	for _, sub := range []string{subRequests, subOpen, subReleases, subIdem, subLedgerMeta, subLedgerLog} {
		err := tx.DeleteBucket([]byte(name + sub))
		if err != nil && !errors.Is(err, errBucketNotFound) {
			return err
		}
	}
	return nil
}

func bucket(tx kvTx, name, sub string) kvBucket { return tx.Bucket([]byte(name + sub)) }

func putJSON(b kvBucket, k []byte, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return b.Put(k, raw)
}

// getJSON decodes the value at k into v; false when k is absent.
func getJSON(b kvBucket, k []byte, v any) (bool, error) {
	raw := b.Get(k)
	if raw == nil {
		return false, nil
	}
	return true, json.Unmarshal(raw, v)
}

// ledgerStore is a learner's ledger.Store inside the service's file: the
// same meta and entry layout as ledger.FileStore, under the learner's
// buckets. Every Append is its own fsync'd transaction, so a charge is
// on disk before the learner draws the noise it pays for. Close does not
// close the shared file. In a shared store, a learner's ledger is a
// pgSyncLedger.
type ledgerStore struct {
	kv   kvDB
	name string
	// fence, if set, is checked in every transaction that writes the
	// ledger (a project's lease, replica.go): a stale owner's charge is
	// refused before it could pay for a release.
	fence func(kvTx) error
}

// ledgerStore is the ledger.Store of learner name.
func (s *Store) ledgerStore(name string) ledger.Store { return s.fencedLedgerStore(name, nil) }

// fencedLedgerStore is the ledger.Store named name whose writes check
// fence (nil: none).
func (s *Store) fencedLedgerStore(name string, fence func(kvTx) error) ledger.Store {
	ls := ledgerStore{kv: s.db, name: name, fence: fence}
	if s.shared {
		return &pgSyncLedger{ls}
	}
	return &ls
}

// Meta implements ledger.Store.
func (s *ledgerStore) Meta() (ledger.Meta, bool, error) {
	var m ledger.Meta
	var ok bool
	err := s.kv.View(func(tx kvTx) error {
		var err error
		m, ok, err = ledger.ReadMeta(bucket(tx, s.name, subLedgerMeta))
		return err
	})
	return m, ok, err
}

// Init implements ledger.Store.
func (s *ledgerStore) Init(m ledger.Meta) error {
	return s.update(func(tx kvTx) error {
		return s.wrap(ledger.InitMeta(bucket(tx, s.name, subLedgerMeta), m))
	})
}

// Append implements ledger.Store: one fsync'd transaction, refusing an
// entry that does not follow the last one.
func (s *ledgerStore) Append(e ledger.Entry) error {
	return s.update(func(tx kvTx) error {
		b := bucket(tx, s.name, subLedgerLog)
		last, _ := b.Cursor().Last()
		return s.wrap(ledger.AppendEntry(b, ledger.KeyUint64(last), e))
	})
}

// update runs fn in a write transaction, after the fence if any.
func (s *ledgerStore) update(fn func(kvTx) error) error {
	return s.kv.Update(withFence(s.fence, fn))
}

// withFence is fn after the lease's fence, if any (replica.go): the
// check every transaction that changes what a lease covers makes.
func withFence(fence, fn func(kvTx) error) func(kvTx) error {
	if fence == nil {
		return fn
	}
	return func(tx kvTx) error {
		if err := fence(tx); err != nil {
			return err
		}
		return fn(tx)
	}
}

// Scan implements ledger.Store.
func (s *ledgerStore) Scan(fn func(ledger.Entry) error) error {
	return s.kv.View(func(tx kvTx) error {
		return bucket(tx, s.name, subLedgerLog).ForEach(func(k, v []byte) error {
			e, err := ledger.StoredEntry(k, v)
			if err != nil {
				return s.wrap(err)
			}
			return fn(e)
		})
	})
}

// wrap names the learner in an error of its ledger's layout (nil stays nil).
func (s *ledgerStore) wrap(err error) error {
	if err != nil {
		return fmt.Errorf("learner %s: ledger: %w", s.name, err)
	}
	return nil
}

// Close implements ledger.Store; the file stays open.
func (s *ledgerStore) Close() error { return nil }
