package session

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"

	"github.com/dpal-dev/dpal/active/stream"
)

// Events runs a learner over an event source, one line per event, writing
// request, release and rejected lines to Out. A bad event (unparsable, or
// out of the declared bounds) is rejected and the run goes on; any other
// error (the budget, the label source, the output) stops it.
//
// Rejection policy: the public line says only RejectedClass and the line
// number; the parse or bound error, which can carry the record's values,
// goes to Log (the operator's log) only.
//
// Crash safety (docs/event-mode.md). With Save set, no line reaches Out
// before a checkpoint (Save of the learner's state, whose stream info
// records the lines, the input consumed and Out's length) accounts for
// it: lines wait in an outbox, a checkpoint saves the state, then the
// outbox is appended to Out and Out is synced. A crash therefore loses at
// most events whose lines never left, and a resume on the same input skips
// by offset exactly the events the last checkpoint covers (Open), so no
// request id or update number that left is ever issued again.
type Events struct {
	// Learner is the learner; nil until the first valid event, when New
	// creates it (a resumed run sets it before Open).
	Learner *stream.Learner
	// New creates the learner: for Dim, or, when Dim is 0, for the
	// dimension of the first valid event (one the learner accepts).
	New func(dim int) (*stream.Learner, error)
	// Dim is the declared event dimension (--dim); 0 takes it from the
	// first valid event, so a malformed first line cannot fix it.
	Dim int
	// Resumed names the state a resumed Learner came from ("" if none).
	Resumed string
	// Input names the event source in errors and in the saved segments.
	Input string
	// Labels, when set, holds the oracle's label for each event line.
	Labels *stream.LineReader
	// Out receives the output lines; Sync, when set, makes them durable.
	Out  io.Writer
	Sync func() error
	// OutPath is Out's resolved path ("" for a standard stream) and
	// OutSize its length before this run's lines; both go into the
	// checkpoints, for RecoverOut.
	OutPath string
	OutSize int64
	// Save, when set, writes the learner's state durably: the checkpoint.
	Save func(*stream.Learner) error
	// Every is the number of event lines between checkpoints (≤ 0: 256).
	Every int
	// Replay feeds a resumed learner an input it has already consumed
	// from its start, charging its records again (stream.Learner.Rerun)
	// instead of skipping them.
	Replay bool
	// Log receives the private details of rejected events.
	Log *slog.Logger
	// Progress, when set, is called every progressEvery lines.
	Progress func(n int)

	// Rejected counts the rejected events, Accepted those the learner
	// observed in this run; Skipped the event lines of a resumed input
	// that the state had consumed and Open skipped.
	Rejected, Accepted, Skipped int
	// Info is the stream info saved with each checkpoint.
	Info StreamInfo

	x      []float64
	seen   bool // an event has reached the learner in this run
	hinted bool // the operator log has been told about --dim
	in     *stream.LineReader
	head   []byte    // the input's first headBytes bytes
	hash   hash.Hash // of the bytes in has consumed
	seg    int       // index of this input's segment in Info.Segments
	done   Segment   // this input as consumed up to the last handled event
	box    bytes.Buffer
	since  int // event lines since the last checkpoint
}

// defaultEvery is the checkpoint interval when Events.Every is unset.
const defaultEvery = 256

// Begin writes the meta line straight to Out: it holds only settings.
func (e *Events) Begin(meta Meta) error {
	b, err := json.Marshal(meta)
	if err != nil {
		return err
	}
	n, err := e.Out.Write(append(b, '\n'))
	e.OutSize += int64(n)
	if err == nil && e.Save != nil && e.Sync != nil {
		// Durable before any checkpoint records OutSize past it.
		err = e.Sync()
	}
	return err
}

// Run reads every event of the input given to Open. An input whose every
// event was rejected, or that holds none for a new learner, is an error:
// the run did nothing its operator asked for, and must not exit as if it
// had.
func (e *Events) Run() error {
	for {
		line, lineNo, err := e.in.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err == nil {
			err = e.Event(line, lineNo)
		}
		if err == nil {
			err = e.maybeCheckpoint()
		}
		if err != nil {
			return err
		}
		if e.Progress != nil && lineNo%progressEvery == 0 {
			e.Progress(progressEvery)
		}
	}
	switch {
	case e.Accepted == 0 && e.Rejected > 0:
		return fmt.Errorf("%s: no event accepted: all %d rejected (details in the log)", e.Input, e.Rejected)
	case e.Learner == nil:
		return fmt.Errorf("%s: no events", e.Input)
	}
	return nil
}

