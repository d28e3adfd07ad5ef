package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/dpal-dev/dpal/data"
	"github.com/dpal-dev/dpal/outfile"
	"github.com/dpal-dev/dpal/repro/searchrepro"
)

var reproSearchCmd = &cobra.Command{
	Use:   "search",
	Short: "Reproduce Bittner, Sarwate, Wright (2018) §6: DP noisy binary search, Figs. 1-4 and Prop. 3",
	Long: `Runs the private noisy binary search experiments of Bittner et al. (2018) on
the NAB series (raw and robust-deviation scores, preprocessed as in §6.1) and
on synthetic series of the two shapes the paper describes (mixture of
normals; mass skewed toward 0), with |S| = 4 and tau = 1(max f > 0.5):

  Fig. 1  error rate vs threshold ratio at eps = 1 (noisy max)
  Fig. 2  error rate and total privacy risk vs eps, three oracles
  Fig. 3  error rate vs eps under budgets b (no tau)
  Fig. 4  error rate and total risk vs the halting level alpha
  Prop. 3 measured E[T] of the binarised search vs the bound eq. 26

Writes <out>/*.png, the same data as *.csv, and <out>/summary.json with the
seed, the settings, every point and the NAB series that do not fit the
single-anomaly model (labelled anomaly not the maximum score).`,
	Args: cobra.NoArgs,
	RunE: runReproSearch,
}

// reproSearchOptions are the flags of `dpal repro search`, bound into
// the experiment's Config (its fields that no flag sets keep
// searchrepro.DefaultConfig's values).
type reproSearchOptions struct {
	Config     searchrepro.Config
	NoProgress bool
}

var reproSearchOpts = reproSearchOptions{Config: searchrepro.DefaultConfig()}

func init() {
	f, c := reproSearchCmd.Flags(), &reproSearchOpts.Config
	f.StringVar(&c.DataDir, "data-dir", data.DefaultDir, "data root holding nab/")
	f.StringVar(&c.OutDir, "out", "repro-search", "output directory")
	f.IntVar(&c.Runs, "runs", 100, "repetitions c per configuration")
	f.IntVar(&c.MaxQueries, "max-queries", 2000, "cap on one search's queries (a capped run counts as an error unless the anomaly is in S)")
	f.Uint64Var(&c.Seed, "seed", 0, "seed of every experiment (default: drawn at random and reported)")
	f.BoolVar(&reproSearchOpts.NoProgress, "no-progress", false, "do not draw the progress bar")
	reproCmd.AddCommand(reproSearchCmd)
}

func runReproSearch(cmd *cobra.Command, _ []string) error {
	cfg := reproSearchOpts.Config
	if err := outfile.ProbeDir(cfg.OutDir); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	if err := cfg.Validate(); err != nil { // before a seed is drawn and reported
		return fmt.Errorf("repro search: %w", err)
	}
	cfg.Seed = drawSeed(cmd, "repro search", givenSeed(cmd, cfg.Seed))
	cfg.Progress = progressTo(cmd, reproSearchOpts.NoProgress)
	sum, err := searchrepro.Run(cfg)
	if err != nil {
		return err
	}
	printReproSearch(cmd.OutOrStdout(), sum)
	return nil
}

func printReproSearch(w io.Writer, sum *searchrepro.Summary) {
	fmt.Fprintf(w, "repro search: seed %d, %d runs per configuration, %.0f s\n", sum.Config.Seed, sum.Config.Runs, sum.Seconds)
	if sum.NABNote != "" {
		fmt.Fprintln(w, sum.NABNote)
	}
	fmt.Fprintf(w, "NAB instances used: %d; not fitting the model: %d raw, %d robust\n",
		len(sum.NABUsed), len(sum.NABMisfit[searchrepro.Raw]), len(sum.NABMisfit[searchrepro.Robust]))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "Prop. 3\tn+1\tε\tmean T\teq.26 (bits)\teq.26 (nats)\terror")
	for _, p := range sum.Prop3 {
		fmt.Fprintf(tw, "\t%d\t%g\t%.1f\t%.1f\t%.1f\t%.2f\n", p.Size, p.Epsilon, p.MeanT, p.BoundBits, p.BoundNats, p.ErrorRate)
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "files in %s (summary.json lists them)\n", sum.Config.OutDir)
}
