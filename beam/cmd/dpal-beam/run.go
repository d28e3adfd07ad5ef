package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/textio"

	"github.com/dpal-dev/dpal/beam/kanonbeam"
	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/kanon"
)

// options are dpal-beam's flags, bound to the fields of kanon.Config
// that the stage reads (the others keep kanon.DefaultConfig's values) and
// to the run's files.
type options struct {
	Config              kanon.Config
	Log, Output, Ledger string
	Seed                uint64
	// Budget caps a new ledger file; a zero part means what the run
	// charges, as in every dpal command.
	Budget account.Budget
}

func defaultOptions() *options {
	c := kanon.DefaultConfig()
	c.SketchWidth = 1 << 16
	return &options{Config: c}
}

// register declares the flags on fs, with the names and defaults of
// `dpal kanon run`'s.
func (o *options) register(fs *flag.FlagSet) {
	c := &o.Config
	fs.StringVar(&o.Log, "log", "", "text log on any Beam filesystem (a glob: sharded input; one query per line, optional tab and label) (required)")
	fs.StringVar(&o.Output, "output", "", "where to publish the released query set, on any Beam filesystem: one query per line, sorted, UTF-8 (required)")
	fs.StringVar(&o.Ledger, "ledger", "", "durable ledger file on the driver, charged before the set is published (required)")
	fs.Float64Var(&o.Budget.Epsilon, "budget-epsilon", 0, "with --ledger: the ε cap of a new ledger file (default: what this run charges); on an existing one a lower value holds for this run, a higher one is refused")
	fs.Float64Var(&o.Budget.Delta, "budget-delta", 0, "with --ledger: the δ cap of a new ledger file (default: what this run charges); lower only, as --budget-epsilon")
	fs.Float64Var(&c.Beta, "beta", c.Beta, "sampling rate β (0 < β < 1; β = 1 with --threshold dp only)")
	fs.IntVar(&c.K, "k", c.K, "frequency threshold k (≥ 1; ≥ 2 with --threshold dp)")
	fs.Float64Var(&c.Delta, "delta", c.Delta, "δ at which the Li–Qardaji–Su ε is charged (exact threshold)")
	fs.StringVar(&c.Threshold, "threshold", c.Threshold, "exact (Li–Qardaji–Su: sampled count ≥ k) or dp (sampled count plus discrete Laplace noise ≥ k), as dpal kanon run")
	fs.Float64Var(&c.NoiseEpsilon, "epsilon-noise", c.NoiseEpsilon, "ε' of the discrete Laplace noise (--threshold dp), as dpal kanon run")
	fs.Float64Var(&c.TestFraction, "test-fraction", c.TestFraction, "share of the distinct queries held out for evaluation, as dpal kanon run")
	fs.IntVar(&c.Golden, "golden", c.Golden, "size of the held-out golden set, as dpal kanon run")
	fs.IntVar(&c.SketchRows, "sketch-rows", c.SketchRows, "Count-Mean-Min rows (exact threshold)")
	fs.IntVar(&c.SketchWidth, "sketch-width", c.SketchWidth, "Count-Mean-Min width, a power of two (exact threshold; the kept set is exact at any width)")
	fs.Uint64Var(&o.Seed, "seed", 0, "seed of the holdout, sample and noise, for experiments: the set dpal kanon run --seed releases (default: a secure key; sampling and noise keyed afresh per bundle)")
}

// checkScheme refuses a path whose filesystem is not linked in, before
// the pipeline is built: Beam's own check (filesystem.ValidateScheme,
// called while the pipeline is built) panics.
func checkScheme(ctx context.Context, path string) error {
	fs, err := filesystem.New(ctx, path)
	if err != nil {
		return err
	}
	return fs.Close()
}

// executor runs a pipeline: beamx.Run (the --runner flag) or a test's.
type executor func(context.Context, *beam.Pipeline) error

// run checks the options, opens the ledger, runs the pipeline into a
// staging file beside --output, then charges the ledger and only then
// publishes the set (moves the staging file to --output). given holds the
// flags the user set.
func run(ctx context.Context, o *options, given map[string]bool, exec executor) (string, error) {
	if o.Log == "" || o.Output == "" || o.Ledger == "" {
		return "", errors.New("--log, --output and --ledger are required")
	}
	for _, f := range []struct{ name, path string }{{"--log", o.Log}, {"--output", o.Output}} {
		if err := checkScheme(ctx, f.path); err != nil {
			return "", fmt.Errorf("%s: %w", f.name, err)
		}
	}
	p := kanonbeam.Params{Config: o.Config, Seeded: given["seed"]}
	if err := p.Validate(); err != nil {
		return "", err
	}
	// The entry `dpal kanon run` records for the same flags (one
	// accounting function, kanon.Config.Loss), with the program named.
	charge, err := o.Config.Charge("dpal-beam")
	if err != nil {
		return "", err
	}
	loss := charge.Loss
	if p.Seeded {
		p.Coins = kanon.SeededCoins(o.Seed)
	} else if p.Coins, err = kanon.SecureCoins(); err != nil {
		return "", err
	}
	rb := ledger.RunBudget{New: account.Budget{Epsilon: loss.Epsilon, Delta: loss.Delta}, SetEpsilon: given["budget-epsilon"], SetDelta: given["budget-delta"]}
	if rb.SetEpsilon {
		rb.New.Epsilon = o.Budget.Epsilon
	}
	if rb.SetDelta {
		rb.New.Delta = o.Budget.Delta
	}
	led, err := ledger.OpenRun(o.Ledger, rb)
	if err != nil {
		return "", fmt.Errorf("--ledger: %w", err)
	}
	defer led.Close()
	staging := o.Output + ".staging"
	pl, s := beam.NewPipelineWithRoot()
	kanonbeam.WriteReleased(s, staging, kanonbeam.Released(s, textio.Read(s, o.Log), p))
	if err := exec(ctx, pl); err != nil {
		return "", fmt.Errorf("beam pipeline: %w", err)
	}
	n, err := ledger.ReleaseCharge(led, charge, func() (int, error) { return publish(ctx, staging, o.Output) })
	if err != nil {
		return "", err
	}
	out := fmt.Sprintf("released %d queries (%s threshold) to %s at (epsilon = %s, delta = %s), charged to %s",
		n, o.Config.Threshold, o.Output, strconv.FormatFloat(loss.Epsilon, 'g', 6, 64), strconv.FormatFloat(loss.Delta, 'g', 6, 64), o.Ledger)
	if p.Seeded {
		out += fmt.Sprintf("; seed %d", o.Seed)
	}
	return out, nil
}

// publish moves the staging file to its published path (on any Beam
// filesystem: rename, or copy and remove) and returns how many queries it
// holds.
func publish(ctx context.Context, staging, output string) (int, error) {
	fs, err := filesystem.New(ctx, staging)
	if err != nil {
		return 0, err
	}
	defer fs.Close()
	b, err := filesystem.Read(ctx, fs, staging)
	if err != nil {
		return 0, fmt.Errorf("the pipeline's released set: %w", err)
	}
	if err := filesystem.Rename(ctx, fs, staging, output); err != nil {
		return 0, fmt.Errorf("publish %s: %w", output, err)
	}
	return bytes.Count(b, []byte("\n")), nil
}
