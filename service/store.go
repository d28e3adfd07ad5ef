package service

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/dpal-dev/dpal/dp/ledger"
)

// Store is the service's one durable file, a bbolt database (single-file
// copy-on-write B+tree, fsync'd crash-atomic transactions, an exclusive
// file lock). Top-level buckets:
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
// The file holds private data (records awaiting labels, model state):
// it is created with mode 0600 and must be kept like the stream itself.
type Store struct {
	db   *bolt.DB
	path string
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

// OpenStore opens (creating, mode 0600) the store at path.
func OpenStore(path string) (*Store, error) {
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
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketTokens, bucketLearners, bucketState, bucketRecords, bucketKafka} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("store %s: %w", path, err)
	}
	return &Store{db: db, path: path}, nil
}

// Path is the store's file.
func (s *Store) Path() string { return s.path }

// Close closes the file.
func (s *Store) Close() error { return s.db.Close() }

// learnerBuckets creates the per-learner buckets of name.
func learnerBuckets(tx *bolt.Tx, name string) error {
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
func dropLearnerBuckets(tx *bolt.Tx, name string) error {
	for _, sub := range []string{subRequests, subOpen, subReleases, subIdem, subLedgerMeta, subLedgerLog} {
		err := tx.DeleteBucket([]byte(name + sub))
		if err != nil && !errors.Is(err, berrors.ErrBucketNotFound) {
			return err
		}
	}
	return nil
}

func bucket(tx *bolt.Tx, name, sub string) *bolt.Bucket { return tx.Bucket([]byte(name + sub)) }

func putJSON(b *bolt.Bucket, k []byte, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return b.Put(k, raw)
}

// getJSON decodes the value at k into v; false when k is absent.
func getJSON(b *bolt.Bucket, k []byte, v any) (bool, error) {
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
// close the shared file.
type ledgerStore struct {
	db   *bolt.DB
	name string
}

// Meta implements ledger.Store.
func (s *ledgerStore) Meta() (ledger.Meta, bool, error) {
	var m ledger.Meta
	var ok bool
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		m, ok, err = ledger.ReadMeta(bucket(tx, s.name, subLedgerMeta))
		return err
	})
	return m, ok, err
}

// Init implements ledger.Store.
func (s *ledgerStore) Init(m ledger.Meta) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		return s.wrap(ledger.InitMeta(bucket(tx, s.name, subLedgerMeta), m))
	})
}

// Append implements ledger.Store: one fsync'd transaction, refusing an
// entry that does not follow the last one.
func (s *ledgerStore) Append(e ledger.Entry) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		return s.wrap(ledger.AppendEntry(bucket(tx, s.name, subLedgerLog), e))
	})
}

// Scan implements ledger.Store.
func (s *ledgerStore) Scan(fn func(ledger.Entry) error) error {
	return s.db.View(func(tx *bolt.Tx) error {
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
