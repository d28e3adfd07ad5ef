package session

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/dpal-dev/dpal/active/stream"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/outfile"
	"github.com/dpal-dev/dpal/progress"
)

// EventRun is a run over an event source (Events): `dpal stream`'s event
// mode.
type EventRun struct {
	// Input names the event source: a file, or "-" for Stdin.
	Input string
	Stdin io.Reader
	// Dim is the declared event dimension (0: that of the first valid
	// event, see Events.Dim).
	Dim int
	// Labels names the oracle's labels, one per event line ("": none,
	// the run only requests).
	Labels string
	// Out names the output of the JSON lines: a file, or "-" for Stdout.
	// An existing file is replaced only with Force, unless the resumed
	// state wrote it: then the run completes it (RecoverOut).
	Out    string
	Stdout io.Writer
	Force  bool
	// Every is the number of event lines between checkpoints, with a
	// state file to save (Spec.SaveState).
	Every int
	// Replay feeds a resumed state an input it has consumed again from
	// its start, charging its records again (Events.Replay).
	Replay bool
	// WindowSet says the configuration's window was given, not set by the
	// noise rule for the events' dimension: without Dim the meta line
	// then states it.
	WindowSet bool
	// Log receives the private details of rejected events; Progress, when
	// set, a spinner (on a terminal only).
	Log      *slog.Logger
	Progress io.Writer
}

// EventResult is what an event run reports.
type EventResult struct {
	// Summary is the learner's; Seconds is the caller's to fill.
	Summary Summary
	// Accepted counts the events this run fed the learner (Summary's
	// Observed also counts those of the resumed state) and Summary's
	// Rejected those it rejected.
	Accepted int
}

// StreamEvents runs the learner of s over the events of r, by the event
// protocol of Events: it restores Resume (its settings and seed head the
// output) or validates the configuration and opens the ledger, so that a
// bad setting fails before anything is written; then it reads the input
// (skipping what the state has consumed), completes the output the
// state's last run left (RecoverOut), writes the meta line and handles
// every event, with checkpoints when s saves state. A run that fails
// once it has begun writing, with a learner, still returns the result
// with its error: it says what the run spent. Otherwise the result is nil.
func (s *Spec) StreamEvents(r EventRun) (*EventResult, error) {
	ev := &Events{Input: r.Input, Dim: r.Dim, Log: r.Log, Every: r.Every, Replay: r.Replay, Save: s.saver()}
	meta, led, err := s.beginEvents(ev, r)
	if err != nil {
		return nil, err
	}
	defer func() {
		switch {
		case ev.Learner != nil:
			closeLedger(ev.Learner)
		case led != nil:
			led.Close()
		}
	}()
	begun, err := r.stream(ev, meta)
	if !begun || ev.Learner == nil {
		return nil, err
	}
	res := &EventResult{Summary: eventSummary(ev), Accepted: ev.Accepted}
	return res, err
}

// stream opens the input, the labels and the output and runs ev over
// them, meta first. begun says it got as far as writing: an error before
// has written nothing.
func (r EventRun) stream(ev *Events, meta Meta) (begun bool, err error) {
	in, closeIn, err := r.openInput()
	if err != nil {
		return false, err
	}
	defer closeIn()
	if r.Labels != "" {
		fh, err := os.Open(r.Labels)
		if err != nil {
			return false, fmt.Errorf("--labels: %w", err)
		}
		defer fh.Close()
		ev.Labels = stream.NewLineReader(bufio.NewReader(fh))
	}
	if err := ev.Open(in); err != nil {
		return false, fmt.Errorf("--input %s: %w", r.Input, err)
	}
	recovered, err := RecoverOut(&ev.Info)
	if err != nil {
		return false, err
	}
	closeOut, err := r.openOut(ev)
	if err != nil {
		return false, err
	}
	meta.Skipped, meta.Replay = ev.Skipped, ev.Replay
	err = ev.Begin(meta)
	for _, line := range recovered {
		if err == nil {
			_, err = ev.Out.Write(append(line, '\n'))
		}
	}
	if err == nil {
		err = r.run(ev)
	}
	if err == nil {
		err = ev.Finish()
	}
	if err != nil {
		err = errors.Join(err, ev.Stop())
	}
	if cerr := closeOut(); err == nil {
		err = cerr
	}
	return true, err
}

// run streams the events with a spinner (the number of events is
// unknown: the input may be a pipe).
func (r EventRun) run(ev *Events) error {
	bar := progress.New(r.Progress, 0, "events")
	defer bar.Finish()
	ev.Progress = bar.Add
	return ev.Run()
}

// eventSummary summarises an event run's learner: the counters, the
// spend, and what the run skipped, rejected and replayed.
func eventSummary(ev *Events) Summary {
	l := ev.Learner
	sum := summarise(l, l.Config().Dim, ev.Resumed)
	sum.Rejected, sum.Skipped, sum.Replays = ev.Rejected, ev.Skipped, ev.Info.Replays
	if sum.Replays > 0 && sum.EpsilonPerRecord != nil {
		// Replayed records paid once per feeding: the ledger's batched
		// group holds every one of those charges.
		eps, _ := l.Ledger().Spent(stream.GroupBatched)
		*sum.EpsilonPerRecord = max(*sum.EpsilonPerRecord, eps)
	}
	return sum
}

