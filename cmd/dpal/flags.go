package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
	_ "github.com/dpal-dev/dpal/dp/ledger/pgstore" // --ledger postgres://…: ledger.OpenRun and ledger.Load open it
)

// The flag vocabulary: one meaning per privacy flag in every command
// (vocabulary.go holds the table the README prints and a test pins).
// This file holds the two mechanisms that keep it: deprecated spellings
// that still work for one release, and the one ledger opener.

// aliasValue is a deprecated flag's value: setting it sets the flag that
// replaced it, so a command reads only the new name. It prints as empty,
// so that resetting flags to their defaults (tests) never touches the
// new flag.
type aliasValue struct {
	to    *pflag.Flag
	given string
}

func (a *aliasValue) String() string { return "" }
func (a *aliasValue) Type() string   { return a.to.Value.Type() }

func (a *aliasValue) Set(s string) error {
	if s == "" {
		a.given = ""
		return nil
	}
	if err := a.to.Value.Set(s); err != nil {
		return err
	}
	a.given, a.to.Changed = a.to.Value.String(), true
	return nil
}

// deprecatedNote is the annotation that marks a deprecated flag; its
// value is the warning printed when the flag is used. (pflag's own
// Deprecated prints to the command's output stream, which is stdout
// under --json.)
const deprecatedNote = "dpal-deprecated"

// deprecate declares old as a deprecated spelling of the flag to of f,
// for one release: its value is the new flag's, and using it warns on
// stderr. Giving both with different values is an error (checkAliases).
func deprecate(f *pflag.FlagSet, old, to string) {
	target := f.Lookup(to)
	if target == nil {
		panic("deprecate: no flag --" + to) // a programming error, caught by every test that runs the command
	}
	f.Var(&aliasValue{to: target}, old, "deprecated: use --"+to)
	markDeprecated(f, old, "use --"+to+" (same meaning)")
}

// markDeprecated hides the flag name of f from the help and makes its use
// print "--name is deprecated: how; it goes in the next release" on
// stderr.
func markDeprecated(f *pflag.FlagSet, name, how string) {
	fl := f.Lookup(name)
	fl.Hidden = true
	if fl.Annotations == nil {
		fl.Annotations = map[string][]string{}
	}
	fl.Annotations[deprecatedNote] = []string{how}
}

// isDeprecated reports whether fl was marked by markDeprecated.
func isDeprecated(fl *pflag.Flag) bool { return len(fl.Annotations[deprecatedNote]) > 0 }

// checkAliases warns on stderr of each deprecated flag given, and refuses
// one given together with the flag that replaced it when their values
// differ: neither can be chosen silently. It runs before every command
// (rootCmd's PersistentPreRunE).
func checkAliases(cmd *cobra.Command, _ []string) error {
	var err error
	cmd.Flags().Visit(func(fl *pflag.Flag) {
		if !fl.Changed { // Visit also walks flags a previous Execute set (tests)
			return
		}
		if isDeprecated(fl) {
			fmt.Fprintf(cmd.ErrOrStderr(), "dpal: --%s is deprecated: %s; it goes in the next release\n", fl.Name, fl.Annotations[deprecatedNote][0])
		}
		if a, ok := fl.Value.(*aliasValue); ok && err == nil && a.to.Value.String() != a.given {
			err = fmt.Errorf("--%s (deprecated) and --%s are both given, with different values: give only --%s", fl.Name, a.to.Name, a.to.Name)
		}
	})
	return err
}

// budgetFlags declares --budget-epsilon and --budget-delta, the cap of a
// run's --ledger file, with the same meaning in every command.
func budgetFlags(f *pflag.FlagSet) {
	f.Float64("budget-epsilon", 0, "with --ledger: the ε cap of a new ledger file (default: what this run charges); on an existing one a lower value holds for this run, a higher one is refused")
	f.Float64("budget-delta", 0, "with --ledger: the δ cap of a new ledger file (default: what this run charges); lower only, as --budget-epsilon")
}

// runLedger is what a run states about its ledger.
type runLedger struct {
	// Charge is what the run charges each record, at most: the budget
	// of its in-memory ledger and the default cap of a new --ledger
	// file (so that a second run on the same records finds it spent).
	Charge account.Budget
	// Options are the ledger's (its conversion).
	Options []ledger.Option
	// NonPrivate runs charge nothing: --ledger and the budget flags are
	// refused.
	NonPrivate bool
	// Own: without --ledger the algorithm keeps a ledger of its own
	// (the stream learner), so none is opened.
	Own bool
}

// openLedger is the one ledger opener of every command: --ledger FILE
// through ledger.OpenRun with the --budget-epsilon/--budget-delta given
// (a new file's cap; on an existing file lower only), or an in-memory
// ledger holding exactly rl.Charge. The budget flags without --ledger are
// refused: without a file there is nothing for them to cap. --ledger
// postgres://…?ledger=NAME is a ledger in PostgreSQL (dp/ledger/pgstore)
// that other processes may charge at the same time with no double spend.
func openLedger(cmd *cobra.Command, rl runLedger) (*ledger.Ledger, error) {
	f := cmd.Flags()
	path, err := f.GetString("ledger")
	if err != nil {
		return nil, err
	}
	budgetGiven := changed(f, "budget-epsilon") || changed(f, "budget-delta")
	switch {
	case rl.NonPrivate && (path != "" || budgetGiven):
		return nil, errors.New("--ledger and the budget flags: the non-private baseline spends no budget")
	case rl.NonPrivate:
		return nil, nil
	case path == "" && budgetGiven:
		return nil, errors.New("--budget-epsilon and --budget-delta cap a --ledger FILE; without one the run's ledger holds exactly what the run charges")
	case path == "" && rl.Own:
		return nil, nil
	case path == "":
		return ledger.New(rl.Charge, rl.Options...)
	}
	rb, err := ledgerBudget(cmd, rl.Charge)
	if err != nil {
		return nil, err
	}
	led, err := ledger.OpenRun(path, rb, rl.Options...)
	if err != nil {
		return nil, fmt.Errorf("--ledger: %w", err)
	}
	return led, nil
}

// ledgerBudget is what a run asks of its --ledger file's budget: def,
// the run's charge, with the parts the user gave by --budget-epsilon and
// --budget-delta instead. On an existing ledger the given parts may lower
// its budget for this run, never raise it (ledger.RunBudget).
func ledgerBudget(cmd *cobra.Command, def account.Budget) (ledger.RunBudget, error) {
	f := cmd.Flags()
	rb := ledger.RunBudget{New: def}
	var err error
	for _, p := range []struct {
		name string
		set  *bool
		dst  *float64
	}{{"budget-epsilon", &rb.SetEpsilon, &rb.New.Epsilon}, {"budget-delta", &rb.SetDelta, &rb.New.Delta}} {
		if !changed(f, p.name) {
			continue
		}
		*p.set = true
		if *p.dst, err = f.GetFloat64(p.name); err != nil {
			return rb, err
		}
	}
	return rb, nil
}

// changed reports whether the flag name exists in f and was given.
func changed(f *pflag.FlagSet, name string) bool {
	return f.Lookup(name) != nil && f.Changed(name)
}
