package data

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// checkLoaded checks a text loader's result against a table case: an error
// containing wantErr (then it reports false: nothing more to check), or
// exactly rows wantX and labels wantY.
func checkLoaded(t *testing.T, d *Dataset, err error, wantErr string, wantX [][]float64, wantY []float64) bool {
	t.Helper()
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("error %v, want %q", err, wantErr)
		}
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(d.X, wantX, slices.Equal) || !slices.Equal(d.Y, wantY) {
		t.Fatalf("X %v Y %v", d.X, d.Y)
	}
	return true
}
