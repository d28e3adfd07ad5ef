package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/spf13/cobra"
)

// accountCmd groups the accountants' commands. It runs only to refuse an
// unknown subcommand (cobra would print the help and exit 0).
var accountCmd = &cobra.Command{
	Use:   "account",
	Short: "Privacy accounting for DP-SGD: ε of a run, noise and sampling-rate calibration",
	Args:  cobra.ArbitraryArgs,
	RunE: func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return fmt.Errorf("unknown command %q for %q (want epsilon, noise or sample-rate)", args[0], cmd.CommandPath())
		}
		return cmd.Help()
	},
}

var accountEpsilonCmd = &cobra.Command{
	Use:   "epsilon",
	Short: "(ε, δ) of Poisson-subsampled Gaussian steps (RDP or PLD accountant)",
	Long: `Computes the (ε, δ) guarantee of --steps steps of the Poisson-subsampled Gaussian
mechanism (sampling rate --sample-rate, noise multiplier --noise-multiplier), or of a
schedule of phases given as --schedule "q:steps,q:steps" or "q:sigma:steps,…", by the
Rényi-DP accountant over Opacus's default orders (extended by --orders), or with
--accountant pld by the privacy-loss-distribution accountant, which also gives a lower
bound on the exact ε (see docs/accounting-pld.md).`,
	Args: cobra.NoArgs,
	RunE: runAccountEpsilon,
}

var accountNoiseCmd = &cobra.Command{
	Use:   "noise",
	Short: "Smallest noise multiplier that meets a target (ε, δ)",
	Args:  cobra.NoArgs,
	RunE:  runAccountNoise,
}

var accountSampleRateCmd = &cobra.Command{
	Use:   "sample-rate",
	Short: "Largest Poisson sampling rate that meets a target (ε, δ)",
	Args:  cobra.NoArgs,
	RunE:  runAccountSampleRate,
}

// accountFlags are the flags of an account subcommand: the accountant's,
// which all three have, and those of the run (each has some).
type accountFlags struct {
	Delta, PLDStep                       float64
	Orders, Conversion, Accountant       string
	JSON                                 bool
	Epsilon, SampleRate, NoiseMultiplier float64
	Steps                                int
	Schedule                             string
}

// The flags of account epsilon, account noise and account sample-rate.
var accountEpsilonOpts, accountNoiseOpts, accountSampleRateOpts accountFlags

func init() {
	common := func(c *cobra.Command, o *accountFlags) {
		f := c.Flags()
		f.Float64Var(&o.Delta, "delta", 0, "target δ (0 < δ < 1, required)")
		f.StringVar(&o.Orders, "orders", "", "extra RDP orders added to the defaults, comma-separated (each > 1)")
		f.StringVar(&o.Conversion, "conversion", "balle2020", "RDP to (ε, δ) conversion: balle2020 or classic")
		f.StringVar(&o.Accountant, "accountant", "rdp", "rdp (Rényi DP) or pld (privacy-loss distribution: tighter, with a lower bound)")
		f.Float64Var(&o.PLDStep, "pld-step", 0, fmt.Sprintf("PLD grid width Δ (a smaller grid is tighter and slower); unset: %v, or the finest coarser step whose grids fit %d points (epsilon)", account.DefaultPLDStep, account.PLDMaxPoints))
		f.BoolVar(&o.JSON, "json", false, "print one JSON object")
		accountCmd.AddCommand(c)
	}
	f, o := accountEpsilonCmd.Flags(), &accountEpsilonOpts
	common(accountEpsilonCmd, o)
	f.Float64Var(&o.SampleRate, "sample-rate", 0, "Poisson sampling rate q (0 ≤ q ≤ 1)")
	f.Float64Var(&o.NoiseMultiplier, "noise-multiplier", 0, "noise standard deviation over the L2 sensitivity (> 0)")
	f.IntVar(&o.Steps, "steps", 0, "number of steps")
	f.StringVar(&o.Schedule, "schedule", "", `phases "q:steps,…" or "q:sigma:steps,…" (replaces --sample-rate/--steps)`)
	f, o = accountNoiseCmd.Flags(), &accountNoiseOpts
	common(accountNoiseCmd, o)
	f.Float64Var(&o.Epsilon, "epsilon", 0, "target ε (> 0, required)")
	f.Float64Var(&o.SampleRate, "sample-rate", 0, "Poisson sampling rate q (0 < q ≤ 1)")
	f.IntVar(&o.Steps, "steps", 0, "number of steps")
	f.StringVar(&o.Schedule, "schedule", "", `phases "q:steps,…" sharing the calibrated noise (replaces --sample-rate/--steps)`)
	f, o = accountSampleRateCmd.Flags(), &accountSampleRateOpts
	common(accountSampleRateCmd, o)
	f.Float64Var(&o.Epsilon, "epsilon", 0, "target ε (> 0, required)")
	f.Float64Var(&o.NoiseMultiplier, "noise-multiplier", 0, "noise multiplier σ (> 0, required)")
	f.IntVar(&o.Steps, "steps", 0, "number of steps (required)")
	rootCmd.AddCommand(accountCmd)
}

