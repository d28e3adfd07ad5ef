package progress

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestNonTerminalDrawsNothing checks that every writer that is not a
// terminal gets a nil bar and not one byte, for known and unknown totals.
func TestNonTerminalDrawsNothing(t *testing.T) {
	file, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	var buf bytes.Buffer
	writers := []struct {
		name   string
		w      io.Writer
		output func(*testing.T) int // bytes the writer has received
	}{
		{"nil", nil, func(*testing.T) int { return 0 }},
		{"buffer", &buf, func(*testing.T) int { return buf.Len() }},
		{"regular file", file, func(t *testing.T) int { return fileSize(t, file) }},
		{"pipe", pw, func(t *testing.T) int { return pending(t, pr) }},
	}
	for _, wr := range writers {
		for _, total := range []int{100, 0, -1} {
			t.Run(fmt.Sprintf("%s/total=%d", wr.name, total), func(t *testing.T) {
				bar := New(wr.w, total, "test")
				if bar != nil {
					t.Fatalf("New(%s, %d) = %v, want nil", wr.name, total, bar)
				}
				bar.Add(10)
				bar.Finish()
				if n := wr.output(t); n != 0 {
					t.Errorf("%d bytes written, want 0", n)
				}
			})
		}
	}
}

// fileSize returns the size of f.
func fileSize(t *testing.T, f *os.File) int {
	t.Helper()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return int(st.Size())
}

// TestDraw checks the bar New would draw on a terminal: a counted bar
// for a known total and a spinner for an unknown one, both drawing their
// label and finishing without error.
func TestDraw(t *testing.T) {
	for _, tc := range []struct {
		name  string
		total int
	}{
		{"known total", 100},
		{"unknown total", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			bar := draw(&buf, tc.total, "rows")
			bar.Add(10)
			bar.Finish()
			bar.Finish()
			if !bytes.Contains(buf.Bytes(), []byte("rows")) {
				t.Errorf("output %q lacks the label", buf.String())
			}
			// An unknown length is a spinner with a count, never a made-up
			// total such as MaxInt32 (the event-mode bar once showed one).
			if bytes.Contains(buf.Bytes(), []byte("2147483647")) {
				t.Errorf("output %q shows a made-up total", buf.String())
			}
		})
	}
}

// pending returns how many bytes wait in the pipe r, without blocking
// for long: a pipe that nobody wrote to times out empty.
func pending(t *testing.T, r *os.File) int {
	t.Helper()
	if err := r.SetReadDeadline(time.Now().Add(10 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	n, _ := r.Read(make([]byte, 4096))
	return n
}
