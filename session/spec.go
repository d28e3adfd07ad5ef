package session

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/dpal-dev/dpal/active/stream"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/rng"
)

// Spec says how a run of `dpal stream` gets its learner and keeps its
// state: a new learner of the configuration Config makes, or the one
// saved in the state file Resume; its state written to SaveState. The CLI
// maps its flags to a Spec and prints what StreamDataset or StreamEvents
// return; every decision between the two is here.
type Spec struct {
	// Config returns a new learner's configuration for dimension dim and
	// a stream of records records (0: unknown, as in event mode), which
	// its default δ may depend on.
	Config func(dim, records int) (stream.Config, error)
	// Check, when set, vets a new learner's configuration before the
	// learner is made (the CLI's memory limit).
	Check func(stream.Config) error
	// Ledger, when set, opens the ledger that a learner of a configuration
	// charges (the CLI's --ledger file). It may return nil: the learner
	// then keeps its own in memory, of budget exactly cfg.Budget(). The
	// run closes it.
	Ledger func(stream.Config) (*ledger.Ledger, error)
	// Seed seeds the run's randomness (nil: secure randomness). A resume
	// must repeat the saved seed or leave it nil.
	Seed *uint64
	// Resume names the state file to resume ("": a new learner). A resumed
	// learner keeps the configuration it was saved with, so Overrides (the
	// configuration settings the caller was given, by name) must be empty.
	Resume    string
	Overrides []string
	// Answers names a file of late labels for the pending requests of the
	// resumed state (ApplyAnswers): the oracle answered between the runs.
	Answers string
	// SaveState names the state file the run writes ("": none); Key
	// authenticates it and Resume (StateKey).
	SaveState string
	Key       []byte
}

// errAnswersNew refuses Answers for a new learner.
var errAnswersNew = errors.New("--answers labels the pending requests of a saved state: use it with --resume")

// learner returns the run's learner for a stream of dimension dim and
// records records: the one saved in Resume (its dimension checked against
// dim unless dim is 0), or a new one (Start, with stream info info). The
// string names the state resumed ("" for a new learner).
func (s *Spec) learner(dim, records int, info StreamInfo) (*stream.Learner, string, error) {
	if s.Resume != "" {
		l, err := s.resume(dim)
		return l, s.Resume, err
	}
	if s.Answers != "" {
		return nil, "", errAnswersNew
	}
	cfg, err := s.config(dim, records)
	if err != nil {
		return nil, "", err
	}
	warnFewUpdates(cfg)
	led, err := s.ledger(cfg)
	if err != nil {
		return nil, "", err
	}
	l, err := Start(cfg, rng.New(s.Seed), led, info)
	if err != nil && led != nil {
		led.Close()
	}
	return l, "", err
}

// config returns a new learner's configuration, checked.
func (s *Spec) config(dim, records int) (stream.Config, error) {
	cfg, err := s.Config(dim, records)
	if err == nil && s.Check != nil {
		err = s.Check(cfg)
	}
	return cfg, err
}

// ledger opens the ledger a learner of configuration cfg charges, or
// returns nil for the learner's own.
func (s *Spec) ledger(cfg stream.Config) (*ledger.Ledger, error) {
	if s.Ledger == nil {
		return nil, nil
	}
	return s.Ledger(cfg)
}

// resume restores the state file Resume (authenticated with Key), with
// the ledger Ledger opens for its configuration, and applies Answers.
func (s *Spec) resume(dim int) (*stream.Learner, error) {
	path := s.Resume
	if len(s.Overrides) > 0 {
		return nil, fmt.Errorf("--resume takes the configuration saved in %s; remove %s", path, strings.Join(s.Overrides, ", "))
	}
	cp, err := readCheckpoint(path, s.Key)
	if err != nil {
		return nil, err
	}
	cfg, err := cp.Config()
	if err != nil {
		return nil, fmt.Errorf("--resume %s: %w", path, err)
	}
	led, err := s.ledger(cfg)
	if err != nil {
		return nil, err
	}
	l, err := Resume(cp, rng.New(s.Seed), led)
	if err != nil && led != nil {
		led.Close()
	}
	if errors.Is(err, stream.ErrSeedMismatch) {
		return nil, fmt.Errorf("--resume %s: %w (pass the saved --seed, or omit --seed for fresh secure randomness)", path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("--resume %s: %w", path, err)
	}
	if dim > 0 && l.Config().Dim != dim {
		closeLedger(l)
		return nil, fmt.Errorf("--resume %s: state has dimension %d, the events %d", path, l.Config().Dim, dim)
	}
	if err := s.applyAnswers(l); err != nil {
		closeLedger(l)
		return nil, err
	}
	return l, nil
}

// readCheckpoint reads the state file at path, authenticated with key.
func readCheckpoint(path string, key []byte) (Checkpoint, error) {
	fh, err := os.Open(path)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("--resume: %w", err)
	}
	state, err := ReadState(bufio.NewReader(fh), key)
	fh.Close()
	if err != nil {
		return Checkpoint{}, fmt.Errorf("--resume %s: %w", path, err)
	}
	return Checkpoint{State: state}, nil
}

// applyAnswers gives a resumed learner the late labels of Answers, for
// requests it saved as pending.
func (s *Spec) applyAnswers(l *stream.Learner) error {
	if s.Answers == "" {
		return nil
	}
	fh, err := os.Open(s.Answers)
	if err != nil {
		return fmt.Errorf("--answers: %w", err)
	}
	defer fh.Close()
	return ApplyAnswers(l, stream.NewLineReader(bufio.NewReader(fh)), "--answers "+s.Answers)
}

// saver returns the function that writes the state file SaveState
// (SaveState: atomic, authenticated with Key), or nil if there is none.
func (s *Spec) saver() func(*stream.Learner) error {
	if s.SaveState == "" {
		return nil
	}
	return func(l *stream.Learner) error {
		if err := SaveState(s.SaveState, l, s.Key); err != nil {
			return fmt.Errorf("--save-state: %w", err)
		}
		return nil
	}
}

// minUpdates is how many mini-batch updates a detector needs before its
// model is worth reading: measured on the bundled sample, one update of
// 200 labels from w = 0 is no better than a guess (docs/repro-stream.md).
const minUpdates = 5

// warnFewUpdates tells the operator when the label budget allows fewer
// than minUpdates updates of the window: the run is valid, its model is
// not.
func warnFewUpdates(cfg stream.Config) {
	if cfg.LabelBudget <= 0 || cfg.Window <= 0 || cfg.LabelBudget >= minUpdates*cfg.Window {
		return
	}
	slog.Warn("dpal stream: --label-budget allows few updates; the model will be poor: raise --label-budget or lower --window",
		"label_budget", cfg.LabelBudget, "window", cfg.Window, "updates", cfg.LabelBudget/cfg.Window, "want_at_least", minUpdates)
}
