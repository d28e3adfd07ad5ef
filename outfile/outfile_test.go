package outfile

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dpal-dev/dpal/internal/crashtest"
)

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state")
	for _, content := range []string{"first", "second, longer", "3"} {
		if err := WriteFile(path, 0o600, func(w io.Writer) error { _, err := io.WriteString(w, content); return err }); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != content {
			t.Fatalf("read %q, %v; want %q", got, err, content)
		}
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	t.Run("failed write keeps the old file", func(t *testing.T) {
		err := WriteFile(path, 0o600, func(w io.Writer) error { io.WriteString(w, "partial"); return fmt.Errorf("boom") })
		if err == nil {
			t.Fatal("no error")
		}
		if got, _ := os.ReadFile(path); string(got) != "3" {
			t.Errorf("file is %q after a failed write", got)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 1 {
			t.Errorf("temporary files left: %v", ents)
		}
	})
}

func TestProbe(t *testing.T) {
	dir := t.TempDir()
	ro := filepath.Join(dir, "ro")
	if err := os.Mkdir(ro, 0o500); err != nil {
		t.Fatal(err)
	}
	roFile := filepath.Join(dir, "rofile")
	if err := os.WriteFile(roFile, nil, 0o400); err != nil {
		t.Fatal(err)
	}
	writable := os.Getuid() != 0 // root writes anywhere
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		ok         bool
	}{
		{"unset", "", true},
		{"stdout", "-", true},
		{"new file", filepath.Join(dir, "new"), true},
		{"directory", dir, false},
		{"missing directory", filepath.Join(dir, "nope", "f"), false},
		{"read-only directory", filepath.Join(ro, "f"), !writable},
		{"read-only file", roFile, !writable},
		{"fifo without a reader", fifo, true},
		{"device", os.DevNull, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Probe(tc.path)
			if (err == nil) != tc.ok {
				t.Errorf("Probe(%s) = %v, want ok %v", tc.path, err, tc.ok)
			}
			if err := ProbeReplace(tc.path); err == nil && !tc.ok {
				t.Errorf("ProbeReplace(%s) passed", tc.path)
			}
			if _, err := os.Stat(filepath.Join(dir, "new")); err == nil {
				t.Error("the probe left the file behind")
			}
		})
	}
	if err := ProbeDir(filepath.Join(dir, "made", "here")); err != nil {
		t.Errorf("ProbeDir: %v", err)
	}
}

func TestCheckDistinct(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.csv")
	if err := os.WriteFile(in, []byte("1,2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.csv")
	if err := os.Symlink(in, link); err != nil {
		t.Fatal(err)
	}
	hard := filepath.Join(dir, "hard.csv")
	if err := os.Link(in, hard); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o700)
	for _, tc := range []struct {
		name    string
		outs    []Path
		wantErr string
	}{
		{"distinct", []Path{{"--out", filepath.Join(dir, "out")}}, ""},
		{"same path", []Path{{"--out", in}}, "--out"},
		{"relative spelling", []Path{{"--out", filepath.Join(sub, "..", "in.csv")}}, "--input"},
		{"symlink", []Path{{"--save-state", link}}, "--save-state"},
		{"hard link", []Path{{"--out", hard}}, "--input"},
		{"two outputs", []Path{{"--out", filepath.Join(dir, "o")}, {"--save-state", filepath.Join(dir, "o")}}, "--save-state are the same"},
		{"stdout twice", []Path{{"--out", "-"}, {"--posterior-out", "-"}}, ""},
		{"unset", []Path{{"--out", ""}, {"--save-state", ""}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckDistinct(tc.outs, []Path{{"--input", in}, {"--labels", ""}})
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("got %v, want %q", err, tc.wantErr)
			}
		})
	}
}

