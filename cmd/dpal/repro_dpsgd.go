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
	f.Float64("epochs-scale", 1, "multiply every default epoch count by this (≤ 1 for quick runs)")
	f.String("out", "repro-dpsgd", "output directory")
	f.Uint64("seed", 0, "base seed; run k uses seed+k (default: drawn at random and reported)")
	f.Bool("no-progress", false, "do not draw the progress bar")
	reproCmd.AddCommand(reproDPSGDCmd)
}

// reproDPSGDRow is one training run.
type reproDPSGDRow struct {
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

// reproDPSGDData runs every (ε, seed) on one dataset.
func reproDPSGDData(cmd *cobra.Command, name string, eps []float64, seeds int, scale float64, sum *reproDPSGDSummary) ([]reproDPSGDPoint, error) {
	train, test, image, err := loadTrainData(cmd, name)
	if err != nil {
		return nil, err
	}
	bar := progress.New(progressOut(cmd), len(eps)*seeds, "repro dpsgd "+name)
	defer bar.Finish()
	var points []reproDPSGDPoint
	for _, e := range eps {
		s, err := defaultSettings(name, train, image, e, sum.Delta, "")
		if err != nil {
			return nil, err
		}
		s.epochs *= scale
		var accs []float64
		for k := range seeds {
			row, err := reproDPSGDRun(s, train, test, sum.Seed+uint64(k))
			if err != nil {
				return nil, fmt.Errorf("%s at ε=%v, seed %d: %w", name, e, sum.Seed+uint64(k), err)
			}
			sum.Rows = append(sum.Rows, row)
			accs = append(accs, row.TestAccuracy)
			bar.Add(1)
		}
		mean, std := stat.MeanStdDev(accs, nil)
		if len(accs) < 2 {
			std = 0
		}
		points = append(points, reproDPSGDPoint{Dataset: name, Epsilon: e, Mean: mean, Std: std, Runs: len(accs)})
	}
	sum.Points = append(sum.Points, points...)
	return points, nil
}

// reproDPSGDRun trains once from seed, charged to a fresh ledger.
func reproDPSGDRun(s trainSettings, train, test *data.Dataset, seed uint64) (reproDPSGDRow, error) {
	plan, err := s.calibrate(train.Len())
	if err != nil {
		return reproDPSGDRow{}, err
	}
	led, err := ledger.New(account.Budget{Epsilon: s.eps, Delta: s.delta})
	if err != nil {
		return reproDPSGDRow{}, err
	}
	r := rng.Seeded(seed)
	net, tr, err := s.newTrainer(r)
	if err != nil {
		return reproDPSGDRow{}, err
	}
	start := time.Now()
	if _, err := s.run(tr, led, r, plan, train, "train:"+s.dataset, nil); err != nil {
		return reproDPSGDRow{}, err
	}
	pred, err := net.Classify(test.X)
	if err != nil {
		return reproDPSGDRow{}, err
	}
	row := reproDPSGDRow{Dataset: s.dataset, Model: s.spec.String(), Epsilon: s.eps, Seed: seed, Epochs: s.epochs,
		Steps: plan.Steps, NoiseMultiplier: plan.NoiseMultiplier, Seconds: time.Since(start).Seconds()}
	row.TestAccuracy, row.TestRecall = accuracyRecall(pred, test.Class, len(train.ClassNames))
	return row, nil
}

func writeReproDPSGDFigure(out, name string, points []reproDPSGDPoint) error {
	ser := figure.Series{Name: name, Points: true}
	for _, p := range points {
		ser.X, ser.Y = append(ser.X, p.Epsilon), append(ser.Y, p.Mean)
		ser.Lo, ser.Hi = append(ser.Lo, p.Mean-p.Std), append(ser.Hi, p.Mean+p.Std)
	}
	pl := figure.Plot{Title: "DP-SGD test accuracy vs ε (" + name + ")", XLabel: "ε (δ fixed)", YLabel: "test accuracy",
		Series: []figure.Series{ser}}
	return pl.Save(filepath.Join(out, name+"-accuracy"))
}

func writeReproDPSGDRows(out string, rows []reproDPSGDRow) error {
	table := [][]string{{"dataset", "model", "epsilon", "seed", "epochs", "steps", "noise_multiplier", "test_accuracy", "seconds"}}
	for _, r := range rows {
		table = append(table, []string{r.Dataset, r.Model, accountFloat(r.Epsilon), strconv.FormatUint(r.Seed, 10), accountFloat(r.Epochs),
			strconv.Itoa(r.Steps), accountFloat(r.NoiseMultiplier), accountFloat(r.TestAccuracy), accountFloat(r.Seconds)})
	}
	return figure.WriteCSV(filepath.Join(out, "rows.csv"), table)
}

func printReproDPSGD(w io.Writer, sum *reproDPSGDSummary, out string) {
	fmt.Fprintf(w, "repro dpsgd: seed %d, δ=%v, epochs × %v\n", sum.Seed, sum.Delta, sum.EpochsScale)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "data\tε\truns\ttest accuracy")
	for _, p := range sum.Points {
		fmt.Fprintf(tw, "%s\t%g\t%d\t%.4f ± %.4f\n", p.Dataset, p.Epsilon, p.Runs, p.Mean, p.Std)
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "files in %s\n", out)
}
