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
	sampR, dropR := r.Split(), r.Split()
	rows, labels := make([][]float64, 0, int(2*b)+16), make([]int, 0, int(2*b)+16)
	for s := range steps {
		rows, labels = sample(sampR, d, groups, rows[:0], labels[:0])
		if err := t.step(rows, labels, b, dropR); err != nil {
			return res, fmt.Errorf("dpsgd: non-private step %d: %w", s+1, err)
		}
		res.Steps = s + 1
		if after != nil {
			if err := after(s + 1); err != nil {
				return res, err
			}
		}
	}
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

// step applies the unclipped gradient sum over b. A clipping norm of
// MaxFloat64 leaves every finite per-example norm unclipped (c_i = 1).
func (t *NonPrivate) step(rows [][]float64, labels []int, b float64, dropR *rng.Rand) error {
	sum, err := t.net.ClippedGrad(rows, labels, math.MaxFloat64, dropR)
	if err != nil {
		return err
	}
	for i, v := range sum {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("gradient coordinate %d is %v: the model diverged (lower the learning rate)", i, v)
		}
		sum[i] = v / b
	}
	t.opt.step(t.net.Params(), sum)
	t.steps++
	return nil
}
