// Package kanonrepro owns the reproduction of Feyisetan, Drake, Balle & Diethe
// (PAL 2019), "Privacy-preserving active learning on sensitive data for
// user intent classification": Figures 2–4 (accuracy and annotation budget
// over the sampling rate β × threshold k grid, accuracy against budget),
// the appendix (ε, δ) table and the β = 1, k = 1 baseline, on SLURP and on
// CLINC150 with an imposed Zipf frequency (the paper's data is internal).
// It drives package kanon (the system) and writes through repro/figure.
//
// Every cell that has an (ε, δ ≤ Delta) guarantee runs privately and is
// charged to its own ledger; a cell with none (β^k > Delta: no ε reaches
// Delta, kanon.Epsilon) still runs, as a non-private what-if, and is
// marked so. Seeded randomness throughout: this is an experiment.
//
// Its name is unique in the module (<system>repro), so no importer needs an alias.
package kanonrepro

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/kanon"
	"github.com/dpal-dev/dpal/repro/figure"
)

// Dataset names.
const (
	SLURP = "slurp"
	CLINC = "clinc150"
)

// Options configure a reproduction.
type Options struct {
	DataDir string `json:"data_dir"`
	Seed    uint64 `json:"seed"`
	// Betas and PaperKs are the paper's grid (Figs. 2–3); SlurpKs replace
	// PaperKs on SLURP, whose most frequent sentence occurs 50 times.
	Betas   []float64 `json:"betas"`
	PaperKs []int     `json:"paper_ks"`
	SlurpKs []int     `json:"slurp_ks"`
	// Delta is the δ every cell's ε is charged at.
	Delta float64 `json:"delta"`
	// Datasets and Tasks ("binary", "multiclass") to run.
	Datasets []string `json:"datasets"`
	Tasks    []string `json:"tasks"`
	// Zipf is the frequency imposed on CLINC150.
	Zipf kanon.ZipfCLINC `json:"zipf"`
	// Positive holds each dataset's positive label prefixes (binary task).
	Positive map[string]string `json:"positive"`
	// CompareDP adds, for every private cell, dpal's noisy threshold at
	// the same (ε, δ) (CellDP).
	CompareDP bool `json:"compare_dp"`
	// VoteCopies > 1 reruns, on the binary task, the baseline and every
	// private cell (LQS and DP threshold) with each chosen query labelled
	// by VoteCopies annotators and a majority vote (same annotation
	// budget, fewer queries; method suffix "-vote"). The paper sends one
	// copy; with annotators 65% right on two classes one copy carries
	// little.
	VoteCopies int `json:"vote_copies"`
	// Run is the pipeline configuration (β, k, δ and Positive are set per
	// cell).
	Run kanon.Config `json:"run"`
}

// DefaultOptions is the full reproduction.
func DefaultOptions() Options {
	run := kanon.DefaultConfig()
	run.LabelsBudget, run.Rounds, run.Epochs = 1000, 4, 20
	return Options{
		DataDir: "../shared/data", Seed: 1,
		Betas: []float64{0.1, 0.3, 0.6, 0.9}, PaperKs: []int{1, 20, 100, 200, 500}, SlurpKs: []int{1, 2, 3, 5, 10},
		Delta: 1e-6, Datasets: []string{SLURP, CLINC}, Tasks: []string{"binary", "multiclass"},
		Zipf: kanon.ZipfCLINC{C: 20000, S: 1}, CompareDP: true, VoteCopies: 5,
		Positive: map[string]string{
			// Commands that act (media, calendar, e-mail, smart home,
			// alarms, lists) against information requests: 58% of events.
			SLURP: "play_,calendar_,email_,iot_,alarm_,audio_,music_,lists_",
			// Six of CLINC's ten domains: 90 of 150 intents.
			CLINC: "banking:,credit_cards:,kitchen_and_dining:,home:,auto_and_commute:,travel:",
		},
		Run: run,
	}
}

// QuickOptions is a small smoke run: SLURP binary, two β, three k.
func QuickOptions() Options {
	o := DefaultOptions()
	o.Betas, o.SlurpKs, o.Datasets, o.Tasks = []float64{0.3, 0.9}, []int{1, 3, 10}, []string{SLURP}, []string{"binary"}
	o.Run.LabelsBudget, o.Run.Rounds, o.Run.Members, o.Run.Epochs = 200, 2, 2, 3
	return o
}

