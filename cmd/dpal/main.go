// Command dpal is the command-line front end of dpal: privacy accounting,
// data inspection, the private stream learner, the private anomaly search and
// the paper reproductions. Each subcommand lives in its own file and
// registers itself on rootCmd from an init function.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/dpal-dev/dpal/dp/rng"
)

var rootCmd = &cobra.Command{
	Use:           "dpal",
	Short:         "Differentially private active learning, online learning and anomaly search",
	SilenceUsage:  true,
	SilenceErrors: true,
	// Every command: a deprecated flag spelling and its replacement given
	// with different values is refused (flags.go).
	PersistentPreRunE: checkAliases,
}

func main() {
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err := rootCmd.Execute(); err != nil {
		fmt.Fprintf(os.Stderr, "dpal: %v\n", err)
		os.Exit(1)
	}
}

// groupCommand makes a command that only groups subcommands: run bare it
// prints its help, and an unknown subcommand is an error (cobra would
// otherwise print the help and exit 0).
func groupCommand(use, short string) *cobra.Command {
	return &cobra.Command{Use: use, Short: short, Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() }}
}

// printJSON writes v as one indented JSON object followed by a newline.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// experimentSeed returns the --seed value, or draws one from the secure
// source and tells the user how to repeat the run: an experiment always
// records the seed it used.
func experimentSeed(cmd *cobra.Command, what string) (uint64, error) {
	seed, err := seedFlag(cmd)
	if err != nil {
		return 0, err
	}
	return drawSeed(cmd, what, seed), nil
}

// drawSeed is experimentSeed for a command that bound --seed: *seed when
// the user gave one, else a seed drawn from the secure source, with a line
// on stderr that tells how to repeat the run.
func drawSeed(cmd *cobra.Command, what string, seed *uint64) uint64 {
	if seed != nil {
		return *seed
	}
	s := rng.Secure().Uint64()
	fmt.Fprintf(cmd.ErrOrStderr(), "%s: seed %d (pass --seed %d to repeat)\n", what, s, s)
	return s
}

// seedFlag returns the --seed value when the user set it, else nil, so that
// seeded randomness is used only when asked for explicitly.
func seedFlag(cmd *cobra.Command) (*uint64, error) {
	if !cmd.Flags().Changed("seed") {
		return nil, nil
	}
	s, err := cmd.Flags().GetUint64("seed")
	if err != nil {
		return nil, fmt.Errorf("--seed: %w", err)
	}
	return &s, nil
}

// givenSeed is seedFlag for a command that bound --seed to s: &s when the
// user set it, else nil.
func givenSeed(cmd *cobra.Command, s uint64) *uint64 {
	if !cmd.Flags().Changed("seed") {
		return nil
	}
	return &s
}

// progressOut returns where a command's progress bar goes: stderr, or nil
// under --no-progress (a command without the flag always draws).
func progressOut(cmd *cobra.Command) io.Writer {
	off, err := cmd.Flags().GetBool("no-progress")
	return progressTo(cmd, err == nil && off)
}

// progressTo is progressOut for a command that bound --no-progress to
// off. The progress package draws nothing on a writer that is not a
// terminal, so this is the only choice a command makes.
func progressTo(cmd *cobra.Command, off bool) io.Writer {
	if off {
		return nil
	}
	return cmd.ErrOrStderr()
}