// beginEvents returns the meta line, and the ledger of a new learner: it
// restores Resume into ev, or validates the configuration and opens the
// ledger, so that a bad setting fails before anything is written.
func (s *Spec) beginEvents(ev *Events, r EventRun) (Meta, *ledger.Ledger, error) {
	if s.Resume == "" {
		return s.beginNew(ev, r)
	}
	l, err := s.resume(ev.Dim)
	if err != nil {
		return Meta{}, nil, err
	}
	info := StreamInfo{Mode: ModeEvents}
	if err := CheckResumedOrder(l, s.Resume, info); err != nil {
		closeLedger(l)
		return Meta{}, nil, err
	}
	if saved, err := SavedInfo(l); err == nil && saved != nil {
		info = *saved
	}
	ev.Learner, ev.Resumed, ev.Info = l, s.Resume, info
	return NewMeta(l.Config(), seedOf(l), s.Resume), nil, nil
}

// beginNew validates a new learner's settings by building one of
// dimension Dim (or 1: the events fix the real one), opens the ledger,
// and makes ev create the learner for the events' dimension.
func (s *Spec) beginNew(ev *Events, r EventRun) (Meta, *ledger.Ledger, error) {
	if s.Answers != "" {
		return Meta{}, nil, errAnswersNew
	}
	cfg, err := s.config(max(r.Dim, 1), 0)
	if err != nil {
		return Meta{}, nil, err
	}
	if _, err := stream.New(cfg, rng.Seeded(0), nil); err != nil {
		return Meta{}, nil, err
	}
	led, err := s.ledger(cfg)
	if err != nil {
		return Meta{}, nil, err
	}
	// The detector's radius, λ and window depend on the dimension: the
	// learner's configuration is built again for the events' own.
	ev.New = func(dim int) (*stream.Learner, error) {
		c, err := s.config(dim, 0)
		if err != nil {
			return nil, err
		}
		warnFewUpdates(c)
		return Start(c, rng.New(s.Seed), led, StreamInfo{Mode: ModeEvents})
	}
	meta := NewMeta(cfg, s.Seed, "")
	if r.Dim == 0 && cfg.Update == stream.Gaussian && !r.WindowSet {
		meta.Window = 0 // the first valid event's dimension decides it
	}
	return meta, led, nil
}

// openInput opens the event source.
func (r EventRun) openInput() (io.Reader, func(), error) {
	if r.Input == "-" {
		return r.Stdin, func() {}, nil
	}
	fh, err := os.Open(r.Input)
	if err != nil {
		return nil, nil, fmt.Errorf("--input: %w", err)
	}
	return fh, func() { fh.Close() }, nil
}

// openOut opens the output for ev: a resume whose last run wrote the
// same file appends to it (after RecoverOut completed it); otherwise the
// file is created or truncated. With checkpoints each one ends with the
// file synced.
func (r EventRun) openOut(ev *Events) (func() error, error) {
	if r.Out == "-" {
		ev.Out = r.Stdout
		return func() error { return nil }, nil
	}
	ev.OutPath = outfile.Resolve(r.Out)
	flag := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if ev.Info.Out != "" && ev.Info.Out == ev.OutPath {
		flag = os.O_RDWR | os.O_CREATE | os.O_APPEND
	} else if err := outfile.CheckReplace(outfile.Path{Flag: "--out", Path: r.Out}, "", r.Force); err != nil {
		return nil, err // a resumed state that wrote another output
	}
	fh, err := os.OpenFile(r.Out, flag, 0o644)
	if err != nil {
		return nil, fmt.Errorf("--out: %w", err)
	}
	regular := false
	if fi, err := fh.Stat(); err == nil {
		ev.OutSize, regular = fi.Size(), fi.Mode().IsRegular()
	}
	if err := endLine(fh, ev.OutSize); err != nil {
		fh.Close()
		return nil, fmt.Errorf("--out: %w", err)
	}
	bw := bufio.NewWriter(fh)
	ev.Out = bw
	ev.Sync = func() error {
		if err := bw.Flush(); err != nil || ev.Save == nil || !regular {
			return err // a pipe or device cannot be synced
		}
		return fh.Sync()
	}
	return func() error {
		if err := bw.Flush(); err != nil {
			fh.Close()
			return err
		}
		return fh.Close()
	}, nil
}

// endLine ends an appended output of size n with a line end if a crash
// cut its last line short, so that the next line starts on its own.
func endLine(fh *os.File, n int64) error {
	if n == 0 {
		return nil
	}
	last := make([]byte, 1)
	if _, err := fh.ReadAt(last, n-1); err != nil || last[0] == '\n' {
		return err
	}
	_, err := fh.Write([]byte{'\n'})
	return err
}
