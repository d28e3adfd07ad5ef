package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dpal-dev/dpal/active/stream"
	"github.com/dpal-dev/dpal/dp/rng"
)

var testKey = []byte("0123456789abcdef-session-tests")

// eventInput is n events of dimension 2 in CSV, with a comment line.
func eventInput(n, shift int) string {
	var b strings.Builder
	b.WriteString("# events\n")
	for i := range n {
		fmt.Fprintf(&b, "%g,%g\n", float64((i+shift)%7)/10-0.3, float64((i+shift)%5)/10-0.2)
	}
	return b.String()
}

// memState is a state file in memory: Save seals the learner into it.
type memState struct {
	b     []byte
	saves int
	out   *lines // the output of TestEventsCheckpointBeforeLines
}

func (m *memState) save(l *stream.Learner) error {
	var buf bytes.Buffer
	if err := WriteState(&buf, l, testKey); err != nil {
		return err
	}
	m.b, m.saves = buf.Bytes(), m.saves+1
	return nil
}

// restore opens the saved state again, as a resume does.
func (m *memState) restore(t *testing.T, seed uint64) (*stream.Learner, StreamInfo) {
	t.Helper()
	raw, err := ReadState(bytes.NewReader(m.b), testKey)
	if err != nil {
		t.Fatal(err)
	}
	l, err := stream.Restore(bytes.NewReader(raw), rng.Seeded(seed), nil)
	if err != nil {
		t.Fatal(err)
	}
	info, err := SavedInfo(l)
	if err != nil || info == nil {
		t.Fatalf("saved info %v, %v", info, err)
	}
	return l, *info
}

// runEvents runs an Events over input to the end and returns its output.
func runEvents(t *testing.T, e *Events, input string) (*lines, error) {
	t.Helper()
	out := &lines{}
	e.Out = out
	if e.New == nil {
		e.New = newLearner(t, 3)
	}
	if err := e.Open(strings.NewReader(input)); err != nil {
		return out, err
	}
	err := e.Run()
	if err == nil {
		err = e.Finish()
	}
	return out, err
}

// TestEventsCheckpointBeforeLines: with Save set, every line reaches the
// output only after a checkpoint that holds it was saved, and the saved
// outbox is exactly what went out after that save.
func TestEventsCheckpointBeforeLines(t *testing.T) {
	st := &memState{}
	e := &Events{Input: "in", Save: st.save, Every: 7}
	st.out = &lines{}
	e.Out = st.out
	e.New = newLearner(t, 3)
	if err := e.Open(strings.NewReader(eventInput(100, 0))); err != nil {
		t.Fatal(err)
	}
	var seen []int // output length before each save
	e.Save = func(l *stream.Learner) error {
		seen = append(seen, st.out.Len())
		info, _ := SavedInfo(l)
		if int64(st.out.Len()) != info.OutStart {
			t.Errorf("save %d: the output has %d bytes, the checkpoint says %d", len(seen), st.out.Len(), info.OutStart)
		}
		return st.save(l)
	}
	if err := e.Run(); err != nil {
		t.Fatal(err)
	}
	if err := e.Finish(); err != nil {
		t.Fatal(err)
	}
	if len(seen) < 100/7 {
		t.Errorf("%d checkpoints for 100 events every 7", len(seen))
	}
	// The last save (after the final outbox went out) holds no outbox.
	if _, info := st.restore(t, 3); info.Outbox != nil || info.Segments[0].Lines != 101 || info.OutStart != int64(st.out.Len()) {
		t.Errorf("final checkpoint: outbox %d lines, segments %+v", len(info.Outbox), info.Segments)
	}
}