// accountResult is the JSON of the account commands: the guarantee, the
// calibrated parameter where there is one, the RDP order (rdp) or the
// lower bound on the exact ε (pld).
type accountResult struct {
	NoiseMultiplier float64  `json:"noise_multiplier,omitempty"`
	SampleRate      float64  `json:"sample_rate,omitempty"`
	Epsilon         float64  `json:"epsilon"`
	EpsilonLower    *float64 `json:"epsilon_lower,omitempty"`
	Delta           float64  `json:"delta"`
	Order           *float64 `json:"order,omitempty"`
	// Step is the PLD grid width the bounds were computed on.
	Step       float64 `json:"step,omitempty"`
	Accountant string  `json:"accountant"`
	// EdgeWarning is the RDP edge-of-orders warning, or the PLD
	// accountant's warning that rounding dominates δ.
	EdgeWarning string `json:"edge_warning,omitempty"`
}

func rdpResult(r account.EpsilonResult) accountResult {
	out := accountResult{Epsilon: r.Epsilon, Delta: r.Delta, Accountant: "rdp", EdgeWarning: r.EdgeWarning}
	if r.Order != 0 {
		out.Order = &r.Order
	}
	return out
}

func pldResult(r account.PLDResult) accountResult {
	return accountResult{Epsilon: r.Epsilon, EpsilonLower: &r.EpsilonLower, Delta: r.Delta, Step: r.Step, Accountant: "pld", EdgeWarning: r.Warning}
}

// text is the one-line text output: what (e.g. "noise multiplier σ = …
// gives "), then the guarantee and how it was reached.
func (r accountResult) text(what string, conv account.Conversion) string {
	eps, delta := accountFloat(r.Epsilon), accountFloat(r.Delta)
	switch {
	case r.EpsilonLower != nil && r.Step != 0:
		return fmt.Sprintf("%sε = %s for δ = %s (PLD accountant, grid step %s; the exact ε is at least %s)\n", what, eps, delta, accountFloat(r.Step), accountFloat(*r.EpsilonLower))
	case r.EpsilonLower != nil:
		return fmt.Sprintf("%sε = %s for δ = %s (PLD accountant; the exact ε is at least %s)\n", what, eps, delta, accountFloat(*r.EpsilonLower))
	case r.Order == nil:
		return fmt.Sprintf("%sε = %s for δ = %s (no step samples a record: nothing is released)\n", what, eps, delta)
	case what == "":
		return fmt.Sprintf("ε = %s at RDP order %s for δ = %s (%s conversion)\n", eps, accountFloat(*r.Order), delta, conv)
	}
	return fmt.Sprintf("%sε = %s (order %s) for δ = %s\n", what, eps, accountFloat(*r.Order), delta)
}

