package main

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"gonum.org/v1/gonum/stat"

	"github.com/dpal-dev/dpal/data"
	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/dpsgd"
	"github.com/dpal-dev/dpal/model/nn"
	"github.com/dpal-dev/dpal/outfile"
	"github.com/dpal-dev/dpal/progress"
	"github.com/dpal-dev/dpal/repro/figure"
)

var reproDPSGDCmd = &cobra.Command{
	Use:   "dpsgd",
	Short: "DP-SGD accuracy vs ε with the shipped per-dataset defaults (issue 10's accuracy table)",
	Long: `Trains each --data set with dpal train's defaults at every --epsilons value
(δ = --delta) for --seeds seeds, and writes <out>/rows.csv (one row per run),
<out>/summary.json (settings, seed, rows, mean ± std per ε) and
<out>/<data>-accuracy.png/.csv (test accuracy vs ε, mean with a ±1 std band).
--non-private (default on) also trains the same model without clipping or
noise for each seed: a reference drawn as a horizontal line and written as
rows with private=false. Those rows are NOT differentially private.
--model overrides the dataset's default model (its defaults follow it).
--epochs-scale shortens every run (σ is calibrated for the epochs run), for
smoke tests and slow machines; the docs must say when it was below 1.`,
	Args: cobra.NoArgs,
	RunE: runReproDPSGD,
}

func init() {
	f := reproDPSGDCmd.Flags()
	f.String("data", "mnist", "comma-separated: mnist, fashion-mnist, kdd99-5class, csv, libsvm")
	f.String("data-dir", data.DefaultDir, "data root holding mnist/, fashion_mnist/, kddcup99/")
	f.String("file", "", "csv/libsvm: training file")
	f.String("test-file", "", "csv/libsvm: test file (default: 20 % of --file)")
	f.String("epsilons", "0.5,1,2,3,5,8", "comma-separated target ε values")
	f.Float64("delta", 1e-5, "target δ")
	f.Int("seeds", 5, "runs per (data, ε)")
	f.String("model", "", "logreg|mlp:W1[,W2[,W3]]|cnn (default per dataset)")
	f.Bool("non-private", true, "also train the non-private reference (NOT DP) of the same shape, one run per seed")
	f.Float64("epochs-scale", 1, "multiply every default epoch count by this (≤ 1 for quick runs)")
	f.String("out", "repro-dpsgd", "output directory")
	f.Uint64("seed", 0, "base seed; run k uses seed+k (default: drawn at random and reported)")
	f.Bool("no-progress", false, "do not draw the progress bar")
	reproCmd.AddCommand(reproDPSGDCmd)
}

// reproDPSGDRow is one training run.
type reproDPSGDRow struct {
	Private         bool      `json:"private"` // false: the non-private reference (Epsilon 0, NOT DP)
	Dataset         string    `json:"dataset"`
	Model           string    `json:"model"`
	Epsilon         float64   `json:"epsilon"`
	Seed            uint64    `json:"seed"`
	Epochs          float64   `json:"epochs"`
	Steps           int       `json:"steps"`
	NoiseMultiplier float64   `json:"noise_multiplier"`
	TestAccuracy    float64   `json:"test_accuracy"`
	TestRecall      []float64 `json:"test_recall"`
	Seconds         float64   `json:"seconds"`
}

// reproDPSGDPoint is the mean ± std over seeds at one (data, ε).
type reproDPSGDPoint struct {
	Private bool    `json:"private"` // false: the non-private reference (Epsilon 0, NOT DP)
	Dataset string  `json:"dataset"`
	Epsilon float64 `json:"epsilon"`
	Mean    float64 `json:"mean_accuracy"`
	Std     float64 `json:"std_accuracy"`
	Runs    int     `json:"runs"`
}

type reproDPSGDSummary struct {
	Seed        uint64            `json:"seed"`
	Delta       float64           `json:"delta"`
	EpochsScale float64           `json:"epochs_scale"`
	Rows        []reproDPSGDRow   `json:"rows"`
	Points      []reproDPSGDPoint `json:"points"`
}

