// Command dpal-beam runs dpal's distributed stages on Apache Beam. It is a
// separate binary in a separate module so that the core dpal binary stays
// free of Beam. Today it has one: `dpal-beam kanon sketch`, the sampling
// + sketching + exact-k stage of `dpal kanon run`.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/local" // the survivors file on the driver's disk
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/textio"
	//lint:ignore SA1019 the direct runner is offered beside prism, as the issue asks; prism is the default
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/direct"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"
	"github.com/spf13/cobra"

	"github.com/dpal-dev/dpal/beam/kanonbeam"
	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/kanon"
)

func main() {
	root := &cobra.Command{Use: "dpal-beam", Short: "dpal's distributed stages on Apache Beam", SilenceUsage: true, SilenceErrors: true}
	kanonCmd := &cobra.Command{Use: "kanon", Short: "Pre-sampling + k-anonymity stages"}
	sketchCmd := &cobra.Command{
		Use:   "sketch",
		Short: "Sample a query log, sketch it on the workers, keep queries seen >= k times; charge, then release",
		Long: `Runs the sampling + Count-Mean-Min sketch + exact-k stage as a Beam pipeline
(--runner direct or prism, in process) on a text log (one query per line, optional tab
and label), charges the Li-Qardaji-Su (epsilon, delta) at --delta to the ledger, and only
then prints the surviving queries. With --seed the sample is reproducible and matches
'kanon.Stage' on one machine; without it the seed comes from the secure source and is
not shown. The driver enumerates the log's lines (the occurrence index keys the sample).`,
		Args: cobra.NoArgs,
		RunE: runSketch,
	}
	f := sketchCmd.Flags()
	f.String("log", "", "text log (required)")
	f.Float64("beta", 0.3, "sampling rate")
	f.Int("k", 20, "frequency threshold")
	f.Float64("delta", 1e-6, "delta at which epsilon is charged")
	f.Uint64("seed", 0, "seed of the sample (experiments only; default: secure and secret)")
	f.String("runner", "prism", "direct or prism")
	f.Int("rows", 4, "sketch rows")
	f.Int("width", 1<<16, "sketch width (power of two)")
	f.String("ledger", "", "durable ledger file (default: in memory)")
	f.Float64("budget-epsilon", 10, "ledger epsilon budget")
	f.Float64("budget-delta", 1e-4, "ledger delta budget")
	kanonCmd.AddCommand(sketchCmd)
	root.AddCommand(kanonCmd)
	beam.Init()
	if err := root.Execute(); err != nil {
		fmt.Fprintf(os.Stderr, "dpal-beam: %v\n", err)
		os.Exit(1)
	}
}

// output is the JSON the command prints.
type output struct {
	Epsilon  float64  `json:"epsilon"`
	Delta    float64  `json:"delta"`
	NMax     int      `json:"n_max"`
	Seed     *uint64  `json:"seed,omitempty"`
	Released []string `json:"released"`
}

func runSketch(cmd *cobra.Command, _ []string) error {
	f := cmd.Flags()
	path, _ := f.GetString("log")
	if path == "" {
		return fmt.Errorf("--log is required")
	}
	var p kanonbeam.Params
	p.Beta, _ = f.GetFloat64("beta")
	p.K, _ = f.GetInt("k")
	p.Rows, _ = f.GetInt("rows")
	p.Width, _ = f.GetInt("width")
	if err := p.Validate(); err != nil {
		return err
	}
	delta, _ := f.GetFloat64("delta")
	guarantee, err := kanon.Epsilon(p.Beta, p.K, delta)
	if err != nil {
		return err
	}
	var out output
	if f.Changed("seed") {
		p.Seed, _ = f.GetUint64("seed")
		out.Seed = &p.Seed
	} else {
		p.Seed = rng.Secure().Uint64()
	}
	log, err := kanon.ReadLogFile(path)
	if err != nil {
		return err
	}
	survivors, err := runPipeline(cmd, log, p)
	if err != nil {
		return err
	}
	led, err := openLedger(cmd)
	if err != nil {
		return err
	}
	defer led.Close()
	out.Epsilon, out.Delta, out.NMax = guarantee.Epsilon, guarantee.Delta, guarantee.NMax
	released, err := ledger.ReleaseCharge(led, ledger.Charge{Groups: []string{kanon.Group}, Loss: guarantee.Loss(),
		Note: fmt.Sprintf("dpal-beam kanon sketch, beta=%v k=%d", p.Beta, p.K)}, func() ([]string, error) { return survivors, nil })
	if err != nil {
		return err
	}
	out.Released = released
	enc := json.NewEncoder(cmd.OutOrStdout())
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// runPipeline runs the stage and reads its output back (a file in a
// private temporary directory on the trusted side), sorted.
func runPipeline(cmd *cobra.Command, log []kanon.Query, p kanonbeam.Params) ([]string, error) {
	runner, _ := cmd.Flags().GetString("runner")
	exec := map[string]func(context.Context, *beam.Pipeline) (beam.PipelineResult, error){"direct": direct.Execute, "prism": prism.Execute}[runner]
	if exec == nil {
		return nil, fmt.Errorf("--runner must be direct or prism, got %q", runner)
	}
	dir, err := os.MkdirTemp("", "dpal-beam-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	pl, s := beam.NewPipelineWithRoot()
	lines := make([]kanonbeam.Line, len(log))
	for i, q := range log {
		lines[i] = kanonbeam.Line{Index: uint64(i), Text: q.Text}
	}
	outPath := filepath.Join(dir, "survivors.txt")
	textio.Write(s, outPath, kanonbeam.Survivors(s, beam.CreateList(s, lines), p))
	if _, err := exec(cmd.Context(), pl); err != nil {
		return nil, fmt.Errorf("beam %s runner: %w", runner, err)
	}
	fh, err := os.Open(outPath)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	var out []string
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	slices.Sort(out)
	return out, sc.Err()
}

func openLedger(cmd *cobra.Command) (*ledger.Ledger, error) {
	f := cmd.Flags()
	var b account.Budget
	b.Epsilon, _ = f.GetFloat64("budget-epsilon")
	b.Delta, _ = f.GetFloat64("budget-delta")
	path, _ := f.GetString("ledger")
	if path == "" {
		return ledger.New(b)
	}
	st, err := ledger.OpenFile(path)
	if err != nil {
		return nil, err
	}
	led, err := ledger.Open(st, b)
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return led, nil
}
