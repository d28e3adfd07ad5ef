package main

// reproCmd groups the paper reproductions; each paper's file adds its own
// subcommand to it.
var reproCmd = groupCommand("repro", "Reproduce the experiments of the specification papers (CSV/JSON + PNG)")

func init() { rootCmd.AddCommand(reproCmd) }
