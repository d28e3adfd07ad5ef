package session

import (
	"github.com/dpal-dev/dpal/active/stream"
	"github.com/dpal-dev/dpal/dp/ledger"
)

// Summary is what a run of `dpal stream` reports, and its --json output.
// Scripts rely on test_error, labels, observed, releases,
// epsilon_per_record, baseline_batch_error and seed.
type Summary struct {
	Dataset            string         `json:"dataset,omitempty"`
	Dim                int            `json:"dim"`
	TrainSize          int            `json:"train_size,omitempty"`
	TestSize           int            `json:"test_size,omitempty"`
	Config             stream.Config  `json:"config"`
	Observed           int            `json:"observed"`
	Requested          int            `json:"requested"`
	Labels             int            `json:"labels"`
	Updates            int            `json:"updates"`
	Releases           int            `json:"releases"`
	Rejected           int            `json:"rejected"`
	Skipped            int            `json:"skipped_lines,omitempty"`
	Replays            int            `json:"replays,omitempty"`
	TestError          *float64       `json:"test_error,omitempty"`
	LastUpdateError    *float64       `json:"last_update_error,omitempty"` // with a final model: test_error is the final model's
	ConstantError      *float64       `json:"constant_error,omitempty"`
	BaselineBatchError *float64       `json:"baseline_batch_error,omitempty"`
	EpsSelectTrue      *float64       `json:"eps_select_true,omitempty"`
	EpsilonPerRecord   *float64       `json:"epsilon_per_record"`
	NonPrivate         bool           `json:"non_private,omitempty"`
	Ledger             *ledger.Report `json:"ledger,omitempty"`
	Seed               *uint64        `json:"seed,omitempty"`
	ShuffleSeed        *uint64        `json:"shuffle_seed,omitempty"`
	ResumedFrom        string         `json:"resumed_from,omitempty"`
	// Seconds is the run's wall time, which the caller measures.
	Seconds float64 `json:"seconds"`
}

// summarise fills the counters, the spend and the seed of learner l, of
// dimension dim, resumed from the state resumed ("" if new).
func summarise(l *stream.Learner, dim int, resumed string) Summary {
	s := l.Stats()
	sum := Summary{
		Dim: dim, Config: l.Config(), Observed: s.Observed, Requested: s.Requested,
		Labels: s.Labelled, Updates: s.Updates, Releases: s.Updates,
		NonPrivate: l.Config().NonPrivate, Seed: seedOf(l), ResumedFrom: resumed,
	}
	if led := l.Ledger(); led != nil {
		sum.Ledger, _ = led.Report("")
	}
	if !sum.NonPrivate {
		eps, sel := s.MaxEpsilonPerRecord, s.EpsSelect
		sum.EpsilonPerRecord, sum.EpsSelectTrue = &eps, &sel
	}
	return sum
}
