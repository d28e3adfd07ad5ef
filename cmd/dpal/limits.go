package main

// Checks of the flags that size a run or set its privacy target, shared by
// the commands (issue 24): refused up front, with the number and the
// limit, before the run allocates anything.

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dpal-dev/dpal/active/stream"
	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dpsgd"
	"github.com/dpal-dev/dpal/online"
)

// checkTargetFlags refuses a target-ε flag the user set above
// account.MaxTargetEpsilon (or not > 0).
func checkTargetFlags(cmd *cobra.Command, names ...string) error {
	for _, n := range names {
		if !cmd.Flags().Changed(n) {
			continue
		}
		v, err := cmd.Flags().GetFloat64(n)
		if err != nil {
			return err
		}
		if err := account.ValidateTargetEpsilon(v); err != nil {
			return fmt.Errorf("--%s: %w", n, err)
		}
	}
	return nil
}

// defaultMaxMemory is --max-memory's default: what a run may allocate on
// a development machine without a word.
const defaultMaxMemory = "8GiB"

// maxMemoryFlag declares --max-memory.
func maxMemoryFlag(f *pflag.FlagSet) {
	f.String("max-memory", defaultMaxMemory, "refuse a run whose estimated memory is above this (bytes, or with KiB, MiB, GiB or TiB)")
}

// memoryLimit is --max-memory in bytes.
func memoryLimit(cmd *cobra.Command) (float64, error) {
	limit, _, err := maxMemory(cmd)
	return limit, err
}

// maxMemory reads --max-memory: the limit in bytes, and as the user
// wrote it (for the messages).
func maxMemory(cmd *cobra.Command) (limit float64, given string, err error) {
	if given, err = cmd.Flags().GetString("max-memory"); err != nil {
		return 0, "", err
	}
	if limit, err = parseBytes(given); err != nil {
		return 0, "", fmt.Errorf("--max-memory: %w", err)
	}
	return limit, given, nil
}

// checkMemory refuses a run whose estimate need (bytes, for what) is
// above --max-memory.
func checkMemory(cmd *cobra.Command, need float64, what string) error {
	limit, given, err := maxMemory(cmd)
	if err != nil {
		return err
	}
	if need > limit {
		return fmt.Errorf("%s would take about %s, above --max-memory %s", what, formatBytes(need), given)
	}
	return nil
}

// byteUnits are the units parseBytes reads (binary, so that "8GiB" is
// what it says).
var byteUnits = []struct {
	suffix string
	scale  float64
}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}, {"", 1}}

// parseBytes reads a size such as "8GiB", "512MiB" or "1048576": a
// finite number > 0 with an optional unit.
func parseBytes(s string) (float64, error) {
	t := strings.TrimSpace(s)
	for _, u := range byteUnits {
		num, ok := strings.CutSuffix(t, u.suffix)
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
		if err != nil || !(v > 0) || math.IsInf(v*u.scale, 0) {
			break
		}
		return v * u.scale, nil
	}
	return 0, fmt.Errorf("%q is not a size > 0 such as 8GiB, 512MiB or 1048576", s)
}

// formatBytes writes n bytes in the largest unit that keeps it ≥ 1.
func formatBytes(n float64) string {
	for _, u := range byteUnits[:4] {
		if n >= u.scale {
			return fmt.Sprintf("%.3g %s", n/u.scale, u.suffix)
		}
	}
	return fmt.Sprintf("%.0f B", n)
}

// epochBytes is what each epoch costs a DP-SGD run of dpal train, which
// charges epoch by epoch: its end step, its ledger charge computed ahead
// (an RDP curve of 151 orders, a note) and then its ledger entry, its
// report in the log and in the --json output. Measured: 14 KB of resident
// memory per epoch (10,000 to 20,000 epochs of one step each).
const epochBytes = 16 << 10

// checkTrainSize refuses a DP-SGD run of more than dpsgd.MaxSteps steps,
// or whose epochs would hold more than --max-memory, before anything is
// built.
func checkTrainSize(cmd *cobra.Command, s trainSettings, n int) error {
	if _, _, err := dpsgd.Schedule(s.Epochs, s.Batch, n); err != nil {
		return err
	}
	epochs := math.Ceil(s.Epochs)
	return checkMemory(cmd, epochs*epochBytes, fmt.Sprintf("--epochs %v: the charges, ledger entries and reports of %.0f epochs", s.Epochs, epochs))
}

// checkOCPMemory refuses an ocp run whose learner (spec, with Cost.Dim and
// Steps set) and, when synthetic > 0, the synthetic records it would
// generate pass --max-memory. For synthetic data it names the largest
// --dim that fits.
func checkOCPMemory(cmd *cobra.Command, spec online.Spec, synthetic int) error {
	need := func(d int) float64 {
		s := spec
		s.Cost.Dim = d
		b := online.MemoryBytes(s)
		if synthetic > 0 {
			b += online.SyntheticBytes(synthetic, d)
		}
		return b
	}
	limit, given, err := maxMemory(cmd)
	if err != nil {
		return err
	}
	d := spec.Cost.Dim
	what := fmt.Sprintf("the %s learner at d = %d", spec.Algorithm, d)
	if synthetic == 0 || need(d) <= limit {
		return checkMemory(cmd, need(d), what)
	}
	lo, hi := 0, d // need(hi) > limit; the largest d that fits is in [lo, hi)
	for hi-lo > 1 {
		if mid := lo + (hi-lo)/2; need(mid) <= limit {
			lo = mid
		} else {
			hi = mid
		}
	}
	return fmt.Errorf("--dim %d: the synthetic data (%d records) and %s would take about %s, above --max-memory %s; the largest that fits is d = %d",
		d, synthetic+synthetic/10, what, formatBytes(need(d)), given, lo)
}