// Event handles one input line: parse, observe, request, label, release.
// Run calls it for each line of the input given to Open; a caller that
// feeds lines itself gets no resume offsets.
func (e *Events) Event(line []byte, lineNo int) error {
	y, haveY, err := e.nextLabel()
	if err != nil {
		return err
	}
	if e.x, err = stream.ParseEvent(line, e.x); err != nil {
		return e.reject(lineNo, err)
	}
	if err := e.ensureLearner(e.x); err != nil {
		if errors.Is(err, stream.ErrInvalidEvent) {
			return e.reject(lineNo, err)
		}
		return err
	}
	e.seen = true
	dec, rejected, err := Observe(e.Learner, e.x)
	if rejected {
		e.hintDim()
		return e.reject(lineNo, err)
	}
	if err != nil {
		return fmt.Errorf("%s line %d: %w", e.Input, lineNo, err)
	}
	e.Accepted++
	e.consumed(lineNo)
	if dec.Request {
		if err := e.encode(Record{Type: "request", ID: dec.ID, Line: lineNo}); err != nil {
			return err
		}
		if haveY {
			if err := e.Learner.Label(dec.ID, y); err != nil {
				return fmt.Errorf("%s line %d: %w", e.Input, lineNo, err)
			}
		}
	}
	return e.writeReleases()
}

// Finish flushes the last window, writes its release and ends the run
// (Stop).
func (e *Events) Finish() error {
	if err := e.Learner.Flush(); err != nil {
		return err
	}
	if err := e.writeReleases(); err != nil {
		return err
	}
	return e.Stop()
}

// Stop ends a run, finished or failed: a last checkpoint, then, once its
// outbox is in Out, the state again without it, so that a resume does
// not write those lines a second time (RecoverOut).
func (e *Events) Stop() error {
	if err := e.Checkpoint(); err != nil {
		return err
	}
	if e.Save == nil || e.Learner == nil || e.Info.Outbox == nil {
		return nil
	}
	e.Info.Outbox, e.Info.OutStart = nil, e.OutSize
	if err := SetInfo(e.Learner, e.Info); err != nil {
		return err
	}
	return e.Save(e.Learner)
}

// consumed records that the input up to the end of line lineNo has been
// handled: a checkpoint covers it, and a resume skips it.
func (e *Events) consumed(lineNo int) {
	e.since++
	if e.in == nil { // Event called without Open: nothing to record
		return
	}
	e.done.Bytes, e.done.Lines = e.in.Offset(), lineNo
	e.done.Hash = hex.EncodeToString(e.hash.Sum(nil))
}

func (e *Events) encode(r Record) error {
	if e.Save == nil {
		return json.NewEncoder(e.Out).Encode(r)
	}
	return json.NewEncoder(&e.box).Encode(r)
}

// writeReleases writes the learner's new releases (TakeReleases).
func (e *Events) writeReleases() error {
	for _, r := range TakeReleases(e.Learner) {
		if err := e.encode(Record{Type: "release", Observation: r.Observation, Update: r.Update, W: r.W}); err != nil {
			return err
		}
	}
	return nil
}

func (e *Events) maybeCheckpoint() error {
	every := e.Every
	if every <= 0 {
		every = defaultEvery
	}
	if e.since < every {
		return nil
	}
	return e.Checkpoint()
}

// Checkpoint saves the learner's state, with the outbox and the input
// consumed in its stream info, then appends the outbox to Out and syncs
// it. Without Save it only syncs Out. Before the first valid event there
// is no learner: the outbox then holds only rejected lines, which spend
// nothing, and goes straight out.
func (e *Events) Checkpoint() error {
	e.since = 0
	if e.Save != nil && e.Learner != nil {
		e.Info.Mode = ModeEvents
		if e.done.Bytes > 0 {
			e.done.Head = e.headHash(e.done.Bytes)
			if e.seg < 0 {
				e.Info.Segments, e.seg = append(e.Info.Segments, Segment{}), len(e.Info.Segments)
			}
			e.Info.Segments[e.seg] = e.done
		}
		e.Info.Out, e.Info.OutStart = e.OutPath, e.OutSize
		e.Info.Outbox = splitLines(e.box.Bytes())
		if err := SetInfo(e.Learner, e.Info); err != nil {
			return err
		}
		if err := e.Save(e.Learner); err != nil {
			return fmt.Errorf("checkpoint: %w", err)
		}
	}
	n, err := e.Out.Write(e.box.Bytes())
	e.OutSize += int64(n)
	e.box.Reset()
	if err == nil && e.Sync != nil {
		err = e.Sync()
	}
	return err
}

