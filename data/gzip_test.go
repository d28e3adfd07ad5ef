package data

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOpenGzip(t *testing.T) {
	dir := t.TempDir()
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write([]byte("hello\n"))
	zw.Close()
	good := filepath.Join(dir, "good.gz")
	plain := filepath.Join(dir, "plain.gz")
	if err := os.WriteFile(good, z.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(plain, []byte("not gzip"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Run("reads", func(t *testing.T) {
		rc, err := OpenGzip(good)
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		if err != nil || string(b) != "hello\n" {
			t.Fatalf("got %q, %v", b, err)
		}
	})
	for name, path := range map[string]string{"not gzip": plain, "missing": filepath.Join(dir, "none.gz")} {
		t.Run(name, func(t *testing.T) {
			if _, err := OpenGzip(path); err == nil || !strings.Contains(err.Error(), path) {
				t.Fatalf("error %v does not name %s", err, path)
			}
		})
	}
}
