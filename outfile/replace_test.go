package outfile

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestCheckReplace: an output replaces an existing file only with force,
// and never a bbolt database (a ledger or a store) or a dpal file of
// another format, with force or not. Nothing there, an empty file, a FIFO
// and standard output need no force.
func TestCheckReplace(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bolt := make([]byte, 8192)
	binary.NativeEndian.PutUint32(bolt[16:], 0xED0CDAED) // bbolt's magic, in its first header page
	var (
		ledger = write("l.db", bolt)
		state  = write("state", []byte(`{"format":"dpal-stream-state","mac":"00","state":{}}`+"\n"))
		model  = write("m.json", []byte(`  {"format":"dpal-nn","version":1}`))
		csv    = write("x.csv", []byte("1,2\n"))
		empty  = write("empty", nil)
		fifo   = filepath.Join(dir, "fifo")
	)
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path, kind string
		force      bool
		want       string // "" for no error
	}{
		{"", "", false, ""},
		{"-", "", false, ""},
		{filepath.Join(dir, "new"), "", false, ""},
		{empty, "dpal-nn", false, ""},
		{fifo, "", false, ""},
		{dir, "", true, "directory"},
		{csv, "", false, "--force"},
		{csv, "", true, ""},
		{csv, "dpal-nn", true, ""},
		{model, "dpal-nn", false, "--force"},
		{model, "dpal-nn", true, ""},
		{model, "", true, "dpal-nn file"},
		{state, "dpal-nn", true, "dpal-stream-state file"},
		{state, "dpal-stream-state", true, ""},
		{ledger, "", false, "bbolt"},
		{ledger, "", true, "bbolt"},
		{ledger, "dpal-nn", true, "bbolt"},
	} {
		err := CheckReplace(Path{Flag: "--out", Path: tc.path}, tc.kind, tc.force)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.path)) {
			t.Errorf("%s as a %q output, force %v: %v, want %q", filepath.Base(tc.path), tc.kind, tc.force, err, tc.want)
		}
	}
	for path, want := range map[string]string{ledger: "bbolt", state: "dpal-stream-state", model: "dpal-nn", csv: "", empty: "", fifo: ""} {
		if got, err := Sniff(path); err != nil || got != want {
			t.Errorf("Sniff(%s) = %q, %v; want %q", filepath.Base(path), got, err, want)
		}
	}
}