// TestEventsResume: a run stopped after part of its input, resumed on the
// whole input, skips what it consumed and ends as an uninterrupted run;
// the same input again is skipped whole; an input that starts like it but
// differs is refused; --replay charges again.
func TestEventsResume(t *testing.T) {
	input := eventInput(800, 0) // about 8 KiB: the consumed part is longer than the head
	whole, err := runEvents(t, &Events{Input: "in"}, input)
	if err != nil {
		t.Fatal(err)
	}
	st := &memState{}
	cut := strings.Join(strings.SplitAfter(input, "\n")[:601], "") // comment + 600 events
	first, err := runEvents(t, &Events{Input: "in", Save: st.save}, cut)
	if err != nil {
		t.Fatal(err)
	}
	l, info := st.restore(t, 3)
	e := &Events{Input: "in", Learner: l, Info: info, Save: st.save}
	second, err := runEvents(t, e, input)
	if err != nil {
		t.Fatal(err)
	}
	if e.Skipped != 600 {
		t.Errorf("skipped %d event lines, want 600", e.Skipped)
	}
	if got, want := recordsNoLine(t, first, second), recordsNoLine(t, whole); got != want {
		t.Errorf("resumed output differs:\n%s\nwant\n%s", got, want)
	}

	t.Run("same input again", func(t *testing.T) {
		l, info := st.restore(t, 3)
		e := &Events{Input: "in", Learner: l, Info: info}
		out, err := runEvents(t, e, input)
		if err != nil || e.Skipped != 800 || len(out.records(t)) != 0 || l.Stats().Observed != 800 {
			t.Errorf("err %v, skipped %d, %d lines, observed %d; want everything skipped", err, e.Skipped, len(out.records(t)), l.Stats().Observed)
		}
	})
	t.Run("starts alike, then differs", func(t *testing.T) {
		l, info := st.restore(t, 3)
		e := &Events{Input: "in", Learner: l, Info: info}
		lines := strings.SplitAfter(input, "\n")
		lines[500] = "0.05,0.05\n" // past the head, inside what the state consumed
		changed := strings.Join(lines, "")
		if _, err := runEvents(t, e, changed); !errors.Is(err, ErrReplay) {
			t.Errorf("got %v, want ErrReplay", err)
		}
	})
	t.Run("replay", func(t *testing.T) {
		l, info := st.restore(t, 3)
		sel, _ := l.Ledger().Spent(stream.GroupObserved)
		e := &Events{Input: "in", Learner: l, Info: info, Replay: true}
		if _, err := runEvents(t, e, input); err != nil {
			t.Fatal(err)
		}
		if again, _ := l.Ledger().Spent(stream.GroupObserved); e.Info.Replays != 1 || e.Skipped != 0 || again != 2*sel || l.Stats().Observed != 1600 {
			t.Errorf("replays %d, skipped %d, ε_s spent %v (was %v), observed %d; want the input fed and charged again",
				e.Info.Replays, e.Skipped, again, sel, l.Stats().Observed)
		}
	})
	t.Run("new input", func(t *testing.T) {
		l, info := st.restore(t, 3)
		e := &Events{Input: "other", Learner: l, Info: info, Save: st.save}
		if _, err := runEvents(t, e, eventInput(30, 3)); err != nil || e.Skipped != 0 || l.Stats().Observed != 830 {
			t.Fatalf("err %v, skipped %d, observed %d", err, e.Skipped, l.Stats().Observed)
		}
		if _, info := st.restore(t, 3); len(info.Segments) != 2 {
			t.Errorf("segments %+v, want two", info.Segments)
		}
	})
}

// recordsNoLine joins the non-meta records of outs without their line
// numbers (a resumed input numbers its lines from its start too).
func recordsNoLine(t *testing.T, outs ...*lines) string {
	var b strings.Builder
	for _, o := range outs {
		for _, r := range o.records(t) {
			r.Line = 0
			fmt.Fprintf(&b, "%+v\n", r)
		}
	}
	return b.String()
}

func TestRecoverOut(t *testing.T) {
	dir := t.TempDir()
	box := []string{`{"type":"request","id":7}`, `{"type":"release","update":2}`}
	whole := "head\n" + strings.Join(box, "\n") + "\n"
	for _, tc := range []struct {
		name, file string
		want       string // file afterwards; "" = absent
		returned   int
	}{
		{"complete", whole, whole, 0},
		{"cut in the outbox", whole[:12], whole, 0},
		{"outbox missing", "head\n", whole, 0},
		{"shorter than the checkpoint", "he", "he", 2},
		{"gone", "", "", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
			if tc.file != "" {
				os.WriteFile(path, []byte(tc.file), 0o600)
			}
			info := &StreamInfo{Out: path, OutStart: 5}
			for _, l := range box {
				info.Outbox = append(info.Outbox, []byte(l))
			}
			rest, err := RecoverOut(info)
			got, _ := os.ReadFile(path)
			if err != nil || string(got) != tc.want || len(rest) != tc.returned {
				t.Errorf("err %v, file %q, %d lines returned; want %q, %d", err, got, len(rest), tc.want, tc.returned)
			}
		})
	}
	if rest, _ := RecoverOut(&StreamInfo{Outbox: []json.RawMessage{[]byte(box[0])}}); len(rest) != 1 {
		t.Errorf("standard output: %d lines returned, want 1", len(rest))
	}
}

// TestEventsLivePipe: a new run handles an event as soon as its line
// arrives; it does not wait for the 4 KiB a resume compares.
func TestEventsLivePipe(t *testing.T) {
	pr, pw := io.Pipe()
	created := make(chan struct{})
	e := &Events{Input: "pipe", Out: &lines{}, New: func(dim int) (*stream.Learner, error) {
		close(created)
		return newLearner(t, 1)(dim)
	}}
	go func() {
		pw.Write([]byte("0.1,0.2\n"))
		select {
		case <-created:
		case <-time.After(5 * time.Second):
		}
		pw.Close()
	}()
	done := make(chan error, 1)
	go func() {
		if err := e.Open(pr); err != nil {
			done <- err
			return
		}
		done <- e.Run()
	}()
	select {
	case <-created:
	case <-time.After(5 * time.Second):
		t.Fatal("the first event waited for more input")
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