// splitLines cuts an outbox into its JSON lines.
func splitLines(b []byte) []json.RawMessage {
	var out []json.RawMessage
	for len(b) > 0 {
		line, rest, _ := bytes.Cut(b, []byte{'\n'})
		out = append(out, json.RawMessage(line))
		b = rest
	}
	return out
}

// ensureLearner creates the learner (for Dim, else for the dimension of
// x, which must then be an event the learner accepts: an invalid first
// line does not fix the dimension, and its error wraps
// stream.ErrInvalidEvent), or checks a resumed learner's dimension against
// the first event's: a file of another dimension is the operator's error,
// not a bad record.
func (e *Events) ensureLearner(x []float64) error {
	if e.Learner == nil {
		dim := len(x)
		if e.Dim > 0 {
			dim = e.Dim
		}
		l, err := e.New(dim)
		if err != nil {
			return err
		}
		if e.Dim == 0 {
			// Nothing was charged yet: a learner made for an invalid
			// event is simply not kept.
			if err := l.Check(x); err != nil {
				return err
			}
		}
		e.Learner = l
		// Saved before its first charge: a crash from here on resumes
		// this learner, whose run id a durable ledger knows, instead of
		// starting another that would pay again.
		return e.Checkpoint()
	}
	if !e.seen && e.Dim == 0 && e.Learner.Config().Dim != len(x) {
		return fmt.Errorf("--resume %s: state has dimension %d, the events %d", e.Resumed, e.Learner.Config().Dim, len(x))
	}
	return nil
}

// hintDim tells the operator log, once, that events of another dimension
// than the learner's arrive and that --dim declares it.
func (e *Events) hintDim() {
	if e.Dim != 0 || e.hinted || len(e.x) == e.Learner.Config().Dim {
		return
	}
	e.hinted = true
	e.warn("dpal stream: events of another dimension than the learner's (from the first valid event, or the resumed state); declare it with --dim",
		"input", e.Input, "dim", e.Learner.Config().Dim)
}

// reject writes the public rejected line and logs the details privately.
func (e *Events) reject(lineNo int, err error) error {
	e.Rejected++
	e.warn("dpal stream: event rejected", "input", e.Input, "line", lineNo, "err", err)
	e.consumed(lineNo)
	return e.encode(Record{Type: "rejected", Line: lineNo, Error: RejectedClass})
}

// warn writes to the operator log, if there is one.
func (e *Events) warn(msg string, args ...any) {
	if e.Log != nil {
		e.Log.Warn(msg, args...)
	}
}

// nextLabel reads the oracle's label for the next event line, if any.
func (e *Events) nextLabel() (float64, bool, error) {
	if e.Labels == nil {
		return 0, false, nil
	}
	line, lineNo, err := e.Labels.Next()
	if errors.Is(err, io.EOF) {
		return 0, false, fmt.Errorf("--labels: fewer labels than events in %s", e.Input)
	}
	if err != nil {
		return 0, false, fmt.Errorf("--labels: %w", err)
	}
	y, err := stream.ParseLabel(line)
	if err != nil {
		return 0, false, fmt.Errorf("--labels line %d: %w", lineNo, err)
	}
	return y, true, nil
}

// ApplyAnswers gives a resumed learner the oracle's late labels for
// requests it saved as pending: lines "id,y" or {"id": N, "y": ±1}. name
// labels errors.
func ApplyAnswers(l *stream.Learner, answers *stream.LineReader, name string) error {
	for {
		line, n, err := answers.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		id, y, err := stream.ParseAnswer(line)
		if err == nil {
			err = l.Label(id, y)
		}
		if err != nil {
			return fmt.Errorf("%s line %d: %w", name, n, err)
		}
	}
}
