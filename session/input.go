package session

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/dpal-dev/dpal/active/stream"
)

// Segment is one event input a learner has consumed, as far as it has:
// its first Bytes bytes (Lines lines), identified by their SHA-256 (Hash)
// and by that of their first headBytes bytes (Head), which a resume can
// check before it handles any event.
type Segment struct {
	Input string `json:"input"`
	Bytes int64  `json:"bytes"`
	Lines int    `json:"lines"`
	Head  string `json:"head"`
	Hash  string `json:"hash"`
}

// headBytes is how much of an input Open reads ahead to recognise a
// consumed one: an input whose first min(Bytes, headBytes) bytes are a
// segment's is that input again. A short head catches a replay even when
// the input was edited further on; an edit within it makes a new input.
const headBytes = 4 << 10

// ErrReplay is wrapped by Open's error for an input that starts with
// events the state has consumed but then differs from what it consumed:
// its first records would be fed to the learner twice.
var ErrReplay = errors.New("the input replays events the state has already consumed")

// Open prepares the event source r. A resumed learner's saved segments
// decide where it starts: an input that begins like a consumed one (same
// first min(Bytes, 4 KiB) bytes) is that input again, and its consumed
// events are skipped by offset (and so are their labels), after checking
// that all Bytes bytes match; with Replay it is read from its start
// instead and the learner is charged again (stream.Learner.Rerun). Any
// other input is a new segment.
//
// Only a resume reads ahead, and only as far as the longest head it must
// compare: on a live pipe its first event waits for those bytes (or the
// end of the input). A new run reads nothing ahead.
func (e *Events) Open(r io.Reader) error {
	var want int64
	for _, s := range e.Info.Segments {
		want = max(want, min(s.Bytes, headBytes))
	}
	br := bufio.NewReaderSize(r, headBytes)
	head, _ := br.Peek(int(want)) // short at EOF; a read error recurs in Next
	e.hash = sha256.New()
	e.head = make([]byte, 0, headBytes)
	e.in = stream.NewLineReaderTee(br, consumedTee{e})
	match := -1
	for i, s := range e.Info.Segments {
		n := min(s.Bytes, headBytes)
		if n > 0 && int64(len(head)) >= n && hashHex(head[:n]) == s.Head &&
			(match < 0 || s.Bytes > e.Info.Segments[match].Bytes) {
			match = i
		}
	}
	switch {
	case match >= 0 && e.Replay:
		if err := e.Learner.Rerun(); err != nil {
			return err
		}
		e.Info.Replays++
	case match >= 0:
		e.seg = match
		return e.skip(e.Info.Segments[match])
	case e.Replay:
		return fmt.Errorf("--replay: %s is not an input the state has consumed", e.Input)
	}
	e.seg = -1 // a new segment, saved once it has consumed something
	e.done = Segment{Input: e.Input}
	return nil
}

// skip reads past the consumed part of an input, and as many labels.
func (e *Events) skip(s Segment) error {
	for e.in.Offset() < s.Bytes {
		_, _, err := e.in.Next()
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("%w: %s ends at byte %d, before the %d bytes of %s it would continue", ErrReplay, e.Input, e.in.Offset(), s.Bytes, s.Input)
		}
		if err != nil {
			return err
		}
		if _, _, err := e.nextLabel(); err != nil {
			return err
		}
		e.Skipped++
	}
	if got := hex.EncodeToString(e.hash.Sum(nil)); e.in.Offset() != s.Bytes || got != s.Hash {
		return fmt.Errorf("%w: %s starts like %s but its first %d bytes differ; pass --replay to charge its records again", ErrReplay, e.Input, s.Input, s.Bytes)
	}
	e.done = s
	e.done.Input = e.Input
	return nil
}

// headHash is the hash of the input's first min(n, headBytes) bytes.
func (e *Events) headHash(n int64) string {
	return hashHex(e.head[:min(n, int64(len(e.head)))])
}

func hashHex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// consumedTee takes the bytes the line reader consumes: all go into the
// hash, the first headBytes into the head.
type consumedTee struct{ e *Events }

func (t consumedTee) Write(b []byte) (int, error) {
	t.e.hash.Write(b)
	if room := headBytes - len(t.e.head); room > 0 {
		t.e.head = append(t.e.head, b[:min(room, len(b))]...)
	}
	return len(b), nil
}

// RecoverOut completes the output of the run that wrote the checkpoint
// info: its last outbox may not have reached its --out file when it
// stopped. A file that holds it is left alone; one cut short is cut back
// to where the outbox starts and the outbox is written again (the same
// bytes), then synced. It returns the lines it could not put back there
// (an output on a standard stream, or a file gone or shorter than the
// checkpoint says): the caller writes those to the new output.
func RecoverOut(info *StreamInfo) ([]json.RawMessage, error) {
	if len(info.Outbox) == 0 {
		return nil, nil
	}
	if info.Out == "" {
		return info.Outbox, nil
	}
	var box []byte
	for _, l := range info.Outbox {
		box = append(append(box, l...), '\n')
	}
	f, err := os.OpenFile(info.Out, os.O_RDWR, 0)
	if err != nil {
		return info.Outbox, nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() < info.OutStart {
		return info.Outbox, nil
	}
	have := make([]byte, len(box))
	if n, _ := f.ReadAt(have, info.OutStart); n == len(box) && bytes.Equal(have, box) {
		return nil, nil
	}
	if err := f.Truncate(info.OutStart); err != nil {
		return nil, fmt.Errorf("recovering %s: %w", info.Out, err)
	}
	if _, err := f.WriteAt(box, info.OutStart); err != nil {
		return nil, fmt.Errorf("recovering %s: %w", info.Out, err)
	}
	return nil, f.Sync()
}
