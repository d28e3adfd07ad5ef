package ledger_test

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
)

// damagedEntries is how many charges the damaged-file tests' ledger
// holds: enough for the entries bucket to need a branch page over several
// leaves, as a real ledger's does.
const damagedEntries = 60

// realLedger returns the bytes of a durable ledger of damagedEntries
// charges and its entries.
func realLedger(t testing.TB) ([]byte, []ledger.Entry) {
	b, entries, _ := realLedgerRoot(t)
	return b, entries
}

// realLedgerRoot is realLedger, and the page of the entries bucket's
// root: a branch page.
func realLedgerRoot(t testing.TB) ([]byte, []ledger.Entry, int) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "real.db")
	writeLedger(t, path, damagedEntries)
	l, err := ledger.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := l.Entries()
	l.Close()
	if err != nil || len(entries) != damagedEntries {
		t.Fatalf("%d entries, %v", len(entries), err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var stats bolt.BucketStats
	root := 0
	db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("entries"))
		stats, root = b.Stats(), int(b.Root())
		return nil
	})
	db.Close()
	if stats.BranchPageN == 0 || stats.LeafPageN < 2 {
		t.Fatalf("the entries bucket has %d branch and %d leaf pages, want a branch over leaves", stats.BranchPageN, stats.LeafPageN)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b, entries, root
}

