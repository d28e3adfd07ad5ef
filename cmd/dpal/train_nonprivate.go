package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/dpal-dev/dpal/data"
	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/dpsgd"
	"github.com/dpal-dev/dpal/model/nn"
)

// notDP labels every output of a non-private reference run.
const notDP = "NOT DIFFERENTIALLY PRIVATE: trained without clipping or noise, nothing charged (reference only)"

// nonPrivateMisuse refuses, under --non-private, the flags that only a
// private run has: checked before any file is looked at.
func nonPrivateMisuse(cmd *cobra.Command) error {
	if np, _ := cmd.Flags().GetBool("non-private"); !np {
		return nil
	}
	for _, name := range []string{"epsilon", "delta", "ledger", "checkpoint", "resume"} {
		if cmd.Flags().Changed(name) {
			return fmt.Errorf("--non-private trains without privacy: --%s does not apply (it would suggest a guarantee there is none of)", name)
		}
	}
	return nil
}

// runTrainNonPrivate is `dpal train --non-private`: the run s describes
// minus clipping and noise (dpsgd.NonPrivate), for comparison only.
func runTrainNonPrivate(cmd *cobra.Command, s trainSettings, seed *uint64, train, test *data.Dataset) error {
	if err := nonPrivateMisuse(cmd); err != nil {
		return err
	}
	plan, err := s.referencePlan(train.Len())
	if err != nil {
		return err
	}
	r := rng.New(seed)
	net, tr, err := s.newReference(r)
	if err != nil {
		return err
	}
	out := &trainOutput{NotDP: notDP, Dataset: s.dataset, Model: s.spec.String(), Params: net.NumParams(),
		Records: train.Len(), SampleRate: plan.SampleRate, Steps: plan.Steps, Epochs: s.epochs, LR: s.lr,
		Optimizer: s.cfg.Optimizer, ClassNames: train.ClassNames, Seed: seed}
	if asJSON, _ := cmd.Flags().GetBool("json"); !asJSON {
		fmt.Fprintf(cmd.OutOrStdout(), "%s\n%s on %s (%d records, %d parameters): q=%.6g, %d steps\n",
			notDP, s.spec, s.dataset, train.Len(), net.NumParams(), plan.SampleRate, plan.Steps)
	}
	run := func(after func(int) error) (dpsgd.RunResult, error) { return s.runReference(tr, r, plan, train, after) }
	if err := trainRun(cmd, s, plan, run, net, train, test, out); err != nil {
		return err
	}
	return finishTrain(cmd, net, train, test, out)
}

// referencePlan is the run's rate and steps, without noise.
func (s *trainSettings) referencePlan(n int) (dpsgd.Plan, error) {
	q, steps, err := dpsgd.Schedule(s.epochs, s.batch, n)
	if err != nil {
		return dpsgd.Plan{}, err
	}
	if s.cfg.Schedule == dpsgd.Cosine {
		s.cfg.TotalSteps = steps
	}
	return dpsgd.Plan{SampleRate: q, Steps: steps}, nil
}

// newReference builds the network as newTrainer does, with a non-private
// trainer.
func (s trainSettings) newReference(r *rng.Rand) (*nn.Net, *dpsgd.NonPrivate, error) {
	net, err := nn.New(s.spec, r.Split())
	if err != nil {
		return nil, nil, err
	}
	tr, err := dpsgd.NewNonPrivate(net, s.cfg)
	return net, tr, err
}

// runReference trains on every record of train at the plan's rate.
func (s trainSettings) runReference(tr *dpsgd.NonPrivate, r *rng.Rand, plan dpsgd.Plan, train *data.Dataset,
	after func(int) error) (dpsgd.RunResult, error) {
	return tr.Run(r, dpsgd.Data{X: train.X, Labels: train.Class},
		[]dpsgd.Group{{Name: "reference", Records: allRecords(train.Len()), Rate: plan.SampleRate}}, plan.Steps, after)
}