func runReproDPSGD(cmd *cobra.Command, _ []string) error {
	f := cmd.Flags()
	names, _ := f.GetString("data")
	epsText, _ := f.GetString("epsilons")
	out, _ := f.GetString("out")
	seeds, _ := f.GetInt("seeds")
	scale, _ := f.GetFloat64("epochs-scale")
	sum := reproDPSGDSummary{EpochsScale: scale}
	sum.Delta, _ = f.GetFloat64("delta")
	eps, err := parseFloats(epsText)
	if err != nil {
		return fmt.Errorf("--epsilons: %w", err)
	}
	if seeds < 1 || !(scale > 0) || math.IsInf(scale, 0) {
		return fmt.Errorf("--seeds must be >= 1 and --epochs-scale finite and > 0")
	}
	if err := outfile.ProbeDir(out); err != nil { // before hours of training, as the other repro commands
		return fmt.Errorf("--out: %w", err)
	}
	if sum.Seed, err = experimentSeed(cmd, "repro dpsgd"); err != nil {
		return err
	}
	for _, name := range strings.Split(names, ",") {
		if _, ok := trainDefaults[name]; !ok {
			return fmt.Errorf("--data %q: want mnist, fashion-mnist, kdd99-5class, csv or libsvm", name)
		}
		rows, err := reproDPSGDData(cmd, name, eps, seeds, scale, &sum)
		if err != nil {
			return err
		}
		if err := writeReproDPSGDFigure(out, name, rows); err != nil {
			return err
		}
	}
	if err := writeReproDPSGDRows(out, sum.Rows); err != nil {
		return err
	}
	if err := figure.WriteJSON(filepath.Join(out, "summary.json"), sum); err != nil {
		return err
	}
	printReproDPSGD(cmd.OutOrStdout(), &sum, out)
	return nil
}

// reproDPSGDData runs every (ε, seed) on one dataset, then the
// non-private reference when asked.
func reproDPSGDData(cmd *cobra.Command, name string, eps []float64, seeds int, scale float64, sum *reproDPSGDSummary) ([]reproDPSGDPoint, error) {
	train, test, image, err := loadTrainData(cmd, name)
	if err != nil {
		return nil, err
	}
	model, _ := cmd.Flags().GetString("model")
	ref, _ := cmd.Flags().GetBool("non-private")
	runs := len(eps)
	if ref {
		runs++
	}
	bar := progress.New(progressOut(cmd), runs*seeds, "repro dpsgd "+name)
	defer bar.Finish()
	var points []reproDPSGDPoint
	for k := range runs {
		private := k < len(eps)
		e := 0.0
		if private {
			e = eps[k]
		}
		s, err := reproDPSGDSettings(name, train, image, e, sum.Delta, model, scale)
		if err != nil {
			return nil, err
		}
		p, err := reproDPSGDSeeds(s, private, train, test, seeds, sum, bar)
		if err != nil {
			return nil, err
		}
		points = append(points, p)
	}
	sum.Points = append(sum.Points, points...)
	return points, nil
}

// reproDPSGDSettings are the defaults for model on name at ε (0: the
// non-private reference, which takes the ε ≥ 2 epoch count), epochs scaled.
func reproDPSGDSettings(name string, train *data.Dataset, image [3]int, eps, delta float64, model string, scale float64) (trainSettings, error) {
	e := eps
	if e == 0 {
		e = 8 // any valid ε ≥ 2: the reference ignores it
	}
	s, err := defaultSettings(name, train, image, e, delta, model)
	s.epochs *= scale
	return s, err
}

// reproDPSGDSeeds trains s from each seed and returns the mean ± std.
func reproDPSGDSeeds(s trainSettings, private bool, train, test *data.Dataset, seeds int, sum *reproDPSGDSummary, bar *progress.Bar) (reproDPSGDPoint, error) {
	var accs []float64
	for k := range seeds {
		seed := sum.Seed + uint64(k)
		row, err := reproDPSGDRun(s, private, train, test, seed)
		if err != nil {
			what := fmt.Sprintf("ε=%v", s.eps)
			if !private {
				what = "the non-private reference"
			}
			return reproDPSGDPoint{}, fmt.Errorf("%s at %s, seed %d: %w", s.dataset, what, seed, err)
		}
		sum.Rows = append(sum.Rows, row)
		accs = append(accs, row.TestAccuracy)
		bar.Add(1)
	}
	mean, std := stat.MeanStdDev(accs, nil)
	if len(accs) < 2 {
		std = 0
	}
	p := reproDPSGDPoint{Private: private, Dataset: s.dataset, Mean: mean, Std: std, Runs: len(accs)}
	if private {
		p.Epsilon = s.eps
	}
	return p, nil
}