func runAccountEpsilon(cmd *cobra.Command, _ []string) error {
	o := &accountEpsilonOpts
	delta, opt, err := accountCommon(cmd, o)
	if err != nil {
		return err
	}
	phases, err := accountPhases(cmd, o, true)
	if err != nil {
		return err
	}
	var out accountResult
	if opt.pld {
		terms, err := account.PhaseTerms(phases)
		if err != nil {
			return err
		}
		res := account.PLDResult{Delta: delta}
		if len(terms) > 0 {
			if res, err = account.PLDEpsilon(terms, delta, opt.grid); err != nil {
				return pldStepHint(err, terms, delta, opt.grid)
			}
		}
		out = pldResult(res)
	} else {
		res, err := account.Epsilon(phases, delta, opt.rdp)
		if err != nil {
			return err
		}
		out = rdpResult(res)
	}
	if o.JSON {
		return printJSON(cmd.OutOrStdout(), out)
	}
	fmt.Fprint(cmd.OutOrStdout(), out.text("", opt.rdp.Conversion))
	if out.Accountant == "pld" && out.EdgeWarning != "" {
		fmt.Fprintln(cmd.ErrOrStderr(), "warning:", out.EdgeWarning)
	}
	return nil
}

func runAccountNoise(cmd *cobra.Command, _ []string) error {
	o := &accountNoiseOpts
	target, opt, err := accountTarget(cmd, o)
	if err != nil {
		return err
	}
	phases, err := accountPhases(cmd, o, false)
	if err != nil {
		return err
	}
	var out accountResult
	if opt.pld {
		sigma, res, err := account.CalibrateNoisePLD(target, phases, opt.grid)
		if err != nil {
			return err
		}
		out = pldResult(res)
		out.NoiseMultiplier = sigma
	} else {
		sigma, res, err := account.CalibrateNoiseSchedule(target, phases, opt.rdp)
		if err != nil {
			return err
		}
		out = rdpResult(res)
		out.NoiseMultiplier = sigma
	}
	if o.JSON {
		return printJSON(cmd.OutOrStdout(), out)
	}
	fmt.Fprint(cmd.OutOrStdout(), out.text("noise multiplier σ = "+accountFloat(out.NoiseMultiplier)+" gives ", opt.rdp.Conversion))
	return nil
}

func runAccountSampleRate(cmd *cobra.Command, _ []string) error {
	o := &accountSampleRateOpts
	target, opt, err := accountTarget(cmd, o)
	if err != nil {
		return err
	}
	sigma, err := accountRequired(cmd, "noise-multiplier", o.NoiseMultiplier)
	if err != nil {
		return err
	}
	if !cmd.Flags().Changed("steps") {
		return fmt.Errorf("--steps is required")
	}
	steps := o.Steps
	var out accountResult
	if opt.pld {
		q, res, err := account.CalibrateSampleRatePLD(target, sigma, steps, opt.grid)
		if err != nil {
			return err
		}
		out = pldResult(res)
		out.SampleRate = q
	} else {
		q, res, err := account.CalibrateSampleRate(target, sigma, steps, opt.rdp)
		if err != nil {
			return err
		}
		out = rdpResult(res)
		out.SampleRate = q
	}
	if o.JSON {
		return printJSON(cmd.OutOrStdout(), out)
	}
	fmt.Fprint(cmd.OutOrStdout(), out.text("sample rate q = "+accountFloat(out.SampleRate)+" gives ", opt.rdp.Conversion))
	return nil
}

// pldStepHint adds to an error from a --pld-step whose grid does not fit
// the step that would: the finest coarser one on which the query succeeds.
func pldStepHint(err error, terms []account.PLDTerm, delta float64, opt account.PLDOptions) error {
	var long *account.GridTooLongError
	if !errors.As(err, &long) || opt.Step == 0 {
		return err
	}
	opt.Coarsen = true
	res, err2 := account.PLDEpsilon(terms, delta, opt)
	if err2 != nil {
		return err
	}
	return fmt.Errorf("%w; --pld-step %s fits (omit --pld-step to let dpal choose it)", err, accountFloat(res.Step))
}

// accountOptions are the accountant choice and its settings.
type accountOptions struct {
	pld  bool
	rdp  account.Options
	grid account.PLDOptions
}

