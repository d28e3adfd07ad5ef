package main

import "github.com/spf13/cobra"

// reproCmd groups the paper reproductions; each paper's file adds its own
// subcommand to it.
var reproCmd = &cobra.Command{
	Use:   "repro",
	Short: "Reproduce the experiments of the specification papers (CSV/JSON + PNG)",
}

func init() { rootCmd.AddCommand(reproCmd) }
