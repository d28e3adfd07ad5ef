// Package progress owns dpal's progress bars: the one place that decides
// whether a long run draws a bar, and how. A bar is drawn only on a
// terminal, so that logs, pipes, files and tests never receive control
// characters; everywhere else New returns a nil *Bar whose methods do
// nothing, so callers need no checks of their own.
package progress

import (
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Bar is a progress bar, or, when nil, a bar that draws nothing.
type Bar struct {
	pb *progressbar.ProgressBar
}

// New returns a bar on w for a run of total units labelled what, or nil
// (a no-op bar) when w is not an *os.File open on a terminal. A total
// of zero or less means the length is unknown: the bar is then a spinner
// with a running count, so callers never pass a made-up total.
func New(w io.Writer, total int, what string) *Bar {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return draw(f, total, what)
}

// draw builds the bar without the terminal check, which New makes.
func draw(w io.Writer, total int, what string) *Bar {
	if total <= 0 {
		// progressbar's own marker for an unknown length: a spinner.
		total = -1
	}
	return &Bar{pb: progressbar.NewOptions(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(what),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		// Redrawing at most five times a second keeps the bar's cost off
		// the hot loops that call Add.
		progressbar.OptionThrottle(200*time.Millisecond),
		// Clearing leaves the terminal as it was, so that what the
		// command prints next starts on a clean line.
		progressbar.OptionClearOnFinish(),
	)}
}

// Add advances the bar by n units. It does nothing on a nil bar.
func (b *Bar) Add(n int) {
	if b == nil {
		return
	}
	// A bar that fails to draw must not stop the run it reports on.
	_ = b.pb.Add(n)
}

// Finish completes the bar and clears it from the terminal; a spinner
// stops. It does nothing on a nil bar and may be called more than once.
func (b *Bar) Finish() {
	if b == nil {
		return
	}
	// As in Add: drawing is best effort.
	_ = b.pb.Finish()
}
