package service

import (
	"errors"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// The service keeps everything in a transactional store of named buckets
// of ordered byte keys, the shape of bbolt's API so that the bbolt file
// stays exactly as it was: kvDB is either a bbolt file (boltKV, one
// process) or a PostgreSQL database that several replicas share (pgKV).
// Keys in a bucket sort bytewise in both.

// kvDB is a store of buckets. Update runs fn in one read-write
// transaction, committed when fn returns nil (durably: fsync'd, or
// committed by PostgreSQL) and undone otherwise; View runs fn in a
// read-only one. fn runs once.
type kvDB interface {
	Update(fn func(kvTx) error) error
	View(fn func(kvTx) error) error
	Close() error
}

// kvTx is one transaction. Bucket is nil when the bucket does not exist.
// DeleteBucket fails wrapping errBucketNotFound for a missing bucket.
type kvTx interface {
	Bucket(name []byte) kvBucket
	CreateBucketIfNotExists(name []byte) (kvBucket, error)
	DeleteBucket(name []byte) error
}

// kvBucket is a bucket within a transaction. A value Get returns is valid
// only during the transaction. ForEach stops at fn's first error; fn must
// not change the bucket.
type kvBucket interface {
	Get(key []byte) []byte
	Put(key, value []byte) error
	Delete(key []byte) error
	ForEach(fn func(k, v []byte) error) error
	Cursor() kvCursor
	// KeyN is the number of keys.
	KeyN() int
}

// kvCursor walks a bucket in key order; a nil key is the end.
type kvCursor interface {
	First() (k, v []byte)
	Last() (k, v []byte)
	Seek(key []byte) (k, v []byte)
	Next() (k, v []byte)
	Prev() (k, v []byte)
}

// readOne returns a copy of the value of key in bucket, nil when either
// is absent: one committed read, for a shared store one statement
// outside any transaction (one round trip instead of three).
func readOne(db kvDB, bucket, key []byte) ([]byte, error) {
	if p, ok := db.(*pgKV); ok {
		return p.get(bucket, key)
	}
	var v []byte
	err := db.View(func(tx kvTx) error {
		if b := tx.Bucket(bucket); b != nil {
			if got := b.Get(key); got != nil {
				v = append([]byte{}, got...)
			}
		}
		return nil
	})
	return v, err
}

// lockTx takes, until tx ends, the lock called name that excludes the
// transactions of other processes taking it: a shared store's advisory
// lock. A bbolt transaction has nothing to take: writers are serial.
func lockTx(tx kvTx, name string) error {
	if l, ok := tx.(interface{ lock(name string) error }); ok {
		return l.lock(name)
	}
	return nil
}

// errBucketNotFound is DeleteBucket's error for a missing bucket.
var errBucketNotFound = errors.New("bucket not found")

// boltKV is a kvDB on a bbolt file.
type boltKV struct{ db *bolt.DB }

func (b boltKV) Update(fn func(kvTx) error) error {
	return b.db.Update(func(tx *bolt.Tx) error { return fn(boltTx{tx}) })
}

func (b boltKV) View(fn func(kvTx) error) error {
	return b.db.View(func(tx *bolt.Tx) error { return fn(boltTx{tx}) })
}

func (b boltKV) Close() error { return b.db.Close() }

type boltTx struct{ tx *bolt.Tx }

func (t boltTx) Bucket(name []byte) kvBucket {
	if b := t.tx.Bucket(name); b != nil {
		return boltBucket{b}
	}
	return nil
}

func (t boltTx) CreateBucketIfNotExists(name []byte) (kvBucket, error) {
	b, err := t.tx.CreateBucketIfNotExists(name)
	if err != nil {
		return nil, err
	}
	return boltBucket{b}, nil
}

func (t boltTx) DeleteBucket(name []byte) error {
	err := t.tx.DeleteBucket(name)
	if errors.Is(err, berrors.ErrBucketNotFound) {
		return errBucketNotFound
	}
	return err
}

// boltBucket is a *bolt.Bucket as a kvBucket.
type boltBucket struct{ *bolt.Bucket }

func (b boltBucket) Cursor() kvCursor { return b.Bucket.Cursor() }

func (b boltBucket) KeyN() int { return b.Stats().KeyN }

// viewOf reads one value in a read-only transaction of db.
func viewOf[T any](db kvDB, read func(kvTx) (T, error)) (T, error) {
	var v T
	err := db.View(func(tx kvTx) error {
		var err error
		v, err = read(tx)
		return err
	})
	return v, err
}
