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
	if seed != nil {
		return *seed, nil
	}
	s := rng.Secure().Uint64()
	fmt.Fprintf(cmd.ErrOrStderr(), "%s: seed %d (pass --seed %d to repeat)\n", what, s, s)
	return s, nil
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

// progressOut returns where a command's progress bar goes: stderr, or nil
// under --no-progress. The progress package draws nothing on a writer that
// is not a terminal, so this is the only choice a command makes.
func progressOut(cmd *cobra.Command) io.Writer {
	if off, _ := cmd.Flags().GetBool("no-progress"); off {
		return nil
	}
	return cmd.ErrOrStderr()
}
