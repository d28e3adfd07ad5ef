package ledger_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
)

// writeLedger writes a durable ledger of n charges to path.
func writeLedger(t testing.TB, path string, n int) {
	t.Helper()
	l := openLedger(t, path, account.Budget{Epsilon: 1e6, Delta: 1e-5})
	for i := range n {
		c := ledger.Charge{Groups: []string{"g", "record-" + strings.Repeat("x", i%7)}, Loss: lap(0.01), Note: "charge"}
		if i%3 == 0 {
			c.Groups = one("h")
			c.Loss = gauss(0.02, 1e-9)
		}
		if _, err := l.Record(c); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// snapshot is a file's bytes and mtime, after setting the mtime to a past
// instant so that a write within the same second shows.
func snapshot(t *testing.T, path string) ([]byte, time.Time) {
	t.Helper()
	past := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := os.Chtimes(path, past, past); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b, past
}

func checkUntouched(t *testing.T, path string, b []byte, mtime time.Time, what string) {
	t.Helper()
	now, err := os.ReadFile(path)
	fi, serr := os.Stat(path)
	if err != nil || serr != nil || !bytes.Equal(now, b) || !fi.ModTime().Equal(mtime) {
		t.Errorf("%s changed the file: %v %v, equal bytes %v, mtime %v (was %v)", what, err, serr, bytes.Equal(now, b), fi.ModTime(), mtime)
	}
}

// TestLoadReadOnly: Load reads a ledger without writing it (bytes and
// mtime unchanged), under a shared lock that other readers may hold too;
// its store refuses writes; it never creates or initialises a file.
func TestLoadReadOnly(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "l.db")
	writeLedger(t, path, 5)
	b, mtime := snapshot(t, path)
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if err := syscall.Flock(int(fh.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	l, err := ledger.Load(path)
	if err != nil {
		t.Fatalf("Load while another reader holds the file: %v", err)
	}
	checkLog(t, l, 5)
	if _, err := l.Charge(mech{lap(0.01)}, "g"); err == nil {
		t.Error("a charge to a read-only ledger succeeded")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	checkUntouched(t, path, b, mtime, "Load")
	syscall.Flock(int(fh.Fd()), syscall.LOCK_UN)

	// Reopening an existing ledger for a run writes nothing either.
	st := openFile(t, path)
	if _, err := ledger.Open(st, account.Budget{}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	checkUntouched(t, path, b, mtime, "OpenFile and Open")

	missing := filepath.Join(dir, "missing.db")
	if _, err := ledger.Load(missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("Load of a missing file: %v, want an error naming it", err)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("Load created the missing file")
	}
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.Load(empty); err == nil || !strings.Contains(err.Error(), empty) || !strings.Contains(err.Error(), "empty") {
		t.Errorf("Load of an empty file: %v, want an error naming it as empty", err)
	}
	if fi, err := os.Stat(empty); err != nil || fi.Size() != 0 {
		t.Errorf("Load initialised the empty file: %v", err)
	}
	// A store a run created but never gave its settings holds no ledger.
	bare := filepath.Join(dir, "bare.db")
	openFile(t, bare).Close()
	if _, err := ledger.Load(bare); err == nil || !strings.Contains(err.Error(), bare) {
		t.Errorf("Load of a store without settings: %v", err)
	}
}

// TestCheckedUnderLock: the file is checked under the lock bbolt will
// take, so a ledger another process is writing is reported in use, not
// damaged: here that process holds the exclusive lock and has the file in
// a state no whole ledger has (cut short) while Load and a run's open
// wait for the lock.
func TestCheckedUnderLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "l.db")
	writeLedger(t, path, 3)
	fh, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if err := syscall.Flock(int(fh.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	if err := fh.Truncate(10000); err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.Load(path); !errors.Is(err, ledger.ErrLocked) {
		t.Errorf("Load of a file another process holds: %v, want ErrLocked", err)
	}
	if _, err := openRun(path); !errors.Is(err, ledger.ErrLocked) {
		t.Errorf("a run's open of a file another process holds: %v, want ErrLocked", err)
	}
}
