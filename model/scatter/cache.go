package scatter

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"

	"github.com/dpal-dev/dpal/data"
	"github.com/dpal-dev/dpal/outfile"
)

// cacheMagic opens every cache file; a new layout gets a new version, so
// an old file is a miss, never misread.
const cacheMagic = "dpal-scatter-v1\n"

// CacheStatus says where CachedFeatures' features came from.
type CacheStatus string

// The statuses of CachedFeatures.
const (
	CacheOff       CacheStatus = "off"       // no cache directory: computed
	CacheHit       CacheStatus = "hit"       // read from a verified cache file
	CacheMiss      CacheStatus = "miss"      // no file for this key: computed and stored
	CacheRecovered CacheStatus = "recovered" // the file failed verification: computed and replaced
)

// CachedFeatures is Features with an on-disk cache in dir (empty: none),
// with every coefficient rounded to float32, fresh or cached, so that a
// run's result does not depend on whether the cache hit. The file is
// named by Key(d, c), a SHA-256 of the transform's configuration and of
// every input value, so a changed image or configuration is a miss and
// never a stale hit. On read the file's own header key, shape and trailing
// SHA-256 of its content are verified; a file that fails (truncated,
// corrupted, another layout) is logged as a warning, recomputed and
// replaced. Files are written atomically (outfile.WriteFile, mode 0600:
// the features are a function of private images); a failed write is a
// warning, not an error, since the features are in hand.
func CachedFeatures(d *data.Dataset, c Config, dir string) (*data.Dataset, CacheStatus, error) {
	f, status, err := CachedFeatures32(d, c, dir)
	if err != nil {
		return nil, status, err
	}
	x := make([][]float64, len(f.X32))
	flat := make([]float64, len(f.X32)*c.len())
	for i, r32 := range f.X32 {
		row := flat[i*len(r32) : (i+1)*len(r32) : (i+1)*len(r32)]
		for k, v := range r32 {
			row[k] = float64(v)
		}
		x[i] = row
	}
	f.X, f.X32 = x, nil
	return f, status, nil
}

// CachedFeatures32 is CachedFeatures with the features held in float32
// only (the dataset's X32, X nil; see Features32), as the cache stores
// them: half the memory, for a trainer that reads float32.
func CachedFeatures32(d *data.Dataset, c Config, dir string) (*data.Dataset, CacheStatus, error) {
	if dir == "" {
		f, err := Features32(d, c)
		return f, CacheOff, err
	}
	key := Key(d, c)
	path := filepath.Join(dir, hex.EncodeToString(key[:])+".f32")
	out := &data.Dataset{Name: d.Name + "-scatter", Y: d.Y, Class: d.Class, ClassNames: d.ClassNames}
	status := CacheMiss
	x, err := readCache(path, key, len(d.X), c.len())
	var bad *corruptError
	switch {
	case err == nil:
		out.X32 = x
		return out, CacheHit, nil
	case errors.As(err, &bad):
		slog.Warn("scatter cache: recomputing features", "file", path, "err", err)
		status = CacheRecovered
	case !errors.Is(err, os.ErrNotExist):
		slog.Warn("scatter cache: cannot read, recomputing features", "file", path, "err", err)
	}
	f, err := Features32(d, c)
	if err != nil {
		return nil, status, err
	}
	if err := writeCache(dir, path, key, f.X32, c.len()); err != nil {
		slog.Warn("scatter cache: not stored", "file", path, "err", err)
	}
	return f, status, nil
}

// len is the number of coefficients per image under c (0 if c is
// invalid: Features then returns New's error).
func (c Config) len() int {
	s, err := New(c.Height, c.Width, c.J, c.L)
	if err != nil {
		return 0
	}
	return s.Len()
}

// Key is the cache key of d's features under c: the SHA-256 of the cache
// layout's version, c's fields, d's shape and every value of d.X (its
// IEEE-754 bits), the whole input of Features. Labels and names are not
// part of it: the features do not depend on them.
func Key(d *data.Dataset, c Config) [32]byte {
	h := sha256.New()
	h.Write([]byte(cacheMagic))
	writeInts(h, c.Height, c.Width, c.J, c.L, c.Groups, len(d.X))
	buf := make([]byte, 0, 8*c.Height*c.Width)
	for _, row := range d.X {
		writeInts(h, len(row))
		buf = buf[:0]
		for _, v := range row {
			buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(v))
		}
		h.Write(buf)
	}
	var k [32]byte
	h.Sum(k[:0])
	return k
}

