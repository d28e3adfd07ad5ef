package dpsgd

import (
	"fmt"
	"math"
	"time"

	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/model/nn"
)

// NonPrivate trains a network the way Trainer does minus clipping and
// noise: the same Poisson sampling at each group's rate, the same divisor
// (the expected batch size), the same optimiser, learning-rate schedule and
// weight decay. It is the reference a private model is compared with (the
// accuracy-vs-ε curve of issue 10 plots the non-private model of the same
// shape). IT IS NOT DIFFERENTIALLY PRIVATE: nothing it trains may be
// released from private data, and it charges no ledger.
type NonPrivate struct {
	net   *nn.Net
	opt   *optimizer
	steps int
	g     []float64 // the step's gradient over b, reused across steps
}

// NewNonPrivate returns a non-private trainer for net; cfg's
// NoiseMultiplier and Clip are ignored.
func NewNonPrivate(net *nn.Net, cfg Config) (*NonPrivate, error) {
	opt, err := newOptimizer(cfg, net.NumParams())
	if err != nil {
		return nil, err
	}
	return &NonPrivate{net: net, opt: opt}, nil
}

// Steps is the number of steps taken over all runs.
func (t *NonPrivate) Steps() int { return t.steps }

// Run takes steps plain SGD steps on d, sampling each group's records at
// the group's rate (the group names only label the run: nothing is
// charged). after, if not nil, is called after every step with the number
// of steps done; its error stops the run.
func (t *NonPrivate) Run(r *rng.Rand, d Data, groups []Group, steps int, after func(done int) error) (RunResult, error) {
	b, err := checkRun(d, groups, steps)
	if err != nil {
		return RunResult{}, err
	}
	res := RunResult{ExpectedBatch: b}
	start := time.Now()
	// The same splits as Trainer.Run, so that under one seed both sample
	// the same batches; the noise stream's split is drawn and unused.
	sampR, _, dropR := r.Split().Bulk(), r.Split(), r.Split()
	err = loop(sampR, d.rows32(), d.Labels, groups, 0, steps, b, &res, func(s int, rows [][]float32, labels []int) error {
		if err := t.step(rows, labels, b, dropR); err != nil {
			return fmt.Errorf("dpsgd: non-private step %d: %w", s+1, err)
		}
		return nil
	}, after)
	res.Seconds = time.Since(start).Seconds()
	return res, err
}

// step applies the unclipped gradient sum over b. A clipping norm of
// MaxFloat64 leaves every finite per-example norm unclipped (c_i = 1).
func (t *NonPrivate) step(rows [][]float32, labels []int, b float64, dropR *rng.Rand) error {
	sum, err := t.net.ClippedGrad32(rows, labels, math.MaxFloat64, dropR)
	if err != nil {
		return err
	}
	if len(t.g) != len(sum) {
		t.g = make([]float64, len(sum))
	}
	g := t.g
	for i, v := range sum {
		x := float64(v)
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("gradient coordinate %d is %v: the model diverged (lower the learning rate)", i, v)
		}
		g[i] = x / b
	}
	t.opt.update(t.net.Params(), g, 0, t.opt.begin())
	t.steps++
	return nil
}