// Row is one cell of the grid (or the baseline).
type Row struct {
	Dataset  string  `json:"dataset"`
	Task     string  `json:"task"`
	Beta     float64 `json:"beta"`
	K        int     `json:"k"`
	Baseline bool    `json:"baseline,omitempty"`
	// Method is "lqs" (the paper: exact k after sampling), "dp-threshold"
	// (dpal's noisy threshold at the same (ε, δ) as an LQS cell, no
	// sampling) or "baseline", with "-vote" when each query was labelled
	// by Copies annotators (Options.VoteCopies).
	Method string `json:"method"`
	Copies int    `json:"copies"`
	// Guaranteed says whether (β, k) has an (ε, δ ≤ Options.Delta)
	// guarantee; Epsilon and Delta are what was charged.
	Guaranteed bool    `json:"guaranteed"`
	Epsilon    float64 `json:"epsilon,omitempty"`
	Delta      float64 `json:"delta,omitempty"`
	// Released is the annotation budget the privacy filter allows (Fig. 3);
	// LabelsUsed of them were annotated (capped by the run's budget).
	Released   int     `json:"released"`
	LabelsUsed int     `json:"labels_used"`
	Accuracy   float64 `json:"accuracy"`
	// Majority is the always-the-most-common-class accuracy.
	Majority float64       `json:"majority"`
	Curve    []kanon.Point `json:"curve"`
}

// Summary is everything a reproduction writes to summary.json.
type Summary struct {
	Options Options `json:"options"`
	Rows    []Row   `json:"rows"`
	// Appendix is dpal's (ε, δ) → k grid (the paper's table body is lost
	// in the copy at hand); Guarantees is ε at Options.Delta over the
	// paper's β × k grid.
	Appendix   []kanon.Cell      `json:"appendix"`
	Guarantees []kanon.Guarantee `json:"guarantees"`
}

// Load returns a dataset's log.
func Load(o Options, name string) ([]kanon.Query, error) {
	switch name {
	case SLURP:
		return kanon.LoadSLURP(o.DataDir)
	case CLINC:
		return kanon.LoadCLINC(o.DataDir, o.Zipf, o.Seed)
	}
	return nil, fmt.Errorf("unknown dataset %q (want %s or %s)", name, SLURP, CLINC)
}

// Ks returns the k grid used on a dataset.
func (o Options) Ks(dataset string) []int {
	if dataset == SLURP {
		return o.SlurpKs
	}
	return o.PaperKs
}

// Cell runs one (β, k) cell, or the baseline, on log.
func Cell(o Options, dataset, task string, log []kanon.Query, beta float64, k int, baseline bool) (Row, error) {
	cfg := o.Run
	cfg.Beta, cfg.K, cfg.Delta, cfg.Positive, cfg.Baseline = beta, k, o.Delta, "", baseline
	if task == "binary" {
		cfg.Positive = o.Positive[dataset]
	}
	row := Row{Dataset: dataset, Task: task, Beta: beta, K: k, Baseline: baseline, Method: "lqs"}
	if baseline {
		row.Method = "baseline"
	}
	var led *ledger.Ledger
	if !baseline {
		if _, err := kanon.Epsilon(beta, k, o.Delta); errors.Is(err, kanon.ErrNoGuarantee) {
			cfg.Baseline = true // runs as a non-private what-if
		} else if err != nil {
			return row, err
		}
		var err error
		if led, err = ledger.New(account.Budget{Epsilon: 1e6, Delta: 0.5}); err != nil {
			return row, err
		}
	}
	return run(o, cfg, log, led, row)
}

// CellDP runs dpal's alternative at the (ε, δ) of a private LQS cell: no
// sampling, the noisy threshold with the smallest k that (ε, δ) allows
// (kanon.NoisyThresholdFor).
func CellDP(o Options, dataset, task string, log []kanon.Query, eps, delta float64) (Row, error) {
	m, err := kanon.NoisyThresholdFor(eps, delta, 1)
	if err != nil {
		return Row{}, err
	}
	cfg := o.Run
	cfg.Beta, cfg.K, cfg.Threshold, cfg.NoiseEpsilon, cfg.Positive = 1, m.K(), kanon.ThresholdDP, m.Loss().Epsilon, ""
	if task == "binary" {
		cfg.Positive = o.Positive[dataset]
	}
	led, err := ledger.New(account.Budget{Epsilon: 1e6, Delta: 0.5})
	if err != nil {
		return Row{}, err
	}
	return run(o, cfg, log, led, Row{Dataset: dataset, Task: task, Beta: 1, K: m.K(), Method: "dp-threshold"})
}