// accountTarget reads the calibration commands' target budget (--epsilon
// and --delta) and the accountant options.
func accountTarget(cmd *cobra.Command, o *accountFlags) (account.Budget, accountOptions, error) {
	delta, opt, err := accountCommon(cmd, o)
	if err != nil {
		return account.Budget{}, opt, err
	}
	eps, err := accountRequired(cmd, "epsilon", o.Epsilon)
	if err != nil {
		return account.Budget{}, opt, err
	}
	return account.Budget{Epsilon: eps, Delta: delta}, opt, nil
}

// accountCommon reads --delta, --orders, --conversion, --accountant and
// --pld-step.
func accountCommon(cmd *cobra.Command, o *accountFlags) (float64, accountOptions, error) {
	var opt accountOptions
	delta, err := accountRequired(cmd, "delta", o.Delta)
	if err != nil {
		return 0, opt, err
	}
	if !(delta > 0 && delta < 1) {
		return 0, opt, fmt.Errorf("--delta must satisfy 0 < delta < 1, got %v", delta)
	}
	switch name := o.Accountant; name {
	case "rdp":
	case "pld":
		opt.pld = true
	default:
		return 0, opt, fmt.Errorf("--accountant must be rdp or pld, got %q", name)
	}
	if cmd.Flags().Changed("pld-step") {
		// an explicit step is kept: a grid too long for it is an error
		opt.grid.Step = o.PLDStep
		if !(opt.grid.Step >= 1e-7 && opt.grid.Step <= 1) {
			return 0, opt, fmt.Errorf("--pld-step must lie in [1e-07, 1], got %v", opt.grid.Step)
		}
	}
	if opt.rdp.Conversion, err = account.ParseConversion(o.Conversion); err != nil {
		return 0, opt, fmt.Errorf("--conversion: %w", err)
	}
	extra, err := accountParseOrders(o.Orders)
	if err != nil {
		return 0, opt, err
	}
	opt.rdp.Orders, err = account.ExtendOrders(extra...)
	if err != nil {
		return 0, opt, fmt.Errorf("--orders: %w", err)
	}
	return delta, opt, nil
}

// accountParseOrders parses a comma-separated list of orders; an empty
// --orders adds none.
func accountParseOrders(s string) ([]float64, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	out, err := parseFloats(s)
	if err != nil {
		return nil, fmt.Errorf("--orders: %w", err)
	}
	return out, nil
}

// parseFloats reads a comma-separated list of numbers; the error names the
// field that is not one (callers prefix the flag).
func parseFloats(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", strings.TrimSpace(f))
		}
		out = append(out, v)
	}
	return out, nil
}

// accountPhases reads --schedule, or --sample-rate and --steps (and, for
// the epsilon command, --noise-multiplier).
func accountPhases(cmd *cobra.Command, o *accountFlags, withSigma bool) ([]account.Phase, error) {
	f := cmd.Flags()
	sigma := 1.0 // placeholder where the noise is being calibrated
	if withSigma {
		sigma = o.NoiseMultiplier
		if !f.Changed("noise-multiplier") {
			sigma = 0
		}
	}
	if sched := o.Schedule; f.Changed("schedule") {
		if f.Changed("sample-rate") || f.Changed("steps") {
			return nil, fmt.Errorf("--schedule replaces --sample-rate and --steps; give one or the other")
		}
		phases, err := account.ParseSchedule(sched, sigma)
		if err != nil {
			return nil, fmt.Errorf("--schedule: %w", err)
		}
		return phases, nil
	}
	for _, name := range []string{"sample-rate", "steps"} {
		if !f.Changed(name) {
			return nil, fmt.Errorf("--%s is required (or give --schedule)", name)
		}
	}
	if withSigma && !f.Changed("noise-multiplier") {
		return nil, fmt.Errorf("--noise-multiplier is required")
	}
	p := account.Phase{SampleRate: o.SampleRate, NoiseMultiplier: sigma, Steps: o.Steps}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return []account.Phase{p}, nil
}

// accountRequired is v, the value of a float flag --name the user must
// set, or an error when it was not given.
func accountRequired(cmd *cobra.Command, name string, v float64) (float64, error) {
	if !cmd.Flags().Changed(name) {
		return 0, fmt.Errorf("--%s is required", name)
	}
	return v, nil
}

// accountFloat prints a float with the shortest exact representation.
func accountFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
