package pool

import (
	"context"
	"errors"
	"fmt"

	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/model/nn"
)

// Stepper is Run's loop taken one step at a time, for a driver whose
// labels arrive later than a function call returns (dpal serve's pool
// projects: the selected records wait in an annotator queue, and a
// restart resumes from the last finished round). It runs the same
// mechanisms as Run, in the same order, with the same charges:
//
//	ChargeRun                 (Poisson: the whole run's loss, before anything is drawn)
//	DrawInitial → AddGroup    (D_1, labelled by the driver)
//	for round i = 1…T+1:
//	    Train(i)              (the plan's phases; top-k charges each phase before its steps)
//	    if i ≤ T: Select(i) → AddGroup
//
// A driver may add fewer records than were drawn or selected (a record the
// labeler skips is dropped and stays unlabelled); docs/serve.md says when
// the guarantee survives that. Resuming after a restart: NewStepper with
// the last released network, then AddGroup for every group labelled so
// far, in order, then Train of the next round. PrivacyOf reads the
// per-record report from the ledger at any point.
type Stepper struct {
	l *loop
}

// NewStepper checks the input as Run does (Input.Oracle is not used) and
// starts a stepper on net, or on a new network drawn from r when net is
// nil.
func NewStepper(led *ledger.Ledger, r *rng.Rand, in Input, net *nn.Net) (*Stepper, error) {
	l, err := newLoop(led, r, in, net)
	if err != nil {
		return nil, err
	}
	return &Stepper{l: l}, nil
}

// ChargeRun commits, under Poisson selection, every pool record's loss
// for the whole run (docs/pool.md Theorem 1) to the ledger; it must be
// called once, before DrawInitial. Top-k selection charges per phase and
// per selection instead, so it does nothing there.
func (s *Stepper) ChargeRun() error { return s.l.chargePoisson() }

// DrawInitial draws the initial set D_1 (reading no record).
func (s *Stepper) DrawInitial() ([]int, error) { return s.l.drawInitial() }

// AddGroup adds the next labelled group (initial, query-1, …): the pool
// records idx with their classes. Every record must be unlabelled so far
// and every class in [0, classes).
func (s *Stepper) AddGroup(idx, classes []int) error {
	if len(s.l.groups) > len(s.l.in.Plan.Config.Queries) {
		return errors.New("pool: every group of the plan is labelled")
	}
	if err := s.l.add(idx, classes); err != nil {
		return err
	}
	return nil
}

// Groups is the number of groups added so far.
func (s *Stepper) Groups() int { return len(s.l.groups) }

// Train runs the plan's phases of training round i (1…T+1), which needs
// groups 0…i−1 added: under top-k selection each phase's loss is charged
// to its records before its steps. ctx stops it between two steps (the
// round must then be trained again, and top-k charges it again).
func (s *Stepper) Train(ctx context.Context, round int) (Round, error) {
	if round < 1 || round > len(s.l.in.Plan.Config.Queries)+1 {
		return Round{}, fmt.Errorf("pool: round %d is not in the plan (1..%d)", round, len(s.l.in.Plan.Config.Queries)+1)
	}
	if len(s.l.groups) != round {
		return Round{}, fmt.Errorf("pool: round %d trains on %d labelled groups, %d are added", round, round, len(s.l.groups))
	}
	return s.l.train(ctx, round)
}

// Select runs selection j (1…T) on the unlabelled pool with the network
// of round j (top-k: charged through Select before it is drawn) and
// returns the chosen records, in pool order, to be labelled.
func (s *Stepper) Select(j int) ([]int, error) {
	if j < 1 || j > len(s.l.in.Plan.Config.Queries) || len(s.l.groups) != j {
		return nil, fmt.Errorf("pool: selection %d does not follow the %d groups added", j, len(s.l.groups))
	}
	chosen, _, err := s.l.selection(j)
	return chosen, err
}

// Net is the network as trained so far (the release after Train).
func (s *Stepper) Net() *nn.Net { return s.l.net }
