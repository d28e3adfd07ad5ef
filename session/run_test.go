package session

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpal-dev/dpal/active/stream"
	"github.com/dpal-dev/dpal/data"
)

// testSpec returns a seeded Spec of the paper's settings with a window of
// 5, its state files authenticated by a test key.
func testSpec(seed uint64) *Spec {
	return &Spec{
		Config: func(dim, _ int) (stream.Config, error) {
			cfg := stream.DefaultConfig(dim)
			cfg.Window = 5
			return cfg, nil
		},
		Seed: &seed, Key: testKey,
	}
}

// TestSpecStreamDataset: a dataset run saved after 300 events and resumed
// reports what the uninterrupted run does, the baseline from its cache
// the second time; a resume refuses configuration settings, and a new
// learner refuses late answers.
func TestSpecStreamDataset(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	train, test, err := data.Demo()
	if err != nil {
		t.Fatal(err)
	}
	perm := uint64(4)
	run := DatasetRun{Name: "demo", Train: train, Test: test, Shuffle: &perm, Events: 900, Baseline: true}
	whole, err := testSpec(1).StreamDataset(run)
	if err != nil {
		t.Fatal(err)
	}
	dir, _ := os.UserCacheDir()
	if m, _ := filepath.Glob(filepath.Join(dir, "dpal", "stream-baseline-*.json")); len(m) != 1 || whole.BaselineBatchError == nil {
		t.Errorf("baseline %v, cache files %v", whole.BaselineBatchError, m)
	}

	state := filepath.Join(t.TempDir(), "state.json")
	first := testSpec(1)
	first.SaveState = state
	part := run
	part.Events, part.Baseline = 300, false
	if _, err := first.StreamDataset(part); err != nil {
		t.Fatal(err)
	}
	second := testSpec(1)
	second.Resume = state
	got, err := second.StreamDataset(run)
	if err != nil {
		t.Fatal(err)
	}
	if got.ResumedFrom != state || got.Observed != 900 || *got.TestError != *whole.TestError ||
		*got.BaselineBatchError != *whole.BaselineBatchError || got.Labels != whole.Labels {
		t.Errorf("resumed run %+v, uninterrupted %+v", got, whole)
	}

	refused := testSpec(1)
	refused.Resume, refused.Overrides = state, []string{"--window"}
	if _, err := refused.StreamDataset(run); err == nil || !strings.Contains(err.Error(), "remove --window") {
		t.Errorf("resume with a configuration setting: %v", err)
	}
	answers := testSpec(1)
	answers.Answers = "answers.jsonl"
	if _, err := answers.StreamDataset(run); !errors.Is(err, errAnswersNew) {
		t.Errorf("answers for a new learner: %v", err)
	}
	if _, err := testSpec(1).StreamDataset(DatasetRun{Name: "empty", Train: &data.Dataset{}, Test: test}); err == nil {
		t.Error("an empty training split was streamed")
	}
}

// TestSpecStreamEvents: an event run writes the meta line, then its
// lines, and saves its state; resumed on the same input it skips every
// consumed line and reports so.
func TestSpecStreamEvents(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "events.csv")
	if err := os.WriteFile(in, []byte(eventInput(40, 0)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, state := filepath.Join(dir, "out.jsonl"), filepath.Join(dir, "state.json")
	spec := testSpec(2)
	spec.SaveState = state
	run := EventRun{Input: in, Out: out, Every: 8}
	res, err := spec.StreamEvents(run)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte(`{"type":"meta","seed":2,`)) || res.Accepted != 40 || res.Summary.Observed != 40 {
		t.Errorf("result %+v, output:\n%s", res, b)
	}
	spec.Resume = state
	res, err = spec.StreamEvents(run)
	if err != nil {
		t.Fatal(err)
	}
	if res.Accepted != 0 || res.Summary.Skipped != 40 || res.Summary.ResumedFrom != state {
		t.Errorf("resumed on the consumed input: %+v", res)
	}
	run.Out = filepath.Join(dir, "other.jsonl")
	if err := os.WriteFile(run.Out, []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if res, err := spec.StreamEvents(run); res != nil || err == nil {
		t.Errorf("an existing output the state did not write was replaced without Force: %+v, %v", res, err)
	}
}
