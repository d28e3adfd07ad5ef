package ledger

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/dpal-dev/dpal/dp/account"
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

// OpenFile opens the durable store at path for a run, creating it (mode
// 0600) if it does not exist. Only one process may hold it open; another
// gets an error wrapping ErrLocked. Opening writes to an existing file
// only to add the buckets a crash kept a new store from getting: a ledger
// is written by its Init and Appends, never by being opened.
func OpenFile(path string) (*FileStore, error) { return openFile(path, false) }

// OpenFileReadOnly opens the durable store at path for reading only: it
// never creates, initialises or writes the file, and refuses a missing or
// empty one. It takes a shared lock, which other readers may hold at the
// same time; a run that has the file open must finish first (the open
// waits for it, then fails wrapping ErrLocked). Init and Append fail.
func OpenFileReadOnly(path string) (*FileStore, error) { return openFile(path, true) }

func openFile(path string, readOnly bool) (*FileStore, error) {
	if err := checkFile(path, readOnly); err != nil {
		return nil, fmt.Errorf("ledger %s: %w", path, err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: lockTimeout, ReadOnly: readOnly})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("ledger %s: %w", path, ErrLocked)
	}
	if err != nil {
		return nil, fmt.Errorf("ledger %s: %w", path, err)
	}
	s := &FileStore{db: db, path: path}
	if !readOnly {
		if err := s.addBuckets(); err != nil {
			db.Close()
			return nil, fmt.Errorf("ledger %s: %w", path, err)
		}
	}
	return s, nil
}

// addBuckets creates the store's buckets where they are missing, in a
// write transaction only when one is.
func (s *FileStore) addBuckets() error {
	whole := false
	if err := s.db.View(func(tx *bolt.Tx) error {
		whole = tx.Bucket(bucketMeta) != nil && tx.Bucket(bucketEntries) != nil
		return nil
	}); err != nil || whole {
		return err
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		if _, err := tx.CreateBucketIfNotExists(bucketMeta); err != nil {
			return err
		}
		_, err := tx.CreateBucketIfNotExists(bucketEntries)
		return err
	})
}

// Load opens the ledger kept in the file at path for reading only
// (OpenFileReadOnly): what `dpal ledger show` prints. The file is read
// and never written; one that holds no ledger's settings is an error. Its
// errors name the file.
//
// A path of the form scheme://… (IsURL) names a store of the package
// registered for scheme (RegisterStore), opened read-only: `dpal ledger
// show --store postgres://…`.
func Load(path string) (*Ledger, error) {
	st, err := openStore(path, true)
	if err != nil {
		return nil, err
	}
	_, ok, err := st.Meta()
	if err == nil && !ok {
		err = errors.New("holds no ledger: a run created the file and stopped before it stored the ledger's settings")
		if IsURL(path) {
			err = errors.New("holds no ledger of that name")
		}
	}
	var l *Ledger
	if err == nil {
		l, err = Open(st, account.Budget{})
	}
	if err != nil {
		st.Close()
		return nil, namePath(Redact(path), err)
	}
	return l, nil
}

// openStore opens the store at path: by URL (openURL), else the file.
func openStore(path string, readOnly bool) (Store, error) {
	if st, ok, err := openURL(path, readOnly); ok {
		return st, err
	}
	if readOnly {
		return OpenFileReadOnly(path)
	}
	return OpenFile(path)
}

// RunBudget is what a run asks of a durable ledger's budget. A ledger's
// budget is set once, when it is created, and is the same for every run
// and every command that charges it; a run's own ε is what it spends, not
// a budget.
type RunBudget struct {
	// New is the budget of a ledger the run creates: the one the user
	// gave, else the run's default.
	New account.Budget
	// SetEpsilon and SetDelta say that the user gave New's ε or δ. On an
	// existing ledger a given one lowers that part of the budget for this
	// run (the stored budget stays); one above the stored is refused.
	SetEpsilon, SetDelta bool
}

// OpenRun opens the durable ledger at path for a run (OpenFile, then
// Open): a new file, or one a crash left before its settings were
// stored, gets rb.New and opts; an existing ledger keeps the budget and
// conversion it was created with, lowered where rb sets a lower value.
// It writes nothing to an existing ledger. Its errors name the file.
//
// A path of the form scheme://… (IsURL) names a store of the package
// registered for scheme (RegisterStore) instead of a file: `--ledger
// postgres://…` once dp/ledger/pgstore is linked in. Its errors name the
// URL without its password.
func OpenRun(path string, rb RunBudget, opts ...Option) (*Ledger, error) {
	st, err := openStore(path, false)
	if err != nil {
		return nil, err
	}
	meta, stored, err := st.Meta()
	b := rb.New
	if err == nil && stored {
		b, err = runBudget(meta.Budget, rb)
	}
	var l *Ledger
	if err == nil {
		l, err = Open(st, b, opts...)
	}
	if err != nil {
		st.Close()
		return nil, namePath(Redact(path), err)
	}
	return l, nil
}

