package session

import (
	"errors"
	"fmt"
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
type Events struct {
	// Learner is the learner; nil until the first valid event, when New
	// creates it (a resumed run sets it before Run).
	Learner *stream.Learner
	// New creates the learner for the dimension of the first event.
	New func(dim int) (*stream.Learner, error)
	// Resumed names the state a resumed Learner came from ("" if none).
	Resumed string
	// Input names the event source in errors.
	Input string
	// Labels, when set, holds the oracle's label for each event line.
	Labels *stream.LineReader
	// Out receives the output lines.
	Out Sink
	// Log receives the private details of rejected events.
	Log *slog.Logger
	// Progress, when set, is called every progressEvery lines.
	Progress func(n int)

	// Rejected counts the rejected events.
	Rejected int

	x    []float64
	seen bool // an event has reached the learner in this run
}

// Run reads every event of in. A learner that was never created (no valid
// event) is an error.
func (e *Events) Run(in *stream.LineReader) error {
	for {
		line, lineNo, err := in.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err == nil {
			err = e.Event(line, lineNo)
		}
		if err != nil {
			return err
		}
		if e.Progress != nil && lineNo%progressEvery == 0 {
			e.Progress(progressEvery)
		}
	}
	if e.Learner == nil {
		return fmt.Errorf("%s: no events", e.Input)
	}
	return nil
}

// Event handles one input line: parse, observe, request, label, release.
func (e *Events) Event(line []byte, lineNo int) error {
	y, haveY, err := e.nextLabel()
	if err != nil {
		return err
	}
	if e.x, err = stream.ParseEvent(line, e.x); err != nil {
		return e.reject(lineNo, err)
	}
	if err := e.ensureLearner(len(e.x)); err != nil {
		return err
	}
	e.seen = true
	dec, err := e.Learner.Observe(e.x)
	if errors.Is(err, stream.ErrInvalidEvent) {
		return e.reject(lineNo, err)
	}
	if err != nil {
		return fmt.Errorf("%s line %d: %w", e.Input, lineNo, err)
	}
	if dec.Request {
		if err := e.Out.Encode(Record{Type: "request", ID: dec.ID, Line: lineNo}); err != nil {
			return err
		}
		if haveY {
			if err := e.Learner.Label(dec.ID, y); err != nil {
				return fmt.Errorf("%s line %d: %w", e.Input, lineNo, err)
			}
		}
	}
	return WriteReleases(e.Out, e.Learner)
}

// Finish flushes the last window and writes its release.
func (e *Events) Finish() error {
	if err := e.Learner.Flush(); err != nil {
		return err
	}
	return WriteReleases(e.Out, e.Learner)
}

// ensureLearner creates the learner for the first event's dimension, or
// checks a resumed learner's dimension against the first event's: a file
// of another dimension is the operator's error, not a bad record.
func (e *Events) ensureLearner(dim int) error {
	if e.Learner == nil {
		l, err := e.New(dim)
		if err != nil {
			return err
		}
		e.Learner = l
		return SetInfo(l, StreamInfo{Mode: ModeEvents})
	}
	if !e.seen && e.Learner.Config().Dim != dim {
		return fmt.Errorf("--resume %s: state has dimension %d, the events %d", e.Resumed, e.Learner.Config().Dim, dim)
	}
	return nil
}

// reject writes the public rejected line and logs the details privately.
func (e *Events) reject(lineNo int, err error) error {
	e.Rejected++
	if e.Log != nil {
		e.Log.Warn("dpal stream: event rejected", "input", e.Input, "line", lineNo, "err", err)
	}
	return e.Out.Encode(Record{Type: "rejected", Line: lineNo, Error: RejectedClass})
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
