package session

import (
	"errors"
	"fmt"
	"io"

	"github.com/dpal-dev/dpal/active/stream"
	"github.com/dpal-dev/dpal/data"
	"github.com/dpal-dev/dpal/model"
	"github.com/dpal-dev/dpal/progress"
)

// DatasetRun is a run over a dataset's training split, the oracle
// simulated by the rows' labels (RunDataset), scored on its test split:
// `dpal stream`'s dataset mode.
type DatasetRun struct {
	// Name is the dataset's name as the user gave it (--dataset): with
	// the training split it makes the fingerprint a resume is checked
	// against (Fingerprint).
	Name        string
	Train, Test *data.Dataset
	// Events stops the stream after this many training events (0: the
	// whole split); the guarantee's δ then covers only those records.
	Events int
	// Shuffle seeds the permutation of the training stream (nil: the file
	// order). A resume must repeat it (CheckResumedOrder).
	Shuffle *uint64
	// Baseline also trains the non-private batch SVM for reference
	// (baselineError, cached).
	Baseline bool
	// Progress, when set, receives a progress bar (on a terminal only);
	// Notice a line before a long baseline fit.
	Progress, Notice io.Writer
}

// minBarRows is the shortest dataset stream that gets a progress bar: a
// shorter one is over before a bar would tell the user anything.
const minBarRows = 20000

// StreamDataset runs the learner of s over r: a new one, or the resumed
// state's, which continues the same order from where it stopped. A run
// that fails still saves its state (SaveState): nothing accepted is lost.
// A final model (stream.Config.FinalShare) is released before the save,
// so that a resume knows it. The summary's test error is that of the
// final model if there is one, else of the last update's; Seconds is the
// caller's to fill.
func (s *Spec) StreamDataset(r DatasetRun) (Summary, error) {
	train, test := r.Train, r.Test
	if train.Len() == 0 || test.Len() == 0 {
		return Summary{}, errors.New("dataset has an empty training or test split")
	}
	// The guarantee covers the records streamed: Events of them, or all.
	records := train.Len()
	if r.Events > 0 {
		records = min(records, r.Events)
	}
	info := StreamInfo{Mode: ModeDataset, Dataset: train.Name, Rows: train.Len(),
		Fingerprint: Fingerprint(r.Name, train), Permutation: r.Shuffle, Events: r.Events}
	l, resumed, err := s.learner(train.Dim(), records, info)
	if err != nil {
		return Summary{}, err
	}
	defer closeLedger(l)
	if resumed != "" {
		if err := CheckResumedOrder(l, resumed, info); err != nil {
			return Summary{}, err
		}
		if err := SetInfo(l, info); err != nil {
			return Summary{}, err
		}
	}
	order := Order(train.Len(), r.Shuffle)
	if n := r.Events; n > 0 && n < len(order) {
		order = order[:n]
	}
	err = r.feed(l, order)
	w := l.Weights()
	if err == nil && l.Config().FinalShare > 0 {
		w, err = l.Final()
	}
	if save := s.saver(); save != nil {
		err = errors.Join(err, save(l))
	}
	if err != nil {
		return Summary{}, err
	}
	return r.score(l, w, resumed)
}

// feed runs the training rows in order through l, with a progress bar.
func (r DatasetRun) feed(l *stream.Learner, order []int) error {
	todo := len(order) - min(l.Stats().Observed, len(order))
	var bar *progress.Bar
	if todo >= minBarRows {
		bar = progress.New(r.Progress, todo, "stream")
	}
	// Deferred so that an error is printed on a cleared line.
	defer bar.Finish()
	return RunDataset(l, r.Train, order, Hooks{Progress: bar.Add})
}

// score summarises l, whose model to test is w: the test errors of w, of
// the last update's model when w is the final one, and of w = 0 (every
// event "attack"), and the baseline's if asked for.
func (r DatasetRun) score(l *stream.Learner, w []float64, resumed string) (Summary, error) {
	train, test := r.Train, r.Test
	sum := summarise(l, train.Dim(), resumed)
	sum.Dataset, sum.TrainSize, sum.TestSize, sum.ShuffleSeed = train.Name, train.Len(), test.Len(), r.Shuffle
	if l.Config().FinalShare > 0 {
		last := model.ErrorRate(l.Weights(), test.X, test.Y)
		sum.LastUpdateError = &last
	}
	te := model.ErrorRate(w, test.X, test.Y)
	ce := model.ErrorRate(make([]float64, train.Dim()), test.X, test.Y)
	sum.TestError, sum.ConstantError = &te, &ce
	if r.Baseline {
		be, err := baselineError(r.Name, train, test, r.Notice)
		if err != nil {
			return Summary{}, fmt.Errorf("baseline batch SVM: %w", err)
		}
		sum.BaselineBatchError = &be
	}
	return sum, nil
}