// runBudget is the budget in force for a run on a ledger whose stored
// budget is stored: the stored one, lowered where rb sets a lower value.
func runBudget(stored account.Budget, rb RunBudget) (account.Budget, error) {
	b := stored
	for _, p := range []struct {
		set       bool
		give, has float64
		dst       *float64
		name      string
	}{{rb.SetEpsilon, rb.New.Epsilon, stored.Epsilon, &b.Epsilon, "ε"}, {rb.SetDelta, rb.New.Delta, stored.Delta, &b.Delta, "δ"}} {
		if !p.set {
			continue
		}
		if p.give > p.has {
			return b, fmt.Errorf("the budget %s = %g asked for is above the ledger's own %s = %g: a ledger's budget is set when it is created and cannot be raised; leave it out to use the ledger's, or start a new ledger",
				p.name, p.give, p.name, p.has)
		}
		*p.dst = p.give
	}
	return b, nil
}

// namePath makes err name the file at path, unless it does already.
func namePath(path string, err error) error {
	if strings.Contains(err.Error(), path) {
		return err
	}
	return fmt.Errorf("ledger %s: %w", path, err)
}

// Path is the store's file.
func (s *FileStore) Path() string { return s.path }

// Meta implements Store.
func (s *FileStore) Meta() (Meta, bool, error) {
	var m Meta
	var ok bool
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		if b := tx.Bucket(bucketMeta); b != nil { // a read-only store a run never gave its buckets
			m, ok, err = ReadMeta(b)
		}
		return err
	})
	if err != nil {
		return Meta{}, false, fmt.Errorf("%s: %w", s.path, err)
	}
	return m, ok, nil
}

// Init implements Store.
func (s *FileStore) Init(m Meta) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		if err := InitMeta(tx.Bucket(bucketMeta), m); err != nil {
			return fmt.Errorf("%s: %w", s.path, err)
		}
		return nil
	})
}

// Append implements Store: one fsync'd transaction per entry. It refuses
// an entry whose sequence number is not the next one.
func (s *FileStore) Append(e Entry) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketEntries)
		last, _ := b.Cursor().Last()
		if err := AppendEntry(b, KeyUint64(last), e); err != nil {
			return fmt.Errorf("%s: %w", s.path, err)
		}
		return nil
	})
}

// Scan implements Store.
func (s *FileStore) Scan(fn func(Entry) error) error {
	return s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketEntries)
		if b == nil {
			return nil // a read-only store a run never gave its buckets
		}
		return b.ForEach(func(k, v []byte) error {
			e, err := StoredEntry(k, v)
			if err != nil {
				return fmt.Errorf("%s: %w", s.path, err)
			}
			return fn(e)
		})
	})
}

// Close implements Store.
func (s *FileStore) Close() error { return s.db.Close() }

// The helpers below are FileStore's layout inside a given bucket, for a
// store that keeps ledgers in a bbolt file of its own (the service keeps
// one per learner): a meta bucket holding the settings under one key, and
// an entries bucket mapping each sequence number (8 bytes big-endian) to
// the entry's JSON.

// LayoutBucket is what the layout helpers need of a bucket: a
// *bolt.Bucket, or a bucket of another store with bbolt's shape (the
// service's PostgreSQL store).
type LayoutBucket interface {
	Get(key []byte) []byte
	Put(key, value []byte) error
}

// MetaKey is the key of the settings in a meta bucket.
func MetaKey() []byte { return slices.Clone(keyMeta) }

// ReadMeta reads the settings stored in the meta bucket b; false when
// there are none.
func ReadMeta(b LayoutBucket) (Meta, bool, error) {
	raw := b.Get(keyMeta)
	if raw == nil {
		return Meta{}, false, nil
	}
	var m Meta
	if err := DecodeMeta(raw, &m); err != nil {
		return Meta{}, false, err
	}
	return m, true, nil
}

// InitMeta stores m in the meta bucket b, refusing a bucket that already
// holds settings.
func InitMeta(b LayoutBucket, m Meta) error {
	if b.Get(keyMeta) != nil {
		return ErrInitialised
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return b.Put(keyMeta, raw)
}

// AppendEntry stores e in the entries bucket b, whose last stored entry
// is last (0 for none), refusing an entry that does not follow it.
func AppendEntry(b LayoutBucket, last uint64, e Entry) error {
	if last != e.Seq-1 {
		return fmt.Errorf("entry %d does not follow the last stored entry %d", e.Seq, last)
	}
	raw, err := json.Marshal(e)
	if err != nil {
		return err
	}
	return b.Put(Uint64Key(e.Seq), raw)
}

// StoredEntry decodes and validates the entry v stored under key k of an
// entries bucket, refusing one stored under another sequence number.
func StoredEntry(k, v []byte) (Entry, error) {
	var e Entry
	if err := DecodeEntry(v, &e); err != nil {
		return Entry{}, fmt.Errorf("key %x: %w", k, err)
	}
	if e.Seq != KeyUint64(k) {
		return Entry{}, fmt.Errorf("entry %d stored under key %d", e.Seq, KeyUint64(k))
	}
	return e, nil
}

// Uint64Key encodes v as an 8-byte big-endian bbolt key, so that keys sort
// (and cursors walk) in numeric order: the ledger stores each entry under
// its sequence number, and package service its ids and offsets the same
// way. KeyUint64 decodes it.
func Uint64Key(v uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], v)
	return k[:]
}

// KeyUint64 decodes a key written by Uint64Key (0 for none or a malformed
// key).
func KeyUint64(k []byte) uint64 {
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
