package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/dpal-dev/dpal/data"
	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/dpsgd"
)

// notDP labels every output of a non-private reference run.
const notDP = "NOT DIFFERENTIALLY PRIVATE: trained without clipping or noise, nothing charged (reference only)"

// nonPrivateMisuse refuses, under --non-private, the flags that only a
// private run has: checked before any file is looked at.
func nonPrivateMisuse(cmd *cobra.Command) error {
	if !trainOpts.NonPrivate {
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
	plan, err := s.PlanNonPrivate(train.Len())
	if err != nil {
		return err
	}
	r := rng.New(seed)
	net, tr, err := s.NewNonPrivate(r)
	if err != nil {
		return err
	}
	out := &trainOutput{NotDP: notDP, Dataset: s.dataset, Model: s.Model.String(), Params: net.NumParams(),
		Records: train.Len(), SampleRate: plan.SampleRate, Steps: plan.Steps, Epochs: s.Epochs, LR: s.Config.LR,
		Optimizer: s.Config.Optimizer, ClassNames: train.ClassNames, Seed: seed, featureInfo: s.features.recorded()}
	if !trainOpts.JSON {
		fmt.Fprintf(cmd.OutOrStdout(), "%s\n%s on %s (%d records, %d parameters): q=%.6g, %d steps\n",
			notDP, s.Model, s.dataset, train.Len(), net.NumParams(), plan.SampleRate, plan.Steps)
	}
	run := func(after func(int) error) (dpsgd.RunResult, error) {
		return tr.Run(r, trainData(train), dpsgd.Everyone("reference", train.Len(), plan.SampleRate), plan.Steps, after)
	}
	if err := trainRun(cmd, s, plan, run, net, train, test, out); err != nil {
		return err
	}
	return finishTrain(cmd, net, train, test, out)
}
