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

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
)

// ledgerShowOptions are the flags of `dpal ledger show`.
type ledgerShowOptions struct {
	Store, Group string
	Delta        float64
	JSON, CSV    bool
}

var ledgerShowOpts ledgerShowOptions

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
a ledger is one error line naming it and what is wrong.

--store postgres://USER@HOST:PORT/DB?ledger=NAME reads the ledger NAME
(default "default") kept in PostgreSQL by --ledger postgres://… (see
docs/postgres.md); it is read while runs charge it.`,
		Args: cobra.NoArgs,
		RunE: runLedgerShow,
	}
	f, o := show.Flags(), &ledgerShowOpts
	f.StringVar(&o.Store, "store", "", "ledger file, or postgres://…?ledger=NAME (required)")
	f.StringVar(&o.Group, "group", "", "show only the entries and the spend of this group")
	f.Float64Var(&o.Delta, "delta", 0, "report each group's ε at this total δ (default: the ledger's budget δ)")
	f.BoolVar(&o.JSON, "json", false, "print one JSON object")
	f.BoolVar(&o.CSV, "csv", false, "print CSV: the entries, a blank line, then the groups")
	ledgerCmd.AddCommand(show)
	rootCmd.AddCommand(ledgerCmd)
}

func runLedgerShow(cmd *cobra.Command, _ []string) error {
	o := &ledgerShowOpts
	path, group, asJSON, asCSV := o.Store, o.Group, o.JSON, o.CSV
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
	rep, err := ledgerReport(cmd, led, group, o.Delta)
	if err != nil {
		return err
	}
	if group != "" && len(rep.Groups) == 0 {
		return fmt.Errorf("--group %q: no such group in %s (groups: %s)", group, ledger.Redact(path), strings.Join(led.Groups(), ", "))
	}
	w := cmd.OutOrStdout()
	switch {
	case asJSON:
		return printJSON(w, rep)
	case asCSV:
		return writeLedgerCSV(w, rep)
	}
	printLedgerText(w, ledger.Redact(path), rep)
	return nil
}

// ledgerReport is the ledger's report for group, with each group's ε at
// --delta d when it is given.
func ledgerReport(cmd *cobra.Command, led *ledger.Ledger, group string, d float64) (*ledger.Report, error) {
	if !cmd.Flags().Changed("delta") {
		return led.Report(group)
	}
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
