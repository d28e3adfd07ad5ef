// Package outfile owns how dpal writes the files a run produces: a file is
// replaced atomically (a temporary file in the same directory, fsync,
// rename, fsync of the directory), so a crash leaves the old file or the
// new one and never a torn one; every output path is probed before a run
// begins, so an unwritable one fails at once and not after the releases
// have gone out; no output may resolve (symlinks followed) to one of
// the run's inputs, which it would clobber; and no output replaces an
// existing file the user did not ask to replace, nor ever a file of
// another kind that dpal keeps (a ledger, a store, a state, a model).
//
// It imports nothing of dpal's and sits beside vec and progress: the
// CLI, session and the reproductions use it.
package outfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// WriteFile replaces path, atomically, with what write writes: it writes a
// temporary file in path's directory, syncs it, renames it over path and
// syncs the directory. The file gets mode perm. On any error path is
// unchanged and the temporary file is removed.
func WriteFile(path string, perm os.FileMode, write func(io.Writer) error) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err = tmp.Chmod(perm); err != nil {
		return err
	}
	if err = write(tmp); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	removeStale(dir, base)
	return SyncDir(dir)
}

// removeStale removes the temporary files of writes to base that a crash
// interrupted: they may hold private data, and nothing else uses them.
func removeStale(dir, base string) {
	stale, _ := filepath.Glob(filepath.Join(dir, "."+escapeGlob(base)+".tmp-*"))
	for _, f := range stale {
		os.Remove(f)
	}
}

// escapeGlob quotes the metacharacters of filepath.Match in s.
func escapeGlob(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// SyncDir fsyncs a directory, making a rename or a new file in it durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// Probe checks, without changing path, that a run will be able to write
// it: path is not a directory, an existing regular file opens for
// writing, and a path that does not exist can be created in its
// directory. "" and "-" (standard output) pass, and so does an existing
// FIFO or device (opening one to probe it would block or disturb it).
func Probe(path string) error {
	if path == "" || path == "-" {
		return nil
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return probeDir(filepath.Dir(path))
	case err != nil:
		return err
	case fi.IsDir():
		return fmt.Errorf("%s is a directory", path)
	case !fi.Mode().IsRegular():
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	return f.Close()
}

// ProbeReplace checks that WriteFile can replace path: Probe, and its
// directory takes the temporary file.
func ProbeReplace(path string) error {
	if err := Probe(path); err != nil || path == "" || path == "-" {
		return err
	}
	return probeDir(filepath.Dir(path))
}

// probeDir checks that dir takes a new file, by making and removing one.
func probeDir(dir string) error {
	f, err := os.CreateTemp(dir, ".dpal-probe-*")
	if err != nil {
		return fmt.Errorf("cannot create files in %s: %w", dir, err)
	}
	f.Close()
	return os.Remove(f.Name())
}

// ProbeDir creates the output directory dir if needed and checks that it
// takes new files.
func ProbeDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return probeDir(dir)
}

// Path is one file of a run, named by its flag for errors.
type Path struct {
	Flag string // e.g. "--out"
	Path string // "" (unset) and "-" (a standard stream) are skipped
}

// CheckDistinct refuses an output that is an input or another output: it
// would truncate or overwrite it. Paths are compared after following
// symlinks, and existing files by identity (os.SameFile, so hard links
// count too).
func CheckDistinct(outputs, inputs []Path) error {
	for i, out := range outputs {
		if skip(out) {
			continue
		}
		for _, in := range inputs {
			if !skip(in) && same(out.Path, in.Path) {
				return fmt.Errorf("%s %s is the input %s %s: it would be overwritten; write elsewhere", out.Flag, out.Path, in.Flag, in.Path)
			}
		}
		for _, other := range outputs[i+1:] {
			if !skip(other) && same(out.Path, other.Path) {
				return fmt.Errorf("%s and %s are the same file %s: give each its own", out.Flag, other.Flag, out.Path)
			}
		}
	}
	return nil
}

func skip(p Path) bool { return p.Path == "" || p.Path == "-" }

// Same reports whether a and b name one file (see CheckDistinct).
func Same(a, b string) bool { return same(a, b) }

// same reports whether a and b name one file.
func same(a, b string) bool {
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	if errA == nil && errB == nil {
		return os.SameFile(fa, fb)
	}
	return Resolve(a) == Resolve(b)
}

// Resolve returns path made absolute with symlinks followed, as far as
// they exist: a file not yet created resolves through its directory.
func Resolve(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.Clean(path)
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r
	}
	dir, base := filepath.Split(abs)
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		return filepath.Join(r, base)
	}
	return abs
}
