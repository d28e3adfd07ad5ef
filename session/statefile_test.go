package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpal-dev/dpal/active/stream"
	"github.com/dpal-dev/dpal/dp/rng"
)

// TestStateMAC: a sealed state reads back; any edit, another key or an
// unsealed state is refused.
func TestStateMAC(t *testing.T) {
	l, err := stream.New(stream.DefaultConfig(2), rng.Seeded(1), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Observe([]float64{0.1, 0.2}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "state")
	if err := SaveState(path, l, testKey); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("state mode %v, want 0600", fi.Mode().Perm())
	}
	sealed, _ := os.ReadFile(path)
	raw, err := ReadState(bytes.NewReader(sealed), testKey)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Restore(bytes.NewReader(raw), rng.Seeded(1), nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		file []byte
		key  []byte
	}{
		{"budget raised", bytes.Replace(sealed, []byte(`"epsilon":2`), []byte(`"epsilon":1e9`), 1), testKey},
		{"one digit", bytes.Replace(sealed, []byte(`"observed":1`), []byte(`"observed":0`), 1), testKey},
		{"other key", sealed, []byte("another key of 16+ bytes")},
		{"unsealed", raw, testKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if bytes.Equal(tc.file, sealed) && bytes.Equal(tc.key, testKey) {
				t.Fatal("the edit changed nothing")
			}
			if _, err := ReadState(bytes.NewReader(tc.file), tc.key); !errors.Is(err, ErrStateMAC) {
				t.Errorf("got %v, want ErrStateMAC", err)
			}
		})
	}
}

func TestStateKey(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(StateKeyEnv, "")
	path := filepath.Join(dir, "sub", "state.key")
	t.Setenv(StateKeyFileEnv, path)
	k1, err := StateKey()
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file %v, %v; want mode 0600", fi, err)
	}
	if k2, err := StateKey(); err != nil || !bytes.Equal(k1, k2) || len(k1) < 32 {
		t.Errorf("second read: %q, %v (first %q)", k2, err, k1)
	}
	os.Chmod(path, 0o644)
	if _, err := StateKey(); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("key readable by others: %v", err)
	}
	t.Setenv(StateKeyEnv, "short")
	if _, err := StateKey(); err == nil {
		t.Error("a 5-byte key was accepted")
	}
	t.Setenv(StateKeyEnv, "a key from the environment")
	if k, err := StateKey(); err != nil || string(k) != "a key from the environment" {
		t.Errorf("key %q, %v", k, err)
	}
}

// The state's stream info round-trips its event-mode fields.
func TestStreamInfoEvents(t *testing.T) {
	info := StreamInfo{Mode: ModeEvents, Segments: []Segment{{Input: "a", Bytes: 10, Lines: 2, Head: "h", Hash: "x"}},
		Outbox: []json.RawMessage{json.RawMessage(`{"type":"request","id":1}`)}, Out: "/o", OutStart: 4, Replays: 1}
	l, _ := stream.New(stream.DefaultConfig(2), rng.Seeded(1), nil)
	if err := SetInfo(l, info); err != nil {
		t.Fatal(err)
	}
	got, err := SavedInfo(l)
	if err != nil || got.Segments[0] != info.Segments[0] || string(got.Outbox[0]) != string(info.Outbox[0]) || got.OutStart != 4 || got.Replays != 1 {
		t.Errorf("round trip: %+v, %v", got, err)
	}
}

// A state sealed under another format does not pass for a stream state,
// nor the other way round, and SaveSealed writes a 0600 file.
func TestSealAs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ck")
	if err := SaveSealed(path, "dpal-test-state", []byte(`{"a":1}`), testKey); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	sealed, _ := os.ReadFile(path)
	if raw, err := Unseal(bytes.NewReader(sealed), "dpal-test-state", testKey); err != nil || string(raw) != `{"a":1}` {
		t.Fatalf("%s, %v", raw, err)
	}
	if _, err := ReadState(bytes.NewReader(sealed), testKey); !errors.Is(err, ErrStateMAC) {
		t.Errorf("read as a stream state: %v", err)
	}
	renamed := bytes.Replace(sealed, []byte("dpal-test-state"), []byte(stateFormat), 1)
	if _, err := ReadState(bytes.NewReader(renamed), testKey); !errors.Is(err, ErrStateMAC) {
		t.Errorf("format renamed: %v", err)
	}
}
