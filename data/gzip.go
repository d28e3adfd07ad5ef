package data

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"os"
)

// OpenGzip opens the gzipped file at path for reading its decompressed
// bytes; closing the result closes the file. A file that is not gzip is an
// error naming path. Every loader of a .gz file opens it here.
func OpenGzip(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	zr, err := gzip.NewReader(bufio.NewReader(f))
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return struct {
		io.Reader
		io.Closer
	}{zr, f}, nil
}
