package main

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
)

func init() {
	ledgerCmd := groupCommand("ledger", "Inspect a durable privacy ledger (written by --ledger FILE)")
	show := &cobra.Command{
		Use:   "show",
		Short: "Print every entry of a ledger, then each group's spend, budget and what is left",
		Long: `show reads a ledger file written by a run's --ledger FILE (stream, search,
train, pool run, ocp, kanon run) and prints its entries (sequence number, time,
groups, mechanism, loss, note), then for every group the ε it has spent at
--delta (default: the ledger's own δ), the budget and what is left.

--json prints {"meta":…,"entries":[…],"groups":[…]}; --csv prints the entries
as CSV, a blank line, then the groups as CSV. The file is only read, never
written or created: other readers may show it at the same time, while a run
that has it open must finish first. A file that is cut short, damaged or not
a ledger is one error line naming it and what is wrong.`,
		Args: cobra.NoArgs,
		RunE: runLedgerShow,
	}
	f := show.Flags()
	f.String("store", "", "ledger file (required)")
	f.String("group", "", "show only the entries and the spend of this group")
	f.Float64("delta", 0, "report each group's ε at this total δ (default: the ledger's budget δ)")
	f.Bool("json", false, "print one JSON object")
	f.Bool("csv", false, "print CSV: the entries, a blank line, then the groups")
	ledgerCmd.AddCommand(show)
	rootCmd.AddCommand(ledgerCmd)
}

func runLedgerShow(cmd *cobra.Command, _ []string) error {
	f := cmd.Flags()
	path, _ := f.GetString("store")
	group, _ := f.GetString("group")
	asJSON, _ := f.GetBool("json")
	asCSV, _ := f.GetBool("csv")
	if path == "" {
		return errors.New("--store FILE is required")
	}
	if asJSON && asCSV {
		return errors.New("--json and --csv exclude each other")
	}
	led, err := ledger.Load(path)
	if err != nil {
		return err
	}
	defer led.Close()
	rep, err := ledgerReport(cmd, led, group)
	if err != nil {
		return err
	}
	if group != "" && len(rep.Groups) == 0 {
		return fmt.Errorf("--group %q: no such group in %s (groups: %s)", group, path, strings.Join(led.Groups(), ", "))
	}
	w := cmd.OutOrStdout()
	switch {
	case asJSON:
		return printJSON(w, rep)
	case asCSV:
		return writeLedgerCSV(w, rep)
	}
	printLedgerText(w, path, rep)
	return nil
}

// openLedgerFlag opens a run's --ledger file at path (ledger.OpenRun)
// with ledgerBudget(cmd, def): a new ledger gets def, or the budget
// flags given; an existing one keeps its own budget. Its errors name the
// flag.
func openLedgerFlag(cmd *cobra.Command, path string, def account.Budget, opts ...ledger.Option) (*ledger.Ledger, error) {
	led, err := ledger.OpenRun(path, ledgerBudget(cmd, def), opts...)
	if err != nil {
		return nil, fmt.Errorf("--ledger: %w", err)
	}
	return led, nil
}

// ledgerBudget is what a run asks of its --ledger file's budget: def,
// the run's default for a new ledger, with the parts the user gave by
// --budget-epsilon and --budget-delta (or --budget, the ε, in stream,
// ocp and search) instead. On an existing ledger the given parts may
// lower its budget for this run, never raise it (ledger.RunBudget).
func ledgerBudget(cmd *cobra.Command, def account.Budget) ledger.RunBudget {
	f := cmd.Flags()
	given := func(name string, dst *float64) bool {
		if f.Lookup(name) == nil || !f.Changed(name) {
			return false
		}
		*dst, _ = f.GetFloat64(name)
		return true
	}
	rb := ledger.RunBudget{New: def}
	rb.SetEpsilon = given("budget-epsilon", &rb.New.Epsilon) || given("budget", &rb.New.Epsilon)
	rb.SetDelta = given("budget-delta", &rb.New.Delta)
	return rb
}

// ledgerBudgetFlags declares --budget-epsilon and --budget-delta for a
// run whose new --ledger file gets its own --epsilon and --delta unless
// they are given.
func ledgerBudgetFlags(f *pflag.FlagSet) {
	f.Float64("budget-epsilon", 0, "with --ledger: the ε budget of a new ledger file (default: this run's --epsilon); on an existing one a lower value holds for this run, a higher one is refused")
	f.Float64("budget-delta", 0, "with --ledger: the δ budget of a new ledger file (default: this run's --delta); lower only, as --budget-epsilon")
}

