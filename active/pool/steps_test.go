package pool

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/model/nn"
)

// TestStepperIsRun drives a Stepper as Run drives its loop, with the same
// seed and the dataset's labels: the final network and every record's
// ledger ε must be Run's exactly, for Poisson and for top-k selection.
// A second stepper resumes after round 1 from the saved network (as dpal
// serve does after a restart) and must train on.
func TestStepperIsRun(t *testing.T) {
	poolData := blobs(1200, 1)
	logreg := nn.Spec{Arch: nn.LogReg, Inputs: 6, Classes: 3}
	for _, tc := range []struct {
		name string
		plan func(t *testing.T) *Plan
		acq  Acquisition
	}{
		{"poisson", func(t *testing.T) *Plan {
			p, err := Build(poissonConfig(4, 0.3))
			if err != nil {
				t.Fatal(err)
			}
			return p
		}, Entropy},
		{"topk", func(t *testing.T) *Plan { return testPlan(t, Basic, 1) }, Entropy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.plan(t)
			lr := testLearner(tc.acq, logreg)
			lr.Threshold = 0.3
			in := Input{Plan: p, Learner: lr, Pool: poolData.X, Oracle: DatasetOracle{Classes: poolData.Class}}
			runLed := newLedger(t, p)
			want, err := Run(runLed, rng.New(ptr(uint64(5))), in)
			if err != nil {
				t.Fatal(err)
			}
			led := newLedger(t, p)
			s, err := NewStepper(led, rng.New(ptr(uint64(5))), in, nil)
			if err != nil {
				t.Fatal(err)
			}
			label := func(idx []int) {
				t.Helper()
				classes, _ := DatasetOracle{Classes: poolData.Class}.Label(idx)
				if err := s.AddGroup(idx, classes); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.ChargeRun(); err != nil {
				t.Fatal(err)
			}
			idx, err := s.DrawInitial()
			if err != nil {
				t.Fatal(err)
			}
			label(idx)
			T := len(p.Config.Queries)
			for round := 1; round <= T+1; round++ {
				if _, err := s.Train(context.Background(), round); err != nil {
					t.Fatal(err)
				}
				if round <= T {
					chosen, err := s.Select(round)
					if err != nil {
						t.Fatal(err)
					}
					label(chosen)
				}
			}
			if !slices.Equal(s.Net().Params(), want.Net.Params()) {
				t.Error("the stepper's network is not Run's")
			}
			for i := range poolData.X {
				a, _ := led.Spent(RecordID(i))
				b, _ := runLed.Spent(RecordID(i))
				if a != b {
					t.Fatalf("record %d: stepper ε %v, Run's %v", i, a, b)
				}
			}
			pr, err := PrivacyOf(led, p, want.Labelled, len(poolData.X), false)
			if err != nil || pr.All != want.Privacy.All {
				t.Errorf("privacy %+v (%v), Run's %+v", pr.All, err, want.Privacy.All)
			}
		})
	}
}

// TestStepperResumeAndRefusals: a stepper resumed from a saved network and
// its labelled groups trains the next round; a skipped record (dropped
// from its group) stays unlabelled and can be added later; the stepper
// refuses out-of-order steps, a record labelled twice and a cancelled
// context.
func TestStepperResumeAndRefusals(t *testing.T) {
	poolData := blobs(1200, 1)
	p, err := Build(poissonConfig(4, 0.3))
	if err != nil {
		t.Fatal(err)
	}
	lr := testLearner(Random, nn.Spec{Arch: nn.LogReg, Inputs: 6, Classes: 3})
	in := Input{Plan: p, Learner: lr, Pool: poolData.X}
	led := newLedger(t, p)
	s, err := NewStepper(led, rng.New(ptr(uint64(1))), in, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ChargeRun(); err != nil {
		t.Fatal(err)
	}
	idx, _ := s.DrawInitial()
	kept := idx[1:] // the labeler skipped idx[0]
	classes, _ := DatasetOracle{Classes: poolData.Class}.Label(kept)
	if err := s.AddGroup(kept, classes); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Train(context.Background(), 2); err == nil {
		t.Error("round 2 trained before round 1's selection")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Train(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled round: %v", err)
	}
	if _, err := s.Train(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	var saved bytes.Buffer
	if err := s.Net().Save(&saved, nn.Meta{}); err != nil {
		t.Fatal(err)
	}
	net, _, err := nn.Load(&saved)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewStepper(led, rng.New(ptr(uint64(2))), in, net)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.AddGroup(kept, classes); err != nil {
		t.Fatal(err)
	}
	if err := r.AddGroup(kept[:1], classes[:1]); err == nil {
		t.Error("a record labelled twice was accepted")
	}
	chosen, err := r.Select(1)
	if err != nil {
		t.Fatal(err)
	}
	c2, _ := DatasetOracle{Classes: poolData.Class}.Label(chosen)
	if err := r.AddGroup(chosen, c2); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Train(context.Background(), 2); err != nil {
		t.Fatal(err)
	}
}
