package outfile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// Bolt is what Sniff calls a bbolt database: a dpal ledger, a dpal serve
// store, or another program's.
const Bolt = "bbolt"

// Sniff says what the file at path holds, as far as its first bytes
// tell: Bolt for a bbolt database (its magic number in the first header
// page), the format of a dpal JSON file ({"format":"dpal-…", as state
// files and model files begin), or "" for anything else, a file that is
// not there, empty or not a regular file.
func Sniff(path string) (string, error) {
	// Stat first: opening a FIFO would block until a writer comes.
	if fi, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) || err == nil && !fi.Mode().IsRegular() {
		return "", nil
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	head := make([]byte, 256)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return "", err
	}
	head = head[:n]
	// bbolt's first page: a 16-byte page header, then the meta page's
	// magic 0xED0CDAED in the byte order of the machine that wrote it.
	if len(head) >= 20 {
		if m := head[16:20]; binary.LittleEndian.Uint32(m) == 0xED0CDAED || binary.BigEndian.Uint32(m) == 0xED0CDAED {
			return Bolt, nil
		}
	}
	const prefix = `{"format":"dpal-`
	if rest, ok := bytes.CutPrefix(bytes.TrimLeft(head, " \t\r\n"), []byte(prefix)); ok {
		if end := bytes.IndexByte(rest, '"'); end >= 0 {
			return "dpal-" + string(rest[:end]), nil
		}
	}
	return "", nil
}

// CheckReplace refuses to let output o, which writes files of the given
// kind (a format Sniff knows, e.g. "dpal-nn"; "" for plain text, CSV or
// JSON lines), replace an existing file that the user did not ask to
// replace: force asks for it (the --force flag, or a command whose
// documented semantics replace that file, such as a state saved over the
// one it resumed). Even with force it never replaces a bbolt database (a
// ledger or a store) or a dpal file of another kind: those hold what a
// run cannot rebuild, and writing elsewhere costs nothing. Nothing there,
// an empty file, a FIFO or a device, "" and "-" pass.
func CheckReplace(o Path, kind string, force bool) error {
	if skip(o) {
		return nil
	}
	fi, err := os.Stat(o.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("%s %s: %w", o.Flag, o.Path, err)
	case fi.IsDir():
		return fmt.Errorf("%s %s is a directory", o.Flag, o.Path)
	case !fi.Mode().IsRegular() || fi.Size() == 0:
		return nil
	}
	has, err := Sniff(o.Path)
	if err != nil {
		return fmt.Errorf("%s %s: %w", o.Flag, o.Path, err)
	}
	switch {
	case has == Bolt:
		return fmt.Errorf("%s %s is a bbolt database (a dpal ledger or store): an output never replaces one, even with --force; write elsewhere", o.Flag, o.Path)
	case has != "" && has != kind:
		return fmt.Errorf("%s %s is a %s file: this output never replaces one, even with --force; write elsewhere", o.Flag, o.Path, has)
	case !force:
		return fmt.Errorf("%s %s exists: pass --force to replace it, or write elsewhere", o.Flag, o.Path)
	}
	return nil
}
