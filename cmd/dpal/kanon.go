package main

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/kanon"
)

// kanonCmd groups the pre-sampling + k-anonymity commands (Feyisetan et
// al. 2019 with Li, Qardaji & Su 2012).
var kanonCmd = &cobra.Command{
	Use:   "kanon",
	Short: "Private active learning by pre-sampling + k-anonymity (Feyisetan et al. 2019)",
}

var kanonAccountCmd = &cobra.Command{
	Use:   "account",
	Short: "(ε, δ) of sampling at rate β then keeping queries seen ≥ k times (Li–Qardaji–Su Thm 5)",
	Long: `Li, Qardaji & Su (2012, Thm 5): sampling each record with probability beta and then
keeping only values that occur at least k times is (epsilon, delta)-DP for every
epsilon >= -ln(1 - beta), delta being the largest binomial tail over n >= n_m.

Give any three of --beta, --k, --epsilon, --delta and the fourth is computed:
  --beta --k --epsilon    delta (and n_max, the n where the tail peaks)
  --beta --k [--delta]    the smallest epsilon (delta defaults to 1e-6)
  --beta --epsilon --delta  the smallest k
  --k --epsilon --delta   the largest beta
--table prints dpal's appendix grid: the smallest k for each (epsilon, delta, beta).`,
	Args: cobra.NoArgs,
	RunE: runKAnonAccount,
}

func init() {
	f := kanonAccountCmd.Flags()
	f.Float64("beta", 0, "sampling rate β (0 < β ≤ 1)")
	f.Int("k", 0, "frequency threshold k (≥ 1)")
	f.Float64("epsilon", 0, "ε (≥ −ln(1 − β))")
	f.Float64("delta", 1e-6, "target δ (0 < δ < 1)")
	f.Bool("table", false, "print the appendix grid of the smallest k per (ε, δ, β)")
	f.Bool("json", false, "print one JSON object")
	kanonCmd.AddCommand(kanonAccountCmd)
	rootCmd.AddCommand(kanonCmd)
}

func runKAnonAccount(cmd *cobra.Command, _ []string) error {
	f := cmd.Flags()
	asJSON, _ := f.GetBool("json")
	if table, _ := f.GetBool("table"); table {
		return kanonTable(cmd.OutOrStdout(), asJSON)
	}
	beta, _ := f.GetFloat64("beta")
	k, _ := f.GetInt("k")
	eps, _ := f.GetFloat64("epsilon")
	delta, _ := f.GetFloat64("delta")
	var (
		res account.KAnonResult
		err error
	)
	switch has := f.Changed; {
	case has("beta") && has("k") && has("epsilon"):
		res, err = account.KAnonDelta(beta, k, eps)
	case has("beta") && has("k"):
		res, err = account.KAnonEpsilon(beta, k, delta)
	case has("beta") && has("epsilon"):
		res, err = account.KAnonK(beta, eps, delta)
	case has("k") && has("epsilon"):
		res, err = account.KAnonBeta(k, eps, delta)
	default:
		return fmt.Errorf("give two of --beta, --k, --epsilon (with --delta for a target), or --table")
	}
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(cmd.OutOrStdout(), res)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "beta = %s, k = %d: (epsilon = %s, delta = %s)-DP; the tail peaks at n = %d (n_m = %d)\n",
		accountFloat(res.Beta), res.K, accountFloat(res.Epsilon), accountFloat(res.Delta), res.NMax, res.NMin)
	return nil
}

// kanonTableJSON is the JSON of `dpal kanon account --table`.
type kanonTableJSON struct {
	Grid  kanon.Grid   `json:"grid"`
	Cells []kanon.Cell `json:"cells"`
}

// kanonTable prints the appendix grid: for each δ a block with one row per
// β and one column per ε, holding the smallest k ("-" where ε < −ln(1−β)).
func kanonTable(w io.Writer, asJSON bool) error {
	g := kanon.AppendixGrid()
	cells, err := kanon.Table(g)
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(w, kanonTableJSON{Grid: g, Cells: cells})
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	nE, nB := len(g.Epsilons), len(g.Betas)
	for di, d := range g.Deltas {
		fmt.Fprintf(tw, "delta = %s\tbeta \\ epsilon", accountFloat(d))
		for _, e := range g.Epsilons {
			fmt.Fprintf(tw, "\t%s", accountFloat(e))
		}
		fmt.Fprintln(tw, "\t")
		for bi, b := range g.Betas {
			fmt.Fprintf(tw, "\t%s", accountFloat(b))
			for ei := range g.Epsilons {
				// Cells are δ-major, then ε, then β.
				fmt.Fprintf(tw, "\t%s", kanonCell(cells[(di*nE+ei)*nB+bi]))
			}
			fmt.Fprintln(tw, "\t")
		}
	}
	return tw.Flush()
}

func kanonCell(c kanon.Cell) string {
	if !c.Feasible {
		return "-"
	}
	return strconv.Itoa(c.K)
}
