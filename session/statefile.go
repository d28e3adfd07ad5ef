package session

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/dpal-dev/dpal/active/stream"
	"github.com/dpal-dev/dpal/outfile"
)

// A state file is a learner's saved state (stream.Learner.SaveState) in an
// envelope that carries an HMAC-SHA256 of it:
//
//	{"format":"dpal-stream-state","mac":"<hex>","state":{...}}
//
// Threat model. The state holds the learner's own ledger and its budget,
// its counters and its stream position, so whoever edits it could reset
// the spend or raise the budget and then release more than the budget
// allows. The MAC makes such an edit (or any corruption) fail the resume,
// as long as the editor does not hold the key. The key lives apart from
// the state files: in DPAL_STATE_KEY, or in a key file (DPAL_STATE_KEY_FILE,
// default <user config dir>/dpal/state.key, created with mode 0600), so a
// state copied to shared or backed-up storage travels without it. It does
// not protect against someone who runs as the operator (who can read the
// key) or who replaces the whole state by an older authentic one: that
// rollback is what the durable --ledger store is for, since it only grows.
// Independently of the MAC, Restore refuses a saved ledger whose budget
// exceeds the learner's ε_s + ε_g.
const (
	// StateFormat is the "format" a state file's envelope starts with.
	StateFormat = "dpal-stream-state"
	stateFormat = StateFormat
	// StateKeyEnv, when set, is the MAC key itself (at least 16 bytes).
	StateKeyEnv = "DPAL_STATE_KEY"
	// StateKeyFileEnv names the key file to use instead of the default.
	StateKeyFileEnv = "DPAL_STATE_KEY_FILE"
	minKeyLen       = 16
)

// ErrStateMAC is wrapped by ReadState's error for a state whose MAC does
// not match: it was edited, corrupted, or written under another key.
var ErrStateMAC = errors.New("state file failed its integrity check")

type stateEnvelope struct {
	Format string          `json:"format"`
	MAC    string          `json:"mac"`
	State  json.RawMessage `json:"state"`
}

// StateKey returns the key that authenticates state files: DPAL_STATE_KEY,
// else the key file, which is created (32 random bytes, hex, mode 0600)
// when it does not exist. A key file readable by others is refused.
func StateKey() ([]byte, error) {
	if k := os.Getenv(StateKeyEnv); k != "" {
		if len(k) < minKeyLen {
			return nil, fmt.Errorf("%s: the key must have at least %d bytes", StateKeyEnv, minKeyLen)
		}
		return []byte(k), nil
	}
	path := os.Getenv(StateKeyFileEnv)
	if path == "" {
		dir, err := os.UserConfigDir()
		if err != nil {
			return nil, fmt.Errorf("state key: %w (set %s or %s)", err, StateKeyEnv, StateKeyFileEnv)
		}
		path = filepath.Join(dir, "dpal", "state.key")
	}
	return readOrCreateKey(path)
}

func readOrCreateKey(path string) ([]byte, error) {
	if fi, err := os.Stat(path); err == nil {
		if fi.Mode().Perm()&0o077 != 0 {
			return nil, fmt.Errorf("state key %s has mode %v: others may read it; chmod 600 it", path, fi.Mode().Perm())
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("state key: %w", err)
		}
		if b = bytes.TrimSpace(b); len(b) < minKeyLen {
			return nil, fmt.Errorf("state key %s: shorter than %d bytes", path, minKeyLen)
		}
		return b, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("state key: %w", err)
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, fmt.Errorf("state key: %w", err)
	}
	key := []byte(hex.EncodeToString(raw[:]))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) { // another process made it first
		return readOrCreateKey(path)
	}
	if err != nil {
		return nil, fmt.Errorf("state key: %w", err)
	}
	_, err = f.Write(append(key, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("state key: %w", err)
	}
	return key, nil
}

func stateMAC(key []byte, format string, state []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(format))
	m.Write(state)
	return m.Sum(nil)
}

// WriteState writes l's state, authenticated with key, to w.
func WriteState(w io.Writer, l *stream.Learner, key []byte) error {
	var buf bytes.Buffer
	if err := l.SaveState(&buf); err != nil {
		return err
	}
	return Seal(w, buf.Bytes(), key)
}

// Seal writes the state file of state (the JSON of stream.Learner.SaveState),
// authenticated with key, to w.
func Seal(w io.Writer, state, key []byte) error { return SealAs(w, stateFormat, state, key) }

// SealAs writes state (JSON) in the same authenticated envelope under
// another format name, for state that is not a stream learner's (a DP-SGD
// run's checkpoint). The MAC covers the format, so a state of one kind
// never passes for another.
func SealAs(w io.Writer, format string, state, key []byte) error {
	state = bytes.TrimSpace(state)
	return json.NewEncoder(w).Encode(stateEnvelope{Format: format, MAC: hex.EncodeToString(stateMAC(key, format, state)), State: state})
}

// SaveSealed replaces the file at path atomically (outfile.WriteFile, mode
// 0600) with state sealed as format (SealAs).
func SaveSealed(path, format string, state, key []byte) error {
	return outfile.WriteFile(path, 0o600, func(w io.Writer) error { return SealAs(w, format, state, key) })
}

// SaveState replaces the state file at path atomically (outfile.WriteFile,
// mode 0600): a crash leaves the previous state or this one.
func SaveState(path string, l *stream.Learner, key []byte) error {
	return outfile.WriteFile(path, 0o600, func(w io.Writer) error { return WriteState(w, l, key) })
}

// ReadState reads a state file and returns the state inside it once its
// MAC checks out under key. A plain state without the envelope (written
// before state files were authenticated) is refused.
func ReadState(rd io.Reader, key []byte) ([]byte, error) { return Unseal(rd, stateFormat, key) }

// Unseal reads a file sealed as format (SealAs) and returns the state
// inside it once its MAC checks out under key.
func Unseal(rd io.Reader, format string, key []byte) ([]byte, error) {
	var env stateEnvelope
	if err := json.NewDecoder(rd).Decode(&env); err != nil {
		return nil, err
	}
	if env.Format != format {
		return nil, fmt.Errorf("%w: not an authenticated %s (format %q); states written before dpal authenticated them cannot be resumed", ErrStateMAC, format, env.Format)
	}
	want, err := hex.DecodeString(env.MAC)
	if err != nil || !hmac.Equal(want, stateMAC(key, format, env.State)) {
		return nil, fmt.Errorf("%w: it was modified, or written under another key (%s / %s)", ErrStateMAC, StateKeyEnv, StateKeyFileEnv)
	}
	return env.State, nil
}
