package ledger

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// SyncStore is a Store that other processes may write at the same time: a
// database that several runs or service replicas share. A Ledger over a
// SyncStore does not assume it holds the only reference to the log: every
// Record is one serializable unit in the store, in which the Ledger first
// folds in the entries other processes committed since it last looked,
// then checks the budget against those totals, and the store appends the
// entry only if the Ledger accepts it, all before any other process can
// do the same on this ledger.
//
// The guarantee, whatever the interleaving of processes and whatever the
// neighbouring relation the groups stand for: the composed loss of the
// entries naming a group never exceeds the budget (each Ledger's own
// budget, lowered or not, is checked against every committed entry), no
// sequence number is used twice, and a charge reported as recorded is in
// the log exactly once. Two processes can never both pass a budget that
// only one of their charges fits.
type SyncStore interface {
	Store
	// Sync runs one unit that excludes every other Sync on the same
	// ledger (e.g. a transaction holding a row lock on the ledger's row):
	// it calls fold with every entry committed after entry seq, in order,
	// then decide. When decide returns ok, Sync appends its entry, whose
	// Seq follows the last one folded, in the same unit and returns nil
	// only once it is committed. An error from fold or decide undoes the
	// unit and is returned as it is. If Sync fails after decide, the entry
	// may or may not be committed: a later Sync folds it in if it was.
	Sync(seq uint64, fold func(Entry) error, decide func() (e Entry, ok bool, err error)) error
}

// ErrInitialised is returned (wrapped) by a Store's Init when the store
// already holds settings: with a shared store, another process may have
// created the ledger since Meta said there was none, and Open then
// continues with the stored settings.
var ErrInitialised = errors.New("store already initialised")

// StoreOpener opens the store a URL names. A read-only store is never
// created, initialised or written: Init and Append fail.
type StoreOpener func(url string, readOnly bool) (Store, error)

var (
	openersMu sync.Mutex
	openers   = map[string]StoreOpener{}
)

// RegisterStore makes OpenRun and Load open a path of the form
// scheme://… with open. A package that implements a store over a
// database registers its schemes in its init (importing it is what links
// the database driver into a program); registering a scheme twice
// panics, as it is a programming error.
func RegisterStore(scheme string, open StoreOpener) {
	openersMu.Lock()
	defer openersMu.Unlock()
	if _, dup := openers[scheme]; dup {
		panic("ledger: store scheme " + scheme + " registered twice")
	}
	openers[scheme] = open
}

// urlScheme matches the scheme of a URL path: RFC 3986's letters, then
// "://".
var urlScheme = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*)://`)

// IsURL reports whether path names a store by URL (scheme://…) rather
// than a file: OpenRun and Load open it with the store registered for its
// scheme, and never as a file.
func IsURL(path string) bool { return urlScheme.MatchString(path) }

// openURL opens the store the URL path names; ok is false for a plain
// path.
func openURL(path string, readOnly bool) (st Store, ok bool, err error) {
	m := urlScheme.FindStringSubmatch(path)
	if m == nil {
		return nil, false, nil
	}
	openersMu.Lock()
	open := openers[strings.ToLower(m[1])]
	known := make([]string, 0, len(openers))
	for s := range openers {
		known = append(known, s+"://")
	}
	openersMu.Unlock()
	if open == nil {
		sort.Strings(known)
		return nil, true, fmt.Errorf("ledger %s: no store for %s:// is linked into this program (known: %s)",
			Redact(path), m[1], strings.Join(known, ", "))
	}
	st, err = open(path, readOnly)
	if err != nil {
		return nil, true, namePath(Redact(path), err)
	}
	return st, true, nil
}

// Redact is path as errors and reports show it: a URL without its
// password.
func Redact(path string) string {
	if !IsURL(path) {
		return path
	}
	u, err := url.Parse(path)
	if err != nil {
		return urlScheme.FindString(path) + "…" // unparsable: show no more than the scheme
	}
	return u.Redacted()
}
