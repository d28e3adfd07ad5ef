package main

// Checks of the flags that size a run or set its privacy target, shared by
// the commands (issue 24): refused up front, with the number and the
// limit, before any data is read.

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/dpal-dev/dpal/dp/account"
)

// checkTargetFlags refuses a target-ε flag the user set above
// account.MaxTargetEpsilon (or not > 0).
func checkTargetFlags(cmd *cobra.Command, names ...string) error {
	for _, n := range names {
		if !cmd.Flags().Changed(n) {
			continue
		}
		v, _ := cmd.Flags().GetFloat64(n)
		if err := account.ValidateTargetEpsilon(v); err != nil {
			return fmt.Errorf("--%s: %w", n, err)
		}
	}
	return nil
}
