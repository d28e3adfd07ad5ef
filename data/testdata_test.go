package data

import (
	"os"
	"path/filepath"
	"testing"
)

// testDataDir returns the shared data root ($DPAL_DATA_DIR, else
// ../../shared/data from this package) or skips the test when it is absent.
func testDataDir(tb testing.TB) string {
	tb.Helper()
	dir := os.Getenv("DPAL_DATA_DIR")
	if dir == "" {
		dir = filepath.Join("..", "..", "shared", "data")
	}
	if _, err := os.Stat(dir); err != nil {
		tb.Skipf("data directory %s not available: %v", dir, err)
	}
	return dir
}
