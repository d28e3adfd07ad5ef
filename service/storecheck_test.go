package service

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestOpenStoreDamaged cuts a real store at every 512th length (and flips a
// byte of both meta pages): each open must be one error naming the store,
// or a store that works (a cut past the pages in use), never a SIGBUS from
// bbolt mapping a file shorter than its header says (which killed the test
// binary before the check).
func TestOpenStoreDamaged(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "store.db")
	st, err := OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	whole, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "cut.db")
	// A cut past the last page in use loses nothing bbolt reads, so the
	// store may open; a cut inside the two meta pages never may.
	try := func(name string, b []byte, mustFail bool) {
		t.Helper()
		if err := os.WriteFile(cut, b, 0o600); err != nil {
			t.Fatal(err)
		}
		st, err := OpenStore(cut)
		switch {
		case err == nil && mustFail:
			t.Errorf("%s: a damaged store opened", name)
		case err == nil:
		case !strings.Contains(err.Error(), cut):
			t.Errorf("%s: %v, want the store named", name, err)
		}
		if err == nil {
			st.Close()
		}
	}
	for n := 1; n < len(whole); n += 512 {
		try("cut at "+strconv.Itoa(n), whole[:n], n < 2*4096)
	}
	flipped := append([]byte(nil), whole...)
	flipped[20] ^= 0xff // the version field of both meta pages
	flipped[4096+20] ^= 0xff
	try("both meta pages flipped", flipped, true)
	// The whole file still opens.
	st, err = OpenStore(path)
	if err != nil {
		t.Fatalf("the intact store: %v", err)
	}
	st.Close()
}
