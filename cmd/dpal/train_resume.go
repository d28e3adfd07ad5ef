package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/dpal-dev/dpal/data"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/dpsgd"
	"github.com/dpal-dev/dpal/outfile"
	"github.com/dpal-dev/dpal/session"
)

// trainCheckpoint is what --checkpoint and --resume ask for: where the
// run's sealed checkpoint goes, the key that seals it, and with --resume
// the checkpoint to continue.
type trainCheckpoint struct {
	path string
	key  []byte
	from *dpsgd.Checkpoint
}

// trainCheckpointFlags reads --checkpoint and --resume. A checkpoint needs
// --ledger (the charges a resume must not repeat live there); a new run
// refuses an existing checkpoint (its run's charges would be orphaned), a
// resume needs one.
func trainCheckpointFlags(cmd *cobra.Command) (trainCheckpoint, error) {
	path, resume, led := trainOpts.Checkpoint, trainOpts.Resume, trainOpts.Ledger
	switch {
	case resume && path == "":
		return trainCheckpoint{}, errors.New("--resume continues the run saved in --checkpoint FILE: give it")
	case path != "" && led == "":
		return trainCheckpoint{}, errors.New("--checkpoint needs --ledger: a resume pays for nothing twice only on the ledger the run charged")
	case path == "":
		return trainCheckpoint{}, nil
	}
	key, err := session.StateKey()
	if err != nil {
		return trainCheckpoint{}, fmt.Errorf("--checkpoint: %w", err)
	}
	c := trainCheckpoint{path: path, key: key}
	if !resume {
		if _, err := os.Lstat(path); err == nil {
			return c, fmt.Errorf("--checkpoint %s exists: pass --resume to continue its run, or remove it", path)
		}
		if err := outfile.ProbeReplace(path); err != nil {
			return c, fmt.Errorf("--checkpoint %s: %w", path, err)
		}
		return c, nil
	}
	fh, err := os.Open(path)
	if err != nil {
		return c, fmt.Errorf("--resume: %w", err)
	}
	defer fh.Close()
	raw, err := session.Unseal(bufio.NewReader(fh), dpsgd.CheckpointFormat, key)
	if err != nil {
		return c, fmt.Errorf("--resume %s: %w", path, err)
	}
	c.from = new(dpsgd.Checkpoint)
	if err := json.Unmarshal(raw, c.from); err != nil {
		return c, fmt.Errorf("--resume %s: %w", path, err)
	}
	return c, nil
}

// runIntervals trains as run does, charged epoch by epoch and, with
// --checkpoint, checkpointed at every epoch's end (dpsgd.RunIntervals).
// The checkpoint carries the epoch reports made before it; a resumed run
// reports its checkpoint's epoch again (after is called with the steps it
// restored) and goes on from there.
func (s trainSettings) runIntervals(cmd *cobra.Command, tr *dpsgd.Trainer, led *ledger.Ledger, r *rng.Rand, plan dpsgd.Plan,
	train *data.Dataset, ck trainCheckpoint, out *trainOutput, after func(int) error) (dpsgd.RunResult, error) {
	iv := dpsgd.Intervals{Ends: epochEnds(plan.Steps, s.Epochs), From: ck.from,
		Binding: fmt.Sprintf("dpal train: data %s, ε %v, δ %v, epochs %v, batch %d", s.dataset, s.eps, s.delta, s.Epochs, s.Batch)}
	if ck.from != nil {
		if err := json.Unmarshal(ck.from.Extra, &out.EpochLog); len(ck.from.Extra) > 0 && err != nil {
			return dpsgd.RunResult{}, fmt.Errorf("--resume %s: %w", ck.path, err)
		}
		if !trainOpts.JSON {
			fmt.Fprintf(cmd.OutOrStdout(), "resuming run %s from --checkpoint %s at step %d\n", ck.from.Run, ck.path, ck.from.Steps)
		}
	}
	if ck.path != "" {
		out.Checkpoint = ck.path
		iv.Save = func(c *dpsgd.Checkpoint) error {
			var err error
			if c.Extra, err = json.Marshal(out.EpochLog); err != nil {
				return err
			}
			b, err := json.Marshal(c)
			if err != nil {
				return err
			}
			if err := session.SaveSealed(ck.path, dpsgd.CheckpointFormat, b, ck.key); err != nil {
				return fmt.Errorf("--checkpoint: %w", err)
			}
			return nil
		}
	}
	res, err := tr.RunIntervals(led, r, trainData(train),
		dpsgd.Everyone(out.LedgerGroup, train.Len(), plan.SampleRate), plan.Steps, iv, after)
	out.Run, out.ResumedSteps = res.Run, res.Resumed
	return res, err
}