// checkPositiveFlags refuses a numeric flag the user set to a value that is
// not finite and > 0. Such flags' zero default stands for "the dataset's
// default": an explicit 0 used to select it without a word.
func checkPositiveFlags(cmd *cobra.Command, names ...string) error {
	for _, n := range names {
		fl := cmd.Flags().Lookup(n)
		if fl == nil || !fl.Changed {
			continue
		}
		v, err := strconv.ParseFloat(fl.Value.String(), 64)
		if err != nil || !(v > 0) || math.IsInf(v, 0) {
			return fmt.Errorf("--%s must be > 0, got %s (omit it for the default)", n, fl.Value)
		}
	}
	return nil
}

// ocpSizeFlags checks ocp's --records (≥ 0: 0 is every record, or the
// synthetic default) and --dim (≥ 1, synthetic data only; 0 when unset),
// given as records and dim.
func ocpSizeFlags(cmd *cobra.Command, data string, records, dim int) (int, int, error) {
	f := cmd.Flags()
	switch {
	case records < 0:
		return 0, 0, fmt.Errorf("--records must be >= 0 (0: all, or %d synthetic), got %d", online.SyntheticRecords, records)
	case !f.Changed("dim"):
		return records, 0, nil
	case data != "synthetic":
		return 0, 0, fmt.Errorf("--dim sets the synthetic data's dimension; --data %s has its own", data)
	case dim < 1:
		return 0, 0, fmt.Errorf("--dim must be >= 1, got %d", dim)
	}
	return records, dim, nil
}

// deltaFlag returns the δ of --name for a guarantee that covers n records
// (0: unknown): the user's, 0 < δ < 1, with a warning on stderr when it is
// above 1/n, or else account.DefaultDelta(n).
func deltaFlag(cmd *cobra.Command, name string, n int) (float64, error) {
	d, err := cmd.Flags().GetFloat64(name)
	if err != nil {
		return 0, err
	}
	return checkDelta(cmd, name, d, n)
}

// checkDelta is deltaFlag for a command that bound --name to d.
func checkDelta(cmd *cobra.Command, name string, d float64, n int) (float64, error) {
	if !cmd.Flags().Changed(name) {
		return account.DefaultDelta(n), nil
	}
	if !(d > 0 && d < 1) {
		return 0, fmt.Errorf("--%s must satisfy 0 < delta < 1, got %v", name, d)
	}
	if n > 0 && d > 1/float64(n) {
		fmt.Fprintf(cmd.ErrOrStderr(), "dpal: warning: --%s %v is above 1/n = %.3g for the n = %d records the guarantee covers: "+
			"a mechanism that publishes one record in full with probability δ meets it (the default is min(1e-5, 1/(10n)) = %.3g)\n",
			name, d, 1/float64(n), n, account.DefaultDelta(n))
	}
	return d, nil
}

// maxRejected reads stream's --max-rejected, a fraction in [0, 1]. It
// applies to event mode, from a file or stdin alike (a pipe is judged
// when it ends, as a file is); dataset mode rejects no row (an invalid
// row stops the run), so there the flag is refused.
func maxRejected(cmd *cobra.Command, eventMode bool) (float64, error) {
	f := cmd.Flags()
	v, err := f.GetFloat64("max-rejected")
	switch {
	case err != nil:
		return 0, err
	case !eventMode && f.Changed("max-rejected"):
		return 0, errors.New("--max-rejected applies to event mode (--input): dataset mode rejects no row, an invalid row stops the run")
	case !(v >= 0 && v <= 1):
		return 0, fmt.Errorf("--max-rejected must be in [0, 1], got %v", v)
	}
	return v, nil
}

// checkRejected fails a run that rejected more than the fraction max of
// its events.
func checkRejected(rejected, accepted int, max float64) error {
	total := rejected + accepted
	if total == 0 || float64(rejected) <= max*float64(total) {
		return nil
	}
	return fmt.Errorf("%d of %d events rejected (%.1f %%), above --max-rejected %v (details in the log on stderr)",
		rejected, total, 100*float64(rejected)/float64(total), max)
}

// checkStreamMemory refuses a stream learner of configuration cfg whose
// allocations (stream.Config.MemoryBytes) pass --max-memory.
func checkStreamMemory(cmd *cobra.Command, cfg stream.Config) error {
	return checkMemory(cmd, cfg.MemoryBytes(), fmt.Sprintf("the stream learner at d = %d", cfg.Dim))
}
