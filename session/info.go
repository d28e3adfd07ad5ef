package session

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"

	"github.com/dpal-dev/dpal/active/stream"
	"github.com/dpal-dev/dpal/data"
)

// Modes of StreamInfo.
const (
	// ModeDataset: the learner streams a dataset's training split.
	ModeDataset = "dataset"
	// ModeEvents: the learner reads events from a file or stdin.
	ModeEvents = "events"
	// ModeService: the learner is hosted by the service (dpal serve),
	// which keeps its inputs and requests in its store.
	ModeService = "service"
)

// StreamInfo describes the stream a learner consumed; it is saved with the
// state (stream.Learner.SetStreamInfo) so that a resume can check that it
// continues the same stream. In dataset mode the order is the dataset
// (identified by a fingerprint) and its permutation; Events only cuts the
// order short, so a resume may change it.
type StreamInfo struct {
	Mode        string  `json:"mode"`
	Dataset     string  `json:"dataset,omitempty"`
	Rows        int     `json:"rows,omitempty"`
	Fingerprint string  `json:"fingerprint,omitempty"`
	Permutation *uint64 `json:"permutation,omitempty"` // absent: file order
	Events      int     `json:"events,omitempty"`      // events of the run that saved (0 = all)

	// Event mode (Events): the inputs consumed, how many times a consumed
	// input was fed again with --replay (and charged again), and the last
	// checkpoint's outbox with the output file (resolved path, "" for a
	// standard stream) and its length before the outbox (RecoverOut).
	Segments []Segment         `json:"segments,omitempty"`
	Replays  int               `json:"replays,omitempty"`
	Outbox   []json.RawMessage `json:"outbox,omitempty"`
	Out      string            `json:"out,omitempty"`
	OutStart int64             `json:"out_start,omitempty"`
}

// SavedInfo decodes a restored learner's stream info (nil if none).
func SavedInfo(l *stream.Learner) (*StreamInfo, error) {
	raw := l.StreamInfo()
	if raw == nil {
		return nil, nil
	}
	var info StreamInfo
	if err := json.Unmarshal(raw, &info); err != nil {
		return nil, fmt.Errorf("stream info: %w", err)
	}
	return &info, nil
}

// SetInfo records info in l for its saved state.
func SetInfo(l *stream.Learner, info StreamInfo) error {
	b, err := json.Marshal(info)
	if err != nil {
		return err
	}
	return l.SetStreamInfo(b)
}

// DescribeOrder names a stream order for error messages.
func DescribeOrder(perm *uint64) string {
	if perm == nil {
		return "file order"
	}
	return fmt.Sprintf("the permutation of seed %d", *perm)
}

// CheckResumedOrder refuses a resume whose stream is not the saved one:
// skipping the first Observed events of another order would feed records
// twice while the ledger charges each group once. path names the state in
// errors.
func CheckResumedOrder(l *stream.Learner, path string, now StreamInfo) error {
	was, err := SavedInfo(l)
	if err != nil {
		return fmt.Errorf("--resume %s: %w", path, err)
	}
	switch {
	case was == nil && now.Mode == ModeDataset:
		return fmt.Errorf("--resume %s: the state does not record its stream order, so dataset mode cannot tell which events it has seen", path)
	case was == nil:
		return nil
	case was.Mode != now.Mode:
		return fmt.Errorf("--resume %s: the state was written in %s mode; resume it in the same mode", path, was.Mode)
	case now.Mode != ModeDataset:
		return nil
	case was.Fingerprint != now.Fingerprint || was.Rows != now.Rows:
		return fmt.Errorf("--resume %s: the state streamed %s (%d rows, fingerprint %s), not %s (%d rows, fingerprint %s): pass the same --dataset, --data-dir and --kdd-paper-encoding",
			path, was.Dataset, was.Rows, was.Fingerprint, now.Dataset, now.Rows, now.Fingerprint)
	case (was.Permutation == nil) != (now.Permutation == nil) ||
		was.Permutation != nil && *was.Permutation != *now.Permutation:
		return fmt.Errorf("--resume %s: the state streamed the training split in %s, this run would use %s: pass the same --shuffle (or --seed)",
			path, DescribeOrder(was.Permutation), DescribeOrder(now.Permutation))
	}
	return nil
}

// Fingerprint identifies a training split for a resume: its name, size,
// dimension and every 97th row.
func Fingerprint(name string, train *data.Dataset) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s|%s|%d|%d|", name, train.Name, train.Len(), train.Dim())
	HashRows(h, train)
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// HashRows writes every 97th row of ds (features, then label) to h.
func HashRows(h io.Writer, ds *data.Dataset) {
	var buf [8]byte
	for i := 0; i < ds.Len(); i += 97 {
		for _, v := range ds.X[i] {
			binary.LittleEndian.PutUint64(buf[:], math.Float64bits(v))
			h.Write(buf[:])
		}
		binary.LittleEndian.PutUint64(buf[:], math.Float64bits(ds.Y[i]))
		h.Write(buf[:])
	}
}
