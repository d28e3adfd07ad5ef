package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/spf13/cobra"
)

// accountCmd groups the RDP accountant's commands.
var accountCmd = &cobra.Command{
	Use:   "account",
	Short: "Privacy accounting for DP-SGD: ε of a run, noise and sampling-rate calibration",
}

var accountEpsilonCmd = &cobra.Command{
	Use:   "epsilon",
	Short: "(ε, δ) of Poisson-subsampled Gaussian steps (RDP accountant)",
	Long: `Computes the (ε, δ) guarantee of --steps steps of the Poisson-subsampled Gaussian
mechanism (sampling rate --sample-rate, noise multiplier --noise-multiplier), or of a
schedule of phases given as --schedule "q:steps,q:steps" or "q:sigma:steps,…", by the
Rényi-DP accountant over Opacus's default orders (extended by --orders).`,
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

func init() {
	common := func(c *cobra.Command) {
		f := c.Flags()
		f.Float64("delta", 0, "target δ (0 < δ < 1, required)")
		f.String("orders", "", "extra RDP orders added to the defaults, comma-separated (each > 1)")
		f.String("conversion", "balle2020", "RDP to (ε, δ) conversion: balle2020 or classic")
		f.Bool("json", false, "print one JSON object")
	}
	for _, c := range []*cobra.Command{accountEpsilonCmd, accountNoiseCmd, accountSampleRateCmd} {
		common(c)
		accountCmd.AddCommand(c)
	}
	f := accountEpsilonCmd.Flags()
	f.Float64("sample-rate", 0, "Poisson sampling rate q (0 ≤ q ≤ 1)")
	f.Float64("noise-multiplier", 0, "noise standard deviation over the L2 sensitivity (> 0)")
	f.Int("steps", 0, "number of steps")
	f.String("schedule", "", `phases "q:steps,…" or "q:sigma:steps,…" (replaces --sample-rate/--steps)`)
	f = accountNoiseCmd.Flags()
	f.Float64("epsilon", 0, "target ε (> 0, required)")
	f.Float64("sample-rate", 0, "Poisson sampling rate q (0 < q ≤ 1)")
	f.Int("steps", 0, "number of steps")
	f.String("schedule", "", `phases "q:steps,…" sharing the calibrated noise (replaces --sample-rate/--steps)`)
	f = accountSampleRateCmd.Flags()
	f.Float64("epsilon", 0, "target ε (> 0, required)")
	f.Float64("noise-multiplier", 0, "noise multiplier σ (> 0, required)")
	f.Int("steps", 0, "number of steps (required)")
	rootCmd.AddCommand(accountCmd)
}

func runAccountEpsilon(cmd *cobra.Command, _ []string) error {
	delta, opt, err := accountCommon(cmd)
	if err != nil {
		return err
	}
	phases, err := accountPhases(cmd, true)
	if err != nil {
		return err
	}
	res, err := account.Epsilon(phases, delta, opt)
	if err != nil {
		return err
	}
	if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
		return printJSON(cmd.OutOrStdout(), res)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "ε = %s at RDP order %s for δ = %s (%s conversion)\n",
		accountFloat(res.Epsilon), accountFloat(res.Order), accountFloat(res.Delta), opt.Conversion)
	return nil
}

// accountNoiseResult is the JSON of `dpal account noise`.
type accountNoiseResult struct {
	NoiseMultiplier float64 `json:"noise_multiplier"`
	Epsilon         float64 `json:"epsilon"`
	EdgeWarning     string  `json:"edge_warning,omitempty"`
}

func runAccountNoise(cmd *cobra.Command, _ []string) error {
	target, opt, err := accountTarget(cmd)
	if err != nil {
		return err
	}
	phases, err := accountPhases(cmd, false)
	if err != nil {
		return err
	}
	sigma, res, err := account.CalibrateNoiseSchedule(target, phases, opt)
	if err != nil {
		return err
	}
	out := accountNoiseResult{NoiseMultiplier: sigma, Epsilon: res.Epsilon, EdgeWarning: res.EdgeWarning}
	if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
		return printJSON(cmd.OutOrStdout(), out)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "noise multiplier σ = %s gives ε = %s (order %s) for δ = %s\n",
		accountFloat(sigma), accountFloat(res.Epsilon), accountFloat(res.Order), accountFloat(target.Delta))
	return nil
}

