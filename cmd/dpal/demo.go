package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/dpal-dev/dpal/data"
	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/mech"
	"github.com/dpal-dev/dpal/dp/rng"
)

// demoGroup is the ledger group of the demo: every record of the bundled
// sample takes part in all three releases, so they compose sequentially.
const demoGroup = "every record"

type demoRelease struct {
	Mechanism string  `json:"mechanism"`
	Query     string  `json:"query"`
	Value     float64 `json:"value"`
	Epsilon   float64 `json:"epsilon"`
	Delta     float64 `json:"delta,omitempty"`
}

type demoOutput struct {
	Records         int                   `json:"records"`
	NoiseMultiplier float64               `json:"noise_multiplier"`
	DPSGD           account.EpsilonResult `json:"dpsgd"`
	Releases        []demoRelease         `json:"releases"`
	Ledger          *ledger.Ledger        `json:"ledger"`
	SpentEpsilon    float64               `json:"spent_epsilon"`
	SpentDelta      float64               `json:"spent_delta"`
	Seed            *uint64               `json:"seed,omitempty"`
}

// demoOptions are the flags of `dpal demo`.
type demoOptions struct {
	Epsilon, Delta, EpsilonCount, EpsilonRR, BudgetEpsilon float64
	Batch, Epochs                                          int
	Seed                                                   uint64
	JSON                                                   bool
}

var demoOpts demoOptions

func init() {
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Calibrate DP-SGD noise for a budget and print the ledger of a few composed releases (bundled data)",
		Long: `demo calibrates the DP-SGD noise multiplier for a target (ε, δ) on the
bundled KDD sample, then releases a Laplace count and a randomized-response
bit about the same records. Each release is spent in one ledger group before
its value is shown, so the ledger prints the composed ε of every record.`,
		Args: cobra.NoArgs,
		RunE: runDemo,
	}
	f, o := cmd.Flags(), &demoOpts
	f.Float64Var(&o.Epsilon, "epsilon", 2, "target ε of the DP-SGD run")
	f.Float64Var(&o.Delta, "delta", 1e-5, "target δ of the DP-SGD run (and the ledger's δ)")
	f.IntVar(&o.Batch, "batch", 64, "expected DP-SGD batch size (sampling rate = batch / records)")
	f.IntVar(&o.Epochs, "epochs", 5, "DP-SGD epochs (steps = epochs / sampling rate)")
	f.Float64Var(&o.EpsilonCount, "epsilon-count", 0.5, "ε of the Laplace count")
	f.Float64Var(&o.EpsilonRR, "epsilon-rr", 0.5, "ε of the randomized-response bit")
	deprecate(f, "eps-count", "epsilon-count")
	deprecate(f, "eps-rr", "epsilon-rr")
	f.Float64Var(&o.BudgetEpsilon, "budget-epsilon", 4, "the ledger's ε cap per record")
	deprecate(f, "budget", "budget-epsilon")
	f.Uint64Var(&o.Seed, "seed", 0, "seed for reproducible noise (experiments only; default: secure randomness)")
	f.BoolVar(&o.JSON, "json", false, "print one JSON object")
	rootCmd.AddCommand(cmd)
}

