package ledger

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// The durable store is a bbolt file (go.etcd.io/bbolt: a single-file,
// copy-on-write B+tree with fsync'd, crash-atomic transactions and an
// exclusive file lock). Bucket "meta" holds the settings under "ledger";
// bucket "entries" maps each sequence number, 8 bytes big-endian, to the
// entry's JSON.
var (
	bucketMeta    = []byte("meta")
	bucketEntries = []byte("entries")
	keyMeta       = []byte("ledger")
)

// lockTimeout is how long Open waits for another process's lock.
const lockTimeout = 2 * time.Second

// ErrLocked is returned (wrapped) by OpenFile when another process has the
// ledger open.
var ErrLocked = errors.New("ledger file is in use by another process")

// FileStore is a durable Store in one file. Every Append is its own
// transaction, synced to disk before Append returns, so an entry that
// Append reported is never lost and a crash never leaves a torn entry.
type FileStore struct {
	db   *bolt.DB
	path string
}

// OpenFile opens the durable store at path, creating it (mode 0600) if it
// does not exist. Only one process may hold it open; another gets an error
// wrapping ErrLocked.
func OpenFile(path string) (*FileStore, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: lockTimeout})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("ledger %s: %w", path, ErrLocked)
	}
	if err != nil {
		return nil, fmt.Errorf("ledger %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		if _, err := tx.CreateBucketIfNotExists(bucketMeta); err != nil {
			return err
		}
		_, err := tx.CreateBucketIfNotExists(bucketEntries)
		return err
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("ledger %s: %w", path, err)
	}
	return &FileStore{db: db, path: path}, nil
}

// Path is the store's file.
func (s *FileStore) Path() string { return s.path }

// Meta implements Store.
func (s *FileStore) Meta() (Meta, bool, error) {
	var m Meta
	var ok bool
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketMeta).Get(keyMeta)
		if b == nil {
			return nil
		}
		ok = true
		return DecodeMeta(b, &m)
	})
	if err != nil {
		return Meta{}, false, fmt.Errorf("%s: %w", s.path, err)
	}
	return m, ok, nil
}

// Init implements Store.
func (s *FileStore) Init(m Meta) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		mb := tx.Bucket(bucketMeta)
		if mb.Get(keyMeta) != nil {
			return fmt.Errorf("%s: store already initialised", s.path)
		}
		return mb.Put(keyMeta, b)
	})
}

// Append implements Store: one fsync'd transaction per entry. It refuses
// an entry whose sequence number is not the next one.
func (s *FileStore) Append(e Entry) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		eb := tx.Bucket(bucketEntries)
		if k, _ := eb.Cursor().Last(); seqOf(k) != e.Seq-1 {
			return fmt.Errorf("%s: entry %d does not follow the last stored entry %d", s.path, e.Seq, seqOf(k))
		}
		return eb.Put(seqKey(e.Seq), b)
	})
}

// Scan implements Store.
func (s *FileStore) Scan(fn func(Entry) error) error {
	return s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketEntries).ForEach(func(k, v []byte) error {
			var e Entry
			if err := DecodeEntry(v, &e); err != nil {
				return fmt.Errorf("%s: key %x: %w", s.path, k, err)
			}
			if e.Seq != seqOf(k) {
				return fmt.Errorf("%s: entry %d stored under key %d", s.path, e.Seq, seqOf(k))
			}
			return fn(e)
		})
	})
}

// Close implements Store.
func (s *FileStore) Close() error { return s.db.Close() }

func seqKey(seq uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], seq)
	return k[:]
}

// seqOf decodes a key (0 for none or a malformed key).
func seqOf(k []byte) uint64 {
	if len(k) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(k)
}

// maxEntryBytes bounds one stored entry (1 MiB): far above any real
// entry, it keeps a corrupt or hostile file from making the decoder
// allocate without limit.
const maxEntryBytes = 1 << 20

// DecodeEntry decodes and validates one stored entry.
func DecodeEntry(b []byte, e *Entry) error { return decode("entry", b, e) }

// DecodeMeta decodes and validates stored settings.
func DecodeMeta(b []byte, m *Meta) error { return decode("settings", b, m) }

// decode bounds, decodes and validates one stored value.
func decode[T interface{ Validate() error }](what string, b []byte, v T) error {
	if len(b) > maxEntryBytes {
		return fmt.Errorf("%s of %d bytes exceeds %d", what, len(b), maxEntryBytes)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return v.Validate()
}