// accountSampleRateResult is the JSON of `dpal account sample-rate`.
type accountSampleRateResult struct {
	SampleRate  float64 `json:"sample_rate"`
	EdgeWarning string  `json:"edge_warning,omitempty"`
}

func runAccountSampleRate(cmd *cobra.Command, _ []string) error {
	target, opt, err := accountTarget(cmd)
	if err != nil {
		return err
	}
	sigma, err := accountRequiredFloat(cmd, "noise-multiplier")
	if err != nil {
		return err
	}
	if !cmd.Flags().Changed("steps") {
		return fmt.Errorf("--steps is required")
	}
	steps, _ := cmd.Flags().GetInt("steps")
	q, res, err := account.CalibrateSampleRate(target, sigma, steps, opt)
	if err != nil {
		return err
	}
	if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
		return printJSON(cmd.OutOrStdout(), accountSampleRateResult{SampleRate: q, EdgeWarning: res.EdgeWarning})
	}
	fmt.Fprintf(cmd.OutOrStdout(), "sample rate q = %s gives ε = %s (order %s) for δ = %s\n",
		accountFloat(q), accountFloat(res.Epsilon), accountFloat(res.Order), accountFloat(target.Delta))
	return nil
}

// accountTarget reads the calibration commands' target budget (--epsilon
// and --delta) and the accountant options.
func accountTarget(cmd *cobra.Command) (account.Budget, account.Options, error) {
	delta, opt, err := accountCommon(cmd)
	if err != nil {
		return account.Budget{}, opt, err
	}
	eps, err := accountRequiredFloat(cmd, "epsilon")
	if err != nil {
		return account.Budget{}, opt, err
	}
	return account.Budget{Epsilon: eps, Delta: delta}, opt, nil
}

// accountCommon reads --delta, --orders and --conversion.
func accountCommon(cmd *cobra.Command) (float64, account.Options, error) {
	var opt account.Options
	delta, err := accountRequiredFloat(cmd, "delta")
	if err != nil {
		return 0, opt, err
	}
	if !(delta > 0 && delta < 1) {
		return 0, opt, fmt.Errorf("--delta must satisfy 0 < delta < 1, got %v", delta)
	}
	conv, _ := cmd.Flags().GetString("conversion")
	if opt.Conversion, err = account.ParseConversion(conv); err != nil {
		return 0, opt, fmt.Errorf("--conversion: %w", err)
	}
	s, _ := cmd.Flags().GetString("orders")
	extra, err := accountParseOrders(s)
	if err != nil {
		return 0, opt, err
	}
	opt.Orders, err = account.ExtendOrders(extra...)
	if err != nil {
		return 0, opt, fmt.Errorf("--orders: %w", err)
	}
	return delta, opt, nil
}

// accountParseOrders parses a comma-separated list of orders.
func accountParseOrders(s string) ([]float64, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil {
			return nil, fmt.Errorf("--orders: %q is not a number", strings.TrimSpace(f))
		}
		out = append(out, v)
	}
	return out, nil
}

// accountPhases reads --schedule, or --sample-rate and --steps (and, for
// the epsilon command, --noise-multiplier).
func accountPhases(cmd *cobra.Command, withSigma bool) ([]account.Phase, error) {
	f := cmd.Flags()
	sigma := 1.0 // placeholder where the noise is being calibrated
	if withSigma {
		sigma, _ = f.GetFloat64("noise-multiplier")
		if !f.Changed("noise-multiplier") {
			sigma = 0
		}
	}
	if sched, _ := f.GetString("schedule"); f.Changed("schedule") {
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
	q, _ := f.GetFloat64("sample-rate")
	steps, _ := f.GetInt("steps")
	p := account.Phase{SampleRate: q, NoiseMultiplier: sigma, Steps: steps}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return []account.Phase{p}, nil
}

// accountRequiredFloat reads a float flag the user must set.
func accountRequiredFloat(cmd *cobra.Command, name string) (float64, error) {
	if !cmd.Flags().Changed(name) {
		return 0, fmt.Errorf("--%s is required", name)
	}
	return cmd.Flags().GetFloat64(name)
}

// accountFloat prints a float with the shortest exact representation.
func accountFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
