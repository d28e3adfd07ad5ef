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
)

var rootCmd = &cobra.Command{
	Use:           "dpal",
	Short:         "Differentially private active learning, online learning and anomaly search",
	SilenceUsage:  true,
	SilenceErrors: true,
}

func main() {
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err := rootCmd.Execute(); err != nil {
		fmt.Fprintf(os.Stderr, "dpal: %v\n", err)
		os.Exit(1)
	}
}

// printJSON writes v as one indented JSON object followed by a newline.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
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