// writeInts writes each value as 8 little-endian bytes.
func writeInts(w io.Writer, vs ...int) {
	var b [8]byte
	for _, v := range vs {
		binary.LittleEndian.PutUint64(b[:], uint64(v))
		w.Write(b[:])
	}
}

// The cache file: cacheMagic, the 32-byte key, rows and columns (8 bytes
// each, little endian), rows·columns float32 values (little endian), and
// the SHA-256 of everything before it.

// writeCache stores rows under key at path.
func writeCache(dir, path string, key [32]byte, rows [][]float32, cols int) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return outfile.WriteFile(path, 0o600, func(w io.Writer) error {
		h := sha256.New()
		bw := bufio.NewWriterSize(io.MultiWriter(w, h), 1<<20)
		bw.WriteString(cacheMagic)
		bw.Write(key[:])
		writeInts(bw, len(rows), cols)
		buf := make([]byte, 0, 4*cols)
		for _, row := range rows {
			buf = buf[:0]
			for _, v := range row {
				buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
			}
			bw.Write(buf)
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		_, err := w.Write(h.Sum(nil))
		return err
	})
}

// corruptError is readCache's error for a file that opened but failed
// verification.
type corruptError struct{ err error }

func (e *corruptError) Error() string { return e.err.Error() }
func (e *corruptError) Unwrap() error { return e.err }

// readCache reads the features of n images of cols coefficients stored
// under key at path, verifying the header and the trailing checksum. A
// file that cannot be opened is os.Open's error; one that fails
// verification a *corruptError.
func readCache(path string, key [32]byte, n, cols int) ([][]float32, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	x, err := verified(f, key, n, cols)
	if err != nil {
		return nil, &corruptError{err}
	}
	return x, nil
}

// verified reads and checks the content of a cache file.
func verified(f io.Reader, key [32]byte, n, cols int) ([][]float32, error) {
	h := sha256.New()
	br := bufio.NewReaderSize(f, 1<<20)
	r := io.TeeReader(br, h) // h sees exactly what header and rows consume
	if err := readHeader(r, key, n, cols); err != nil {
		return nil, err
	}
	x, err := readRows(r, n, cols)
	if err != nil {
		return nil, err
	}
	return x, readTrailer(br, h.Sum(nil))
}

// readHeader checks the magic, key and shape at the start of a cache file.
func readHeader(r io.Reader, key [32]byte, n, cols int) error {
	head := make([]byte, len(cacheMagic)+32+16)
	if _, err := io.ReadFull(r, head); err != nil {
		return fmt.Errorf("header: %w", err)
	}
	if string(head[:len(cacheMagic)]) != cacheMagic {
		return errors.New("not a scatter cache file of this version")
	}
	if !bytes.Equal(head[len(cacheMagic):len(cacheMagic)+32], key[:]) {
		return errors.New("key in the file does not match its name")
	}
	rows := binary.LittleEndian.Uint64(head[len(head)-16:])
	c := binary.LittleEndian.Uint64(head[len(head)-8:])
	if rows != uint64(n) || c != uint64(cols) {
		return fmt.Errorf("file holds %d×%d values, want %d×%d", rows, c, n, cols)
	}
	return nil
}

// readRows reads n rows of cols float32 values into one block.
func readRows(r io.Reader, n, cols int) ([][]float32, error) {
	flat := make([]float32, n*cols)
	x := make([][]float32, n)
	buf := make([]byte, 4*cols)
	for i := range x {
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, fmt.Errorf("row %d: %w", i, err)
		}
		row := flat[i*cols : (i+1)*cols : (i+1)*cols]
		for k := range row {
			v := math.Float32frombits(binary.LittleEndian.Uint32(buf[4*k:]))
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return nil, fmt.Errorf("row %d coefficient %d is %v", i, k, v)
			}
			row[k] = v
		}
		x[i] = row
	}
	return x, nil
}

// readTrailer checks that the rest of r is exactly sum, the SHA-256 of
// everything before it.
func readTrailer(r io.Reader, sum []byte) error {
	rest, err := io.ReadAll(io.LimitReader(r, 64))
	if err != nil {
		return err
	}
	if len(rest) != len(sum) {
		return fmt.Errorf("trailer: %d bytes after the values, want a %d-byte checksum", len(rest), len(sum))
	}
	if !bytes.Equal(rest, sum) {
		return errors.New("checksum does not match the content")
	}
	return nil
}