// The crash test's child is this test binary run with -test.run of
// TestCrashChild; crashPathEnv names the file it rewrites.
const (
	crashPathEnv  = "DPAL_OUTFILE_CRASH_PATH"
	crashNaiveEnv = "DPAL_OUTFILE_CRASH_NAIVE" // 1: truncate in place (the old --save-state), to see the test catch it
	crashSeedEnv  = "DPAL_OUTFILE_CRASH_SEED"
	crashKills    = 60
)

// crashContent is generation g of the file: a header naming g and the
// hash of a body of about 200 KiB, so that a write takes a while.
func crashContent(g int) []byte {
	body := bytes.Repeat([]byte(strconv.Itoa(g)+" "), 200<<10/(len(strconv.Itoa(g))+1))
	sum := sha256.Sum256(body)
	return append([]byte(fmt.Sprintf("gen %d %s\n", g, hex.EncodeToString(sum[:]))), body...)
}

// parseCrashContent returns the generation of a whole file, or an error.
func parseCrashContent(b []byte) (int, error) {
	head, body, ok := bytes.Cut(b, []byte("\n"))
	var g int
	var sum string
	if !ok {
		return 0, fmt.Errorf("%d bytes, no header line", len(b))
	}
	if _, err := fmt.Sscanf(string(head), "gen %d %s", &g, &sum); err != nil {
		return 0, fmt.Errorf("header %q: %v", head, err)
	}
	if h := sha256.Sum256(body); hex.EncodeToString(h[:]) != sum {
		return 0, fmt.Errorf("generation %d is torn (%d body bytes)", g, len(body))
	}
	return g, nil
}

// TestCrashChild rewrites the file at crashPathEnv with ever newer
// generations until it is killed.
func TestCrashChild(t *testing.T) {
	path := os.Getenv(crashPathEnv)
	if path == "" {
		t.Skip("the child of TestCrashAtomic")
	}
	b, _ := os.ReadFile(path)
	g, _ := parseCrashContent(b)
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		g++
		content := crashContent(g)
		write := func(w io.Writer) error { _, err := w.Write(content); return err }
		var err error
		if os.Getenv(crashNaiveEnv) == "1" {
			var f *os.File
			if f, err = os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600); err == nil {
				_, err = f.Write(content)
				f.Close()
			}
		} else {
			err = WriteFile(path, 0o600, write)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestCrashAtomic SIGKILLs a process rewriting a file at random moments
// and checks after each kill that the file is a whole generation, never
// older than the last one seen.
func TestCrashAtomic(t *testing.T) {
	if os.Getenv(crashPathEnv) != "" {
		t.Skip("in the child")
	}
	rng := crashtest.Rand(t, crashSeedEnv)
	dir := t.TempDir()
	path := filepath.Join(dir, "state")
	if err := WriteFile(path, 0o600, func(w io.Writer) error { _, err := w.Write(crashContent(0)); return err }); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	last, advanced, torn := 0, 0, 0
	for kill := range crashKills {
		if !crashtest.Kill(t, crashtest.Child("TestCrashChild", crashPathEnv+"="+path), time.Duration(2+rng.IntN(30))*time.Millisecond) {
			t.Fatal("child ended by itself")
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("kill %d: %v", kill, err)
		}
		g, err := parseCrashContent(b)
		if err != nil {
			torn++
			t.Errorf("kill %d: %v", kill, err)
			continue
		}
		if g < last { // only after a torn file made the child start over
			t.Errorf("kill %d: generation %d after %d", kill, g, last)
		}
		if g > last {
			advanced++
		}
		last = g
	}
	ents, _ := os.ReadDir(dir)
	t.Logf("%d kills in %v: %d left a newer whole file, %d the previous whole file, %d a torn one; %d generations written; %d temporary files left by the last kill",
		crashKills, time.Since(start).Round(time.Millisecond), advanced, crashKills-advanced-torn, torn, last, len(ents)-1)
	if err := WriteFile(path, 0o600, func(w io.Writer) error { _, err := w.Write(crashContent(last + 1)); return err }); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("the next write left %d temporary files", len(ents)-1)
	}
	if advanced == 0 {
		t.Error("no child wrote anything before it was killed")
	}
}