func runDemo(cmd *cobra.Command, _ []string) error {
	o := &demoOpts
	eps, delta, batch, epochs := o.Epsilon, o.Delta, o.Batch, o.Epochs
	seed := givenSeed(cmd, o.Seed)
	train, _, err := data.Demo()
	if err != nil {
		return fmt.Errorf("loading the bundled demo data: %w", err)
	}
	if batch <= 0 || batch > train.Len() || epochs <= 0 {
		return fmt.Errorf("--batch must be in [1, %d] and --epochs > 0", train.Len())
	}
	q := float64(batch) / float64(train.Len())
	steps := int(float64(epochs) / q)
	out := demoOutput{Records: train.Len(), Seed: seed}
	sigma, res, err := account.CalibrateNoise(account.Budget{Epsilon: eps, Delta: delta}, q, steps, account.Options{})
	if err != nil {
		return fmt.Errorf("calibrating DP-SGD noise: %w", err)
	}
	out.NoiseMultiplier, out.DPSGD = sigma, res
	led, err := ledger.New(account.Budget{Epsilon: o.BudgetEpsilon, Delta: delta})
	if err != nil {
		return err
	}
	out.Ledger = led
	dpsgd, err := account.SubsampledGaussian([]account.Phase{{SampleRate: q, NoiseMultiplier: sigma, Steps: steps}})
	if err != nil {
		return fmt.Errorf("DP-SGD run: %w", err)
	}
	if _, err := led.Record(ledger.Charge{Groups: []string{demoGroup}, Loss: dpsgd, Note: "DP-SGD run (accounted, not trained, in this demo)"}); err != nil {
		return fmt.Errorf("DP-SGD run: %w", err)
	}
	r := rng.New(seed)
	if out.Releases, err = demoReleases(r, led, train, o.EpsilonCount, o.EpsilonRR); err != nil {
		return err
	}
	out.SpentEpsilon, out.SpentDelta = led.Spent(demoGroup)
	if o.JSON {
		return printJSON(cmd.OutOrStdout(), out)
	}
	printDemo(cmd.OutOrStdout(), out, q, steps)
	return nil
}

// demoReleases spends, then releases, a Laplace count of attacks and a
// randomized-response answer to "is record 0 an attack?".
func demoReleases(r *rng.Rand, led *ledger.Ledger, d *data.Dataset, epsCount, epsRR float64) ([]demoRelease, error) {
	lap, err := mech.NewLaplace(epsCount, 1)
	if err != nil {
		return nil, fmt.Errorf("--eps-count: %w", err)
	}
	rr, err := mech.NewRandomizedResponse(epsRR)
	if err != nil {
		return nil, fmt.Errorf("--eps-rr: %w", err)
	}
	attacks := 0.0
	for _, y := range d.Y {
		if y > 0 {
			attacks++
		}
	}
	group := []string{demoGroup}
	count, err := ledger.Release(led, lap, group, func() (float64, error) { return lap.Release(r, attacks) })
	if err != nil {
		return nil, fmt.Errorf("laplace count: %w", err)
	}
	bit, err := ledger.Release(led, rr, group, func() (float64, error) {
		if rr.Release(r, d.Y[0] > 0) {
			return 1, nil
		}
		return 0, nil
	})
	if err != nil {
		return nil, fmt.Errorf("randomized response: %w", err)
	}
	lc, rc := lap.Loss(), rr.Loss()
	return []demoRelease{
		{Mechanism: lc.Mechanism, Query: "number of attack records", Value: count, Epsilon: lc.Epsilon},
		{Mechanism: rc.Mechanism, Query: "is record 0 an attack (1/0)", Value: bit, Epsilon: rc.Epsilon},
	}, nil
}

func printDemo(w io.Writer, o demoOutput, q float64, steps int) {
	fmt.Fprintf(w, "bundled KDD sample: %d records\n", o.Records)
	fmt.Fprintf(w, "DP-SGD: q = %.6g, %d steps -> noise multiplier %.10g gives ε = %.10g at order %g (δ = %g)\n",
		q, steps, o.NoiseMultiplier, o.DPSGD.Epsilon, o.DPSGD.Order, o.DPSGD.Delta)
	for _, r := range o.Releases {
		fmt.Fprintf(w, "release: %-28s %-18s = %g  (ε = %g)\n", r.Query, r.Mechanism, r.Value, r.Epsilon)
	}
	fmt.Fprintf(w, "ledger [%s]: ε = %.10g, δ = %g of budget ε = %g\n",
		demoGroup, o.SpentEpsilon, o.SpentDelta, o.Ledger.Budget().Epsilon)
	if o.Seed != nil {
		fmt.Fprintf(w, "seed: %d (reproducible noise: experiments only)\n", *o.Seed)
	}
}