// reproDPSGDRun trains once from seed: privately, charged to a fresh
// ledger, or (private false) the non-private reference, charged nothing.
func reproDPSGDRun(s trainSettings, private bool, train, test *data.Dataset, seed uint64) (reproDPSGDRow, error) {
	r := rng.Seeded(seed)
	var (
		plan dpsgd.Plan
		net  *nn.Net
		err  error
	)
	start := time.Now()
	if private {
		plan, net, err = reproDPSGDPrivate(&s, train, r)
	} else {
		plan, net, err = reproDPSGDReference(&s, train, r)
	}
	if err != nil {
		return reproDPSGDRow{}, err
	}
	pred, err := net.Classify(test.X)
	if err != nil {
		return reproDPSGDRow{}, err
	}
	row := reproDPSGDRow{Private: private, Dataset: s.dataset, Model: s.spec.String(), Seed: seed, Epochs: s.epochs,
		Steps: plan.Steps, NoiseMultiplier: plan.NoiseMultiplier, Seconds: time.Since(start).Seconds()}
	if private {
		row.Epsilon = s.eps
	}
	row.TestAccuracy, row.TestRecall = accuracyRecall(pred, test.Class, len(train.ClassNames))
	return row, nil
}

func reproDPSGDPrivate(s *trainSettings, train *data.Dataset, r *rng.Rand) (dpsgd.Plan, *nn.Net, error) {
	plan, err := s.calibrate(train.Len())
	if err != nil {
		return plan, nil, err
	}
	led, err := ledger.New(account.Budget{Epsilon: s.eps, Delta: s.delta})
	if err != nil {
		return plan, nil, err
	}
	net, tr, err := s.newTrainer(r)
	if err != nil {
		return plan, nil, err
	}
	_, err = s.run(tr, led, r, plan, train, "train:"+s.dataset, nil)
	return plan, net, err
}

func reproDPSGDReference(s *trainSettings, train *data.Dataset, r *rng.Rand) (dpsgd.Plan, *nn.Net, error) {
	plan, err := s.referencePlan(train.Len())
	if err != nil {
		return plan, nil, err
	}
	net, tr, err := s.newReference(r)
	if err != nil {
		return plan, nil, err
	}
	_, err = s.runReference(tr, r, plan, train, nil)
	return plan, net, err
}

func writeReproDPSGDFigure(out, name string, points []reproDPSGDPoint) error {
	ser := figure.Series{Name: name + " DP-SGD", Points: true}
	var lines []figure.HLine
	for _, p := range points {
		if !p.Private {
			lines = append(lines, figure.HLine{Name: fmt.Sprintf("non-private reference (NOT DP) %.4f", p.Mean), Y: p.Mean})
			continue
		}
		ser.X, ser.Y = append(ser.X, p.Epsilon), append(ser.Y, p.Mean)
		ser.Lo, ser.Hi = append(ser.Lo, p.Mean-p.Std), append(ser.Hi, p.Mean+p.Std)
	}
	pl := figure.Plot{Title: "DP-SGD test accuracy vs ε (" + name + ")", XLabel: "ε (δ fixed)", YLabel: "test accuracy",
		Series: []figure.Series{ser}, HLines: lines}
	return pl.Save(filepath.Join(out, name+"-accuracy"))
}

func writeReproDPSGDRows(out string, rows []reproDPSGDRow) error {
	table := [][]string{{"dataset", "model", "epsilon", "seed", "epochs", "steps", "noise_multiplier", "test_accuracy", "seconds"}}
	for _, r := range rows {
		eps := accountFloat(r.Epsilon)
		if !r.Private {
			eps = "non-private"
		}
		table = append(table, []string{r.Dataset, r.Model, eps, strconv.FormatUint(r.Seed, 10), accountFloat(r.Epochs),
			strconv.Itoa(r.Steps), accountFloat(r.NoiseMultiplier), accountFloat(r.TestAccuracy), accountFloat(r.Seconds)})
	}
	return figure.WriteCSV(filepath.Join(out, "rows.csv"), table)
}

func printReproDPSGD(w io.Writer, sum *reproDPSGDSummary, out string) {
	fmt.Fprintf(w, "repro dpsgd: seed %d, δ=%v, epochs × %v\n", sum.Seed, sum.Delta, sum.EpochsScale)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "data\tε\truns\ttest accuracy")
	for _, p := range sum.Points {
		eps := strconv.FormatFloat(p.Epsilon, 'g', -1, 64)
		if !p.Private {
			eps = "non-private (NOT DP)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.4f ± %.4f\n", p.Dataset, eps, p.Runs, p.Mean, p.Std)
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "files in %s\n", out)
}
