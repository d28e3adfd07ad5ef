package session

import (
	"github.com/dpal-dev/dpal/active/stream"
)

// Record is one line of the event-mode output after the meta line. It is
// public: a rejected event carries only its line number and the error
// class RejectedClass; the details go to the operator log.
type Record struct {
	// Type is "request", "release" or "rejected".
	Type string `json:"type"`
	// ID is a request's event id (the argument of Learner.Label).
	ID uint64 `json:"id,omitempty"`
	// Line is the input line of a request or a rejected event.
	Line int `json:"line,omitempty"`
	// Observation is a release's T_i.
	Observation int `json:"observation,omitempty"`
	// Update is a release's update number i.
	Update int `json:"update,omitempty"`
	// W is a release's published model.
	W []float64 `json:"w,omitempty"`
	// Error is a rejected event's class (RejectedClass).
	Error string `json:"error,omitempty"`
}

// RejectedClass is the public error class of a rejected event: it broke
// the declared bounds (unparsable, wrong dimension, NaN or Inf, ‖x‖ > M in
// reject mode). Which bound, and the offending values, are private.
const RejectedClass = "invalid-input"

// Meta is the first line of the event-mode output: the settings the run
// used and, when seeded, the seed (for a resumed run the saved one).
type Meta struct {
	Type     string  `json:"type"` // "meta"
	Seed     *uint64 `json:"seed,omitempty"`
	Selector string  `json:"selector"`
	Policy   string  `json:"policy"`
	// Window is the mini-batch window; omitted when the first event's
	// dimension decides it (the Gaussian update's noise rule).
	Window      int     `json:"window,omitempty"`
	EpsSelect   float64 `json:"eps_select"`
	EpsGrad     float64 `json:"eps_grad"`
	LabelBudget int     `json:"label_budget"`
	M           float64 `json:"m"`
	NormMode    string  `json:"norm_mode"`
	NonPrivate  bool    `json:"non_private,omitempty"`
	ResumedFrom string  `json:"resumed_from,omitempty"`
	// Skipped counts the event lines of the input that the resumed state
	// had consumed: they were skipped, not fed again (Events.Open).
	Skipped int `json:"skipped_lines,omitempty"`
	// Replay says the input was one the state had consumed, fed again
	// from its start with --replay: its records are charged again.
	Replay bool `json:"replay,omitempty"`
}

// NewMeta returns the meta line of a run with configuration cfg.
func NewMeta(cfg stream.Config, seed *uint64, resumed string) Meta {
	return Meta{
		Type: "meta", Seed: seed, Selector: cfg.Selector.String(), Policy: cfg.Policy.String(),
		Window: cfg.Window, EpsSelect: cfg.EpsSelect, EpsGrad: cfg.EpsGrad, LabelBudget: cfg.LabelBudget,
		M: cfg.M, NormMode: cfg.NormMode.String(), NonPrivate: cfg.NonPrivate, ResumedFrom: resumed,
	}
}