// run executes one configured cell and fills row from the result.
func run(o Options, cfg kanon.Config, log []kanon.Query, led *ledger.Ledger, row Row) (Row, error) {
	// The same seed in every cell: the same test/golden split, so cells
	// differ only by what the privacy filter lets through.
	res, err := kanon.Run(cfg, log, rng.Seeded(o.Seed), led)
	if err != nil {
		return row, fmt.Errorf("%s %s %s beta=%v k=%d: %w", row.Dataset, row.Task, row.Method, cfg.Beta, cfg.K, err)
	}
	row.Guaranteed, row.Epsilon, row.Delta = res.Private, res.Epsilon, res.Delta
	row.Released, row.LabelsUsed, row.Accuracy, row.Curve = res.Released, res.LabelsUsed, res.Accuracy, res.Curve
	row.Majority, row.Copies = res.Majority, cfg.Copies
	if cfg.Copies > 1 {
		row.Method += "-vote"
	}
	return row, nil
}

// Reproduce runs every dataset and task: the baseline (β = 1, k = 1) and
// the β × k grid (each private cell followed by its DP-threshold
// counterpart when CompareDP). step, when not nil, is called after each
// baseline or grid cell with the number done and the total.
func Reproduce(o Options, step func(done, total int)) (Summary, error) {
	s := Summary{Options: o}
	var err error
	if s.Appendix, err = kanon.Table(kanon.AppendixGrid()); err != nil {
		return s, err
	}
	if s.Guarantees, err = kanon.Guarantees(o.Betas, o.PaperKs, o.Delta); err != nil {
		return s, err
	}
	total := 0
	for _, d := range o.Datasets {
		total += len(o.Tasks) * (1 + len(o.Betas)*len(o.Ks(d)))
	}
	done := 0
	tick := func() {
		if done++; step != nil {
			step(done, total)
		}
	}
	for _, d := range o.Datasets {
		log, err := Load(o, d)
		if err != nil {
			return s, err
		}
		for _, t := range o.Tasks {
			if t != "binary" && t != "multiclass" {
				return s, fmt.Errorf("unknown task %q (want binary or multiclass)", t)
			}
			// voted reruns a cell with majority-vote annotation (binary).
			voted := func(cell func(Options) (Row, error)) error {
				if t != "binary" || o.VoteCopies < 2 {
					return nil
				}
				v := o
				v.Run.Copies = o.VoteCopies
				row, err := cell(v)
				s.Rows = append(s.Rows, row)
				return err
			}
			base := func(o Options) (Row, error) { return Cell(o, d, t, log, 1, 1, true) }
			row, err := base(o)
			if err != nil {
				return s, err
			}
			s.Rows = append(s.Rows, row)
			if err := voted(base); err != nil {
				return s, err
			}
			tick()
			for _, b := range o.Betas {
				for _, k := range o.Ks(d) {
					lqs := func(o Options) (Row, error) { return Cell(o, d, t, log, b, k, false) }
					if row, err = lqs(o); err != nil {
						return s, err
					}
					s.Rows = append(s.Rows, row)
					tick()
					if !row.Guaranteed {
						continue
					}
					if err := voted(lqs); err != nil {
						return s, err
					}
					if !o.CompareDP {
						continue
					}
					eps, delta := row.Epsilon, row.Delta
					dp := func(o Options) (Row, error) { return CellDP(o, d, t, log, eps, delta) }
					if row, err = dp(o); err != nil {
						return s, err
					}
					s.Rows = append(s.Rows, row)
					if err := voted(dp); err != nil {
						return s, err
					}
				}
			}
		}
	}
	return s, nil
}