// budgetNeedsLedger refuses --budget-epsilon or --budget-delta without
// --ledger: they set a ledger file's budget, and a run without one
// records its spend in a ledger of its own (ε, δ).
func budgetNeedsLedger(cmd *cobra.Command) error {
	f := cmd.Flags()
	if path, _ := f.GetString("ledger"); path == "" && (f.Changed("budget-epsilon") || f.Changed("budget-delta")) {
		return errors.New("--budget-epsilon and --budget-delta set the budget of a --ledger FILE; without one the run's ledger holds exactly its --epsilon and --delta")
	}
	return nil
}

// ledgerReport is the ledger's report for group, with each group's ε at
// --delta when it is given.
func ledgerReport(cmd *cobra.Command, led *ledger.Ledger, group string) (*ledger.Report, error) {
	if !cmd.Flags().Changed("delta") {
		return led.Report(group)
	}
	d, _ := cmd.Flags().GetFloat64("delta")
	if err := account.ValidateDelta(d); err != nil {
		return nil, fmt.Errorf("--delta: %w", err)
	}
	rep, err := led.ReportAt(group, d)
	if err != nil {
		return nil, fmt.Errorf("--delta: %w", err)
	}
	return rep, nil
}

func printLedgerText(w io.Writer, path string, rep *ledger.Report) {
	b := rep.Meta.Budget
	fmt.Fprintf(w, "ledger %s: budget ε = %g, δ = %g per group (%s conversion), created %s\n",
		path, b.Epsilon, b.Delta, rep.Meta.Conversion, rep.Meta.Created.Format(time.RFC3339))
	fmt.Fprintf(w, "%d entries\n", len(rep.Entries))
	for _, e := range rep.Entries {
		fmt.Fprintf(w, "  #%-5d %s  %-28s %-44s %s\n", e.Seq, e.Time.Format(time.RFC3339),
			strings.Join(e.Groups, ","), e.Loss.Mechanism, describeLoss(e.Loss))
		if e.Note != "" {
			fmt.Fprintf(w, "         note: %s\n", e.Note)
		}
	}
	fmt.Fprintln(w, "groups")
	for _, g := range rep.Groups {
		fmt.Fprintf(w, "  %-28s ε = %.6g (δ = %g) of %g, %.6g left, %d charges\n",
			g.Group, g.Epsilon, g.Delta, g.Budget, g.Remaining, g.Charges)
	}
}

// describeLoss writes a loss's non-zero parts.
func describeLoss(l account.Loss) string {
	var parts []string
	if l.Epsilon > 0 || !l.NeedsConversion() {
		parts = append(parts, "ε="+strconv.FormatFloat(l.Epsilon, 'g', 6, 64))
	}
	if l.Delta > 0 {
		parts = append(parts, "δ="+strconv.FormatFloat(l.Delta, 'g', 3, 64))
	}
	if l.Rho > 0 {
		parts = append(parts, "ρ="+strconv.FormatFloat(l.Rho, 'g', 6, 64))
	}
	if len(l.Orders) > 0 {
		parts = append(parts, fmt.Sprintf("RDP curve (%d orders)", len(l.Orders)))
	}
	if len(l.PLD) > 0 {
		parts = append(parts, fmt.Sprintf("PLD (%d mechanisms)", len(l.PLD)))
	}
	return strings.Join(parts, " ")
}

func writeLedgerCSV(w io.Writer, rep *ledger.Report) error {
	cw := csv.NewWriter(w)
	ff := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	_ = cw.Write([]string{"seq", "time", "groups", "mechanism", "kind", "epsilon", "delta", "rho", "rdp_orders", "once", "note"})
	for _, e := range rep.Entries {
		l := e.Loss
		_ = cw.Write([]string{strconv.FormatUint(e.Seq, 10), e.Time.Format(time.RFC3339Nano), strings.Join(e.Groups, ";"),
			l.Mechanism, l.Kind(), ff(l.Epsilon), ff(l.Delta), ff(l.Rho), strconv.Itoa(len(l.Orders)), e.Once, e.Note})
	}
	cw.Flush()
	fmt.Fprintln(w)
	_ = cw.Write([]string{"group", "epsilon", "delta", "charges", "budget", "remaining"})
	for _, g := range rep.Groups {
		_ = cw.Write([]string{g.Group, ff(g.Epsilon), ff(g.Delta), strconv.Itoa(g.Charges), ff(g.Budget), ff(g.Remaining)})
	}
	cw.Flush()
	return cw.Error()
}
