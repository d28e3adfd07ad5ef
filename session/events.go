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
	// New creates the learner: for Dim, or, when Dim is 0, for the
	// dimension of the first valid event (one the learner accepts).
	New func(dim int) (*stream.Learner, error)
	// Dim is the declared event dimension (--dim); 0 takes it from the
	// first valid event, so a malformed first line cannot fix it.
	Dim int
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

	// Rejected counts the rejected events, Accepted those the learner
	// observed, in this run.
	Rejected, Accepted int

	x      []float64
	seen   bool // an event has reached the learner in this run
	hinted bool // the operator log has been told about --dim
}

// Run reads every event of in. An input whose every event was rejected,
// or that holds none for a new learner, is an error: the run did nothing
// its operator asked for, and must not exit as if it had.
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
	switch {
	case e.Accepted == 0 && e.Rejected > 0:
		return fmt.Errorf("%s: no event accepted: all %d rejected (details in the log)", e.Input, e.Rejected)
	case e.Learner == nil:
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
	created, err := e.ensureLearner(len(e.x))
	if err != nil {
		return err
	}
	e.seen = true
	dec, err := e.Learner.Observe(e.x)
	if errors.Is(err, stream.ErrInvalidEvent) {
		return e.invalid(lineNo, created, err)
	}
	if err != nil {
		return fmt.Errorf("%s line %d: %w", e.Input, lineNo, err)
	}
	e.Accepted++
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

// invalid handles an event the learner refused. A learner created for it
// is dropped (nothing was charged: Observe checks before it spends), so
// that the next valid event decides the dimension.
func (e *Events) invalid(lineNo int, created bool, err error) error {
	if created {
		e.dropLearner()
	} else if e.Dim == 0 && len(e.x) != e.Learner.Config().Dim && !e.hinted {
		e.hinted = true
		e.warn("dpal stream: events of another dimension than the learner's (from the first valid event, or the resumed state); declare it with --dim",
			"input", e.Input, "dim", e.Learner.Config().Dim)
	}
	return e.reject(lineNo, err)
}

// Finish flushes the last window and writes its release.
func (e *Events) Finish() error {
	if err := e.Learner.Flush(); err != nil {
		return err
	}
	return WriteReleases(e.Out, e.Learner)
}

// ensureLearner creates the learner (for Dim, else for this event's
// dimension; created reports which, as the learner then stands only if
// the event is valid), or checks a resumed learner's dimension against
// the first event's: a file of another dimension is the operator's error,
// not a bad record.
func (e *Events) ensureLearner(dim int) (created bool, err error) {
	if e.Learner == nil {
		if e.Dim > 0 {
			dim = e.Dim
		}
		l, err := e.New(dim)
		if err != nil {
			return false, err
		}
		e.Learner = l
		return e.Dim == 0, SetInfo(l, StreamInfo{Mode: ModeEvents})
	}
	if !e.seen && e.Dim == 0 && e.Learner.Config().Dim != dim {
		return false, fmt.Errorf("--resume %s: state has dimension %d, the events %d", e.Resumed, e.Learner.Config().Dim, dim)
	}
	return false, nil
}

// dropLearner discards the learner, closing its ledger (a durable file
// is unlocked).
func (e *Events) dropLearner() {
	if led := e.Learner.Ledger(); led != nil {
		if err := led.Close(); err != nil {
			e.warn("dpal stream: closing the ledger", "err", err)
		}
	}
	e.Learner, e.seen = nil, false
}

// reject writes the public rejected line and logs the details privately.
func (e *Events) reject(lineNo int, err error) error {
	e.Rejected++
	e.warn("dpal stream: event rejected", "input", e.Input, "line", lineNo, "err", err)
	return e.Out.Encode(Record{Type: "rejected", Line: lineNo, Error: RejectedClass})
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