// Figures builds Figs. 2–4 of one dataset and task from its rows.
func Figures(rows []Row, title string) (fig2, fig3, fig4 *figure.Plot) {
	fig2 = &figure.Plot{Title: "Fig. 2: " + title, XLabel: "k", YLabel: "test accuracy", LogX: true}
	fig3 = &figure.Plot{Title: "Fig. 3: " + title, XLabel: "k", YLabel: "annotation budget (released queries)", LogX: true}
	fig4 = &figure.Plot{Title: "Fig. 4: " + title, XLabel: "labels", YLabel: "test accuracy"}
	var betas []float64
	var cells []Row
	for _, r := range rows {
		switch {
		case r.Method != "lqs" && r.Method != "baseline":
			continue
		case r.Baseline:
			fig2.HLines = append(fig2.HLines, figure.HLine{Name: "baseline β=1, k=1", Y: r.Accuracy},
				figure.HLine{Name: "majority class", Y: r.Majority})
			fig3.HLines = append(fig3.HLines, figure.HLine{Name: "baseline β=1, k=1", Y: float64(r.Released)})
			fig4.Series = append(fig4.Series, curve("baseline β=1, k=1", r.Curve))
		default:
			cells = append(cells, r)
			if !slices.Contains(betas, r.Beta) {
				betas = append(betas, r.Beta)
			}
		}
	}
	for _, b := range betas {
		acc := figure.Series{Name: "β=" + strconv.FormatFloat(b, 'g', -1, 64), Points: true}
		bud := acc
		for _, r := range cells {
			if r.Beta == b {
				acc.X, acc.Y = append(acc.X, float64(r.K)), append(acc.Y, r.Accuracy)
				bud.X, bud.Y = append(bud.X, float64(r.K)), append(bud.Y, float64(r.Released))
			}
		}
		fig2.Series, fig3.Series = append(fig2.Series, acc), append(fig3.Series, bud)
	}
	// Fig. 4: every cell's final (labels, accuracy), sorted by labels.
	slices.SortFunc(cells, func(a, b Row) int { return a.LabelsUsed - b.LabelsUsed })
	all := figure.Series{Name: "grid cells (final)", Points: true}
	for _, r := range cells {
		all.X, all.Y = append(all.X, float64(r.LabelsUsed)), append(all.Y, r.Accuracy)
	}
	fig4.Series = append(fig4.Series, all)
	return fig2, fig3, fig4
}

func curve(name string, pts []kanon.Point) figure.Series {
	s := figure.Series{Name: name, Points: true}
	for _, p := range pts {
		s.X, s.Y = append(s.X, float64(p.Labels)), append(s.Y, p.Accuracy)
	}
	return s
}

// Write saves the rows' figures, rows.csv, appendix.csv and summary.json
// under out.
func Write(out string, s Summary) error {
	type key struct{ d, t string }
	groups := map[key][]Row{}
	var order []key
	for _, r := range s.Rows {
		k := key{r.Dataset, r.Task}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	for _, k := range order {
		f2, f3, f4 := Figures(groups[k], k.d+" "+k.t)
		for name, p := range map[string]*figure.Plot{"fig2": f2, "fig3": f3, "fig4": f4} {
			if err := p.Save(filepath.Join(out, fmt.Sprintf("%s_%s_%s", name, k.d, k.t))); err != nil {
				return err
			}
		}
	}
	rows := [][]string{{"dataset", "task", "method", "copies", "beta", "k", "baseline", "guaranteed", "epsilon", "delta", "released", "labels_used", "accuracy", "majority"}}
	for _, r := range s.Rows {
		rows = append(rows, []string{r.Dataset, r.Task, r.Method, strconv.Itoa(r.Copies), ftoa(r.Beta), strconv.Itoa(r.K), strconv.FormatBool(r.Baseline),
			strconv.FormatBool(r.Guaranteed), ftoa(r.Epsilon), ftoa(r.Delta), strconv.Itoa(r.Released), strconv.Itoa(r.LabelsUsed), ftoa(r.Accuracy), ftoa(r.Majority)})
	}
	if err := figure.WriteCSV(filepath.Join(out, "rows.csv"), rows); err != nil {
		return err
	}
	app := [][]string{{"delta", "epsilon", "beta", "feasible", "k", "delta_at_k", "n_max"}}
	for _, c := range s.Appendix {
		app = append(app, []string{ftoa(c.Delta), ftoa(c.Epsilon), ftoa(c.Beta), strconv.FormatBool(c.Feasible), strconv.Itoa(c.K), ftoa(c.DeltaAtK), strconv.Itoa(c.NMax)})
	}
	if err := figure.WriteCSV(filepath.Join(out, "appendix.csv"), app); err != nil {
		return err
	}
	return figure.WriteJSON(filepath.Join(out, "summary.json"), s)
}

func ftoa(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
