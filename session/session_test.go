package session

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/dpal-dev/dpal/active/stream"
	"github.com/dpal-dev/dpal/data"
	"github.com/dpal-dev/dpal/dp/rng"
)

// lines collects what an Events run writes.
type lines struct{ bytes.Buffer }

// records decodes the lines written so far (the meta line too, as a
// Record of type "meta").
func (s *lines) records(t *testing.T) []Record {
	t.Helper()
	var out []Record
	for _, l := range strings.Split(strings.TrimSpace(s.String()), "\n") {
		if l == "" {
			continue
		}
		var r Record
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		out = append(out, r)
	}
	return out
}

func newLearner(t *testing.T, seed uint64) func(dim int) (*stream.Learner, error) {
	return func(dim int) (*stream.Learner, error) {
		cfg := stream.DefaultConfig(dim)
		cfg.Window = 1
		return stream.New(cfg, rng.Seeded(seed), nil)
	}
}

// TestEventsRejectSaysOnlyTheClass: a bad record's values reach only the
// operator log; the public line carries the class and the line number.
func TestEventsRejectSaysOnlyTheClass(t *testing.T) {
	in := "0.1,0.2\n# comment\n0.1,NaN\n0.3,0.4,0.5\n0.2,0.1\nsecret-value,1\n"
	var logBuf bytes.Buffer
	out := &lines{}
	e := &Events{New: newLearner(t, 1), Input: "test", Out: out, Log: slog.New(slog.NewTextHandler(&logBuf, nil))}
	if err := e.Open(strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	if err := e.Run(); err != nil {
		t.Fatal(err)
	}
	if err := e.Finish(); err != nil {
		t.Fatal(err)
	}
	var rejected []int
	for _, r := range out.records(t) {
		if r.Type == "rejected" {
			rejected = append(rejected, r.Line)
			if r.Error != RejectedClass || r.ID != 0 || r.W != nil {
				t.Errorf("rejected line says more than its class: %+v", r)
			}
		}
	}
	if len(rejected) != 3 || rejected[0] != 3 || rejected[1] != 4 || rejected[2] != 6 || e.Rejected != 3 {
		t.Errorf("rejected lines %v (count %d), want [3 4 6]", rejected, e.Rejected)
	}
	if !strings.Contains(logBuf.String(), "secret-value") {
		t.Errorf("operator log lacks the details:\n%s", logBuf.String())
	}
}

func TestEventsNoValidEvent(t *testing.T) {
	for in, want := range map[string]string{"": "no events", "x\n": "no event accepted"} {
		e := &Events{New: newLearner(t, 1), Input: "empty", Out: &lines{}}
		if err := e.Open(strings.NewReader(in)); err != nil {
			t.Fatal(err)
		}
		if err := e.Run(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("input %q: got %v, want %q", in, err, want)
		}
	}
}

// TestRunDatasetResumes: a learner saved after k events and resumed on the
// same order sees exactly the remaining events, and decides as an
// uninterrupted run does.
func TestRunDatasetResumes(t *testing.T) {
	train, _, err := data.Demo()
	if err != nil {
		t.Fatal(err)
	}
	perm := uint64(5)
	order := Order(train.Len(), &perm)[:600]
	cfg := stream.DefaultConfig(train.Dim())
	var whole []stream.Decision
	l, _ := stream.New(cfg, rng.Seeded(2), nil)
	if err := RunDataset(l, train, order, Hooks{Done: func(d stream.Decision) { whole = append(whole, d) }}); err != nil {
		t.Fatal(err)
	}
	var got []stream.Decision
	first, _ := stream.New(cfg, rng.Seeded(2), nil)
	stop := func() bool { return first.Stats().Observed >= 250 }
	if err := RunDataset(first, train, order, Hooks{Stop: stop, Done: func(d stream.Decision) { got = append(got, d) }}); err != nil {
		t.Fatal(err)
	}
	info := StreamInfo{Mode: ModeDataset, Dataset: train.Name, Rows: train.Len(), Fingerprint: Fingerprint("demo", train), Permutation: &perm}
	if err := SetInfo(first, info); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := first.SaveState(&buf); err != nil {
		t.Fatal(err)
	}
	second, err := stream.Restore(&buf, rng.Seeded(2), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckResumedOrder(second, "state", info); err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := RunDataset(second, train, order, Hooks{Done: func(d stream.Decision) { got = append(got, d) }, Progress: func(k int) { n += k }}); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(whole) || n != len(order)-250 {
		t.Fatalf("%d decisions (progress %d), want %d (%d)", len(got), n, len(whole), len(order)-250)
	}
	for i := range got {
		if got[i] != whole[i] {
			t.Fatalf("decision %d: %+v, want %+v", i, got[i], whole[i])
		}
	}
}

func TestCheckResumedOrder(t *testing.T) {
	p1, p2 := uint64(1), uint64(2)
	saved := StreamInfo{Mode: ModeDataset, Dataset: "d", Rows: 10, Fingerprint: "abc", Permutation: &p1}
	for _, tc := range []struct {
		name string
		now  StreamInfo
		want string // "" for accepted
	}{
		{"same", saved, ""},
		{"more events", StreamInfo{Mode: ModeDataset, Dataset: "d", Rows: 10, Fingerprint: "abc", Permutation: &p1, Events: 5}, ""},
		{"other data", StreamInfo{Mode: ModeDataset, Dataset: "e", Rows: 10, Fingerprint: "xyz", Permutation: &p1}, "fingerprint"},
		{"other order", StreamInfo{Mode: ModeDataset, Dataset: "d", Rows: 10, Fingerprint: "abc", Permutation: &p2}, "permutation of seed 1"},
		{"file order", StreamInfo{Mode: ModeDataset, Dataset: "d", Rows: 10, Fingerprint: "abc"}, "file order"},
		{"other mode", StreamInfo{Mode: ModeEvents}, "dataset mode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, _ := stream.New(stream.DefaultConfig(2), rng.Seeded(1), nil)
			if err := SetInfo(l, saved); err != nil {
				t.Fatal(err)
			}
			err := CheckResumedOrder(l, "s", tc.now)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
	l, _ := stream.New(stream.DefaultConfig(2), rng.Seeded(1), nil)
	if err := CheckResumedOrder(l, "s", saved); err == nil {
		t.Error("dataset resume without saved info accepted")
	}
	if err := CheckResumedOrder(l, "s", StreamInfo{Mode: ModeEvents}); err != nil {
		t.Errorf("event resume without saved info: %v", err)
	}
}

// TestEventsDimension: the dimension comes from Dim, or from the first
// event the learner accepts, never from a rejected first line; a run
// that accepts no event fails.
func TestEventsDimension(t *testing.T) {
	valid := strings.Repeat("0.1,0.2\n", 20)
	for _, tc := range []struct {
		name     string
		dim      int
		in       string
		accepted int
		err      string
	}{
		{"first line out of bounds", 0, "3,3,3\n" + valid, 20, ""},
		{"declared dimension", 2, "0.1,0.1,0.1\n" + valid, 20, ""},
		{"declared dimension wrong", 3, valid, 0, "no event accepted: all 20 rejected"},
		{"every event invalid", 0, "3,3\n4,4\n", 0, "no event accepted: all 2 rejected"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &Events{Dim: tc.dim, Input: "in", Out: &lines{}, New: func(dim int) (*stream.Learner, error) {
				cfg := stream.DefaultConfig(dim)
				cfg.NormMode = stream.Reject
				return stream.New(cfg, rng.Seeded(1), nil)
			}}
			if err := e.Open(strings.NewReader(tc.in)); err != nil {
				t.Fatal(err)
			}
			err := e.Run()
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("got %v, want %q", err, tc.err)
			}
			if e.Accepted != tc.accepted {
				t.Errorf("accepted %d, want %d", e.Accepted, tc.accepted)
			}
			if tc.accepted > 0 && e.Learner.Config().Dim != 2 {
				t.Errorf("learner dimension %d, want 2", e.Learner.Config().Dim)
			}
		})
	}
}