// openDamaged writes b to path and opens it as `dpal ledger show` does
// (Load) and, when run is set, as a run does (openRun); see checkOpen. It
// reports whether Load succeeded.
func openDamaged(t *testing.T, path string, b []byte, run bool, want []ledger.Entry) bool {
	t.Helper()
	write := func() {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write()
	l, err := ledger.Load(path)
	ok := checkOpen(t, "Load", path, len(b), l, err, want) >= 0
	if run {
		write()
		l, err := openRun(path)
		checkOpen(t, "a run's open", path, len(b), l, err, want)
	}
	return ok
}

// openRun opens the ledger file at path as a run does, with the budget
// the test's ledgers are written with.
func openRun(path string) (*ledger.Ledger, error) {
	st, err := ledger.OpenFile(path)
	if err != nil {
		return nil, err
	}
	l, err := ledger.Open(st, account.Budget{Epsilon: 1e6, Delta: 1e-5})
	if err != nil {
		st.Close()
	}
	return l, err
}

// checkOpen requires that the open (how) of the n bytes at path failed
// with one line that names the file, or gave a ledger whose log reads
// (and, with want, is a prefix of want). It closes the ledger and returns
// the number of entries read, -1 for an error.
func checkOpen(t *testing.T, how, path string, n int, l *ledger.Ledger, err error, want []ledger.Entry) int {
	t.Helper()
	if err != nil {
		if !strings.Contains(err.Error(), path) || strings.Contains(err.Error(), "\n") {
			t.Fatalf("%s of %d bytes: %q, want one line naming the file", how, n, err)
		}
		return -1
	}
	defer l.Close()
	got, err := l.Entries()
	if err != nil {
		if !strings.Contains(err.Error(), path) {
			t.Fatalf("%s of %d bytes: entries: %q, want an error naming the file", how, n, err)
		}
		return -1
	}
	if want != nil && (len(got) > len(want) || len(got) > 0 && !sameEntry(got[len(got)-1], want[len(got)-1])) {
		t.Fatalf("%s of %d bytes read %d entries, not a prefix of the ledger's", how, n, len(got))
	}
	return len(got)
}

// TestOpenTruncated cuts a real ledger file short and opens each prefix
// as `dpal ledger show` does: every length up to 64 bytes past the last
// page in use (every length that is refused, and the first that open),
// then every 257th up to the whole file (whose tail past the last page in
// use bbolt never reads). Every 61st, and those within 2 bytes of a page
// boundary, are also opened as a run opens them. Each gives an error
// naming the file, or the whole log. Before the file was checked, bbolt,
// which maps it, faulted (SIGBUS) reading past the end of a short one.
func TestOpenTruncated(t *testing.T) {
	b, want := realLedger(t)
	dir := t.TempDir()
	path, runPath := filepath.Join(dir, "cut.db"), filepath.Join(dir, "run.db")
	// Load never writes the file, so each prefix is the last one and a byte.
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	start := time.Now()
	opened, tried, runs, first := 0, 0, 0, -1
	for n := 0; n <= len(b); n++ {
		if n > 0 {
			if _, err := fh.Write(b[n-1 : n]); err != nil {
				t.Fatal(err)
			}
		}
		if first >= 0 && n > first+64 && n%257 != 0 && n != len(b) {
			continue
		}
		tried++
		l, err := ledger.Load(path)
		switch got := checkOpen(t, "Load", path, n, l, err, want); {
		case got >= 0 && got != len(want):
			t.Fatalf("the prefix of %d bytes read %d of the %d entries", n, got, len(want))
		case got >= 0:
			opened++
			if first < 0 {
				first = n
			}
		case first >= 0:
			t.Fatalf("the prefix of %d bytes does not open, that of %d does", n, first)
		}
		if n%61 == 0 || n%4096 <= 2 || n%4096 >= 4094 || n == len(b) {
			runs++
			if err := os.WriteFile(runPath, b[:n], 0o600); err != nil {
				t.Fatal(err)
			}
			l, err := openRun(runPath)
			if got := checkOpen(t, "a run's open", runPath, n, l, err, want); got >= 0 && n > 0 && got != len(want) {
				t.Fatalf("a run's open of the prefix of %d bytes read %d of the %d entries", n, got, len(want))
			}
		}
	}
	if first < 0 {
		t.Fatal("the whole file does not open")
	}
	t.Logf("%d bytes: %d prefixes opened as show does, %d of them as a run does; %d open (the shortest has %d bytes); %v",
		len(b), tried, runs, opened, first, time.Since(start).Round(time.Millisecond))
}

// FuzzOpenFile opens mutated ledger files as `dpal ledger show` and a run
// do: never a crash, and every error names the file.
func FuzzOpenFile(f *testing.F) {
	b, _, root := realLedgerRoot(f)
	f.Add(b)
	cycle := bytes.Clone(b)
	binary.NativeEndian.PutUint64(cycle[root*4096+16+8:], uint64(root))
	f.Add(cycle)
	f.Add(b[:len(b)/2])
	f.Add(b[:4096*2])
	f.Add([]byte{})
	for _, off := range []int{0, 16, 4096 + 16, 4096 * 2, 4096 * 3, 4096*3 + 16, 4096 * 4} {
		if off < len(b) {
			m := bytes.Clone(b)
			m[off] ^= 0xff
			f.Add(m)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		openDamaged(t, filepath.Join(t.TempDir(), "fuzz.db"), b, true, nil)
	})
}

// TestOpenMutated changes single bytes of a real ledger file where bbolt
// keeps its pointers (the first 64 bytes of every page: the page header
// and the first elements, whose positions, sizes and child page ids bbolt
// follows), in two ways each, plus 300 bytes at random, and points the
// entries' branch page's first child at the branch itself (a cycle). Each file
// opens as `dpal ledger show` does (and every 8th also as a run does) to
// an error naming the file, or a log. Unchecked, bbolt panics on such
// files or reads past its mapping.
func TestOpenMutated(t *testing.T) {
	b, _, root := realLedgerRoot(t)
	path := filepath.Join(t.TempDir(), "mutated.db")
	const ps = 4096
	hw := int(binary.NativeEndian.Uint64(b[ps+16+40:])) // a header page's high-water mark
	var offsets []int
	for p := range hw {
		for i := range 64 {
			offsets = append(offsets, p*ps+i)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		offsets = append(offsets, rng.IntN(hw*ps))
	}
	start := time.Now()
	tried, opened := 0, 0
	for i, off := range offsets {
		for _, change := range []func(byte) byte{func(x byte) byte { return x ^ 0xff }, func(x byte) byte { return x + 1 }} {
			m := bytes.Clone(b)
			m[off] = change(m[off])
			tried++
			if openDamaged(t, path, m, i%8 == 0, nil) {
				opened++
			}
		}
	}
	m := bytes.Clone(b)
	binary.NativeEndian.PutUint64(m[root*ps+16+8:], uint64(root))
	if openDamaged(t, path, m, true, nil) {
		t.Errorf("the branch page %d, its own first child, opened", root)
	}
	t.Logf("%d mutated files: %d open, %d refused, in %v", tried, opened, tried-opened, time.Since(start).Round(time.Millisecond))
}

// TestOpenNotALedger: a bbolt file holding other buckets (a service
// store) or a plain key where a ledger's bucket belongs, a JSON file and
// a short text file are each refused, as not a ledger, by Load and by a
// run's open, which leave them as they were.
func TestOpenNotALedger(t *testing.T) {
	dir := t.TempDir()
	bbolt := func(name string, fill func(*bolt.Tx) error) string {
		path := filepath.Join(dir, name)
		db, err := bolt.Open(path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Update(fill); err != nil {
			t.Fatal(err)
		}
		db.Close()
		return path
	}
	store := bbolt("store.db", func(tx *bolt.Tx) error {
		for _, b := range []string{"tokens", "learners", "meta"} {
			if _, err := tx.CreateBucket([]byte(b)); err != nil {
				return err
			}
		}
		return nil
	})
	plain := bbolt("plain.db", func(tx *bolt.Tx) error {
		if _, err := tx.CreateBucket([]byte("entries")); err != nil {
			return err
		}
		// "meta" is a key of the root bucket here, not a bucket.
		return tx.Cursor().Bucket().Put([]byte("meta"), []byte("x"))
	})
	model := filepath.Join(dir, "model.json")
	text := filepath.Join(dir, "notes.txt")
	os.WriteFile(model, []byte(`{"format":"dpal-nn","version":1,"params":[]}`+strings.Repeat(" ", 9000)), 0o600)
	os.WriteFile(text, []byte("hello"), 0o600)
	for _, path := range []string{store, plain, model, text} {
		b, mtime := snapshot(t, path)
		for how, open := range map[string]func(string) (*ledger.Ledger, error){"Load": ledger.Load, "a run's open": openRun} {
			l, err := open(path)
			if err == nil {
				l.Close()
			}
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "not a ledger file") {
				t.Errorf("%s of %s: %v, want it called not a ledger file", how, filepath.Base(path), err)
			}
		}
		checkUntouched(t, path, b, mtime, "opening "+filepath.Base(path))
	}
}
