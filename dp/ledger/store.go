package ledger

import (
	"errors"
	"math"
	"slices"
	"sync"
)

var posInf = math.Inf(1)

// Store keeps a ledger's settings and its log. The Ledger holds the only
// reference to a store while it is open (unless the store is a SyncStore,
// which other processes share) and calls it under its own lock, so an
// implementation need not be safe for concurrent use.
type Store interface {
	// Meta returns the stored settings; ok is false for a new store.
	Meta() (m Meta, ok bool, err error)
	// Init stores the settings of a new ledger.
	Init(m Meta) error
	// Append adds one entry at the end of the log. When it returns nil the
	// entry is committed: a durable store has synced it to disk.
	Append(e Entry) error
	// Scan calls fn with every entry in sequence order, stopping at fn's
	// first error, which it returns.
	Scan(fn func(Entry) error) error
	// Close releases the store.
	Close() error
}

// MemStore is a Store in memory: nothing survives the process. It is the
// default for experiments and tests.
type MemStore struct {
	mu      sync.Mutex
	meta    *Meta
	entries []Entry
}

// NewMemStore returns an empty in-memory store.
func NewMemStore() *MemStore { return &MemStore{} }

// Meta implements Store.
func (s *MemStore) Meta() (Meta, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.meta == nil {
		return Meta{}, false, nil
	}
	return *s.meta, true, nil
}

// Init implements Store.
func (s *MemStore) Init(m Meta) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.meta != nil {
		return ErrInitialised
	}
	s.meta = &m
	return nil
}

// Append implements Store.
func (s *MemStore) Append(e Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.meta == nil {
		return errors.New("store not initialised")
	}
	e.Groups = slices.Clone(e.Groups)
	s.entries = append(s.entries, e)
	return nil
}

// Scan implements Store.
func (s *MemStore) Scan(fn func(Entry) error) error {
	s.mu.Lock()
	entries := slices.Clone(s.entries)
	s.mu.Unlock()
	for _, e := range entries {
		if err := fn(e); err != nil {
			return err
		}
	}
	return nil
}

// Close implements Store; a MemStore stays readable after it.
func (s *MemStore) Close() error { return nil }
