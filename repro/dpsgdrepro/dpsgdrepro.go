// Package dpsgdrepro owns `dpal repro dpsgd`: DP-SGD test accuracy against
// ε with the shipped per-dataset presets (dpsgd.Preset), issue 10's
// accuracy table. It trains each dataset at every ε for a number of seeds,
// each run Poisson-sampled, clipped, noised with σ calibrated for (ε, δ)
// under the RDP accountant (paper 001, §3, Fig. 2; Abadi et al. 2016,
// Alg. 1) and charged to its own ledger, and, when asked, the same model
// without clipping or noise as a reference (dpsgd.NonPrivate: NOT
// differentially private, marked private = false everywhere). It is
// Options → Summary (Run) → rows.csv, summary.json and one accuracy-vs-ε
// figure per dataset (Write, through repro/figure); docs/repro-dpsgd.md
// reads its numbers.
//
// Neighbouring relation: add/remove one training record, as dpsgd's. The
// test sets are public; every accuracy is measured on them. Seeded
// randomness throughout: this is an experiment, and the seeds are recorded.
package dpsgdrepro

import (
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"gonum.org/v1/gonum/stat"

	"github.com/dpal-dev/dpal/active/pool"
	"github.com/dpal-dev/dpal/data"
	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/dpsgd"
	"github.com/dpal-dev/dpal/model/nn"
	"github.com/dpal-dev/dpal/model/scatter"
	"github.com/dpal-dev/dpal/progress"
	"github.com/dpal-dev/dpal/repro/figure"
)

// Options configure a reproduction.
type Options struct {
	// Datasets are trained in turn, each once loaded (dpsgd.PresetDatasets'
	// names, each at most once).
	Datasets []string
	// Source is where the datasets are read from (data.LoadLabelled).
	Source data.Source
	// Epsilons are the target ε of the private runs, each with δ = Delta.
	Epsilons []float64
	Delta    float64
	// Seeds is the number of runs per (dataset, ε): run k uses Seed + k.
	Seeds int
	Seed  uint64
	// Model overrides each dataset's default model (nn.ParseArch's names;
	// empty: the dataset's); the preset follows the model.
	Model string
	// NonPrivate adds, per seed, the model trained without clipping or
	// noise with the preset of ε ≥ dpsgd.LowEpsilon: NOT DP, a reference.
	NonPrivate bool
	// EpochsScale multiplies every preset's epochs (σ is calibrated for the
	// epochs run): below 1 for smoke runs, which the docs must say.
	EpochsScale float64
	// Features is "" (or Raw) to train on the pixels with dpsgd.Preset, or
	// Scatter to train on Tramèr & Boneh's ScatterNet features
	// (scatter.MNIST's configuration, group-normalised per image: a public
	// per-record map, no privacy cost) with dpsgd.ScatterPreset; CacheDir
	// is scatter.CachedFeatures' directory (empty: no cache).
	Features, CacheDir string
}

// The values of Options.Features.
const (
	Raw     = "raw"
	Scatter = "scatter"
)

// DefaultOptions is issue 10's table on MNIST: ε ∈ {0.5, 1, 2, 3, 5, 8} at
// δ = 10⁻⁵, five seeds, the full presets and the non-private reference.
func DefaultOptions() Options {
	return Options{Datasets: []string{"mnist"}, Source: data.Source{Dir: data.DefaultDir},
		Epsilons: []float64{0.5, 1, 2, 3, 5, 8}, Delta: 1e-5, Seeds: 5, NonPrivate: true, EpochsScale: 1}
}

// Validate checks the options before any data is read.
func (o Options) Validate() error {
	if len(o.Datasets) == 0 || len(o.Epsilons) == 0 {
		return errors.New("dpsgdrepro: no dataset or no ε to run")
	}
	for i, d := range o.Datasets {
		if slices.Contains(o.Datasets[:i], d) {
			return fmt.Errorf("dpsgdrepro: dataset %q listed twice (its figure would be written twice)", d)
		}
		if _, err := o.preset(d, dpsgd.LowEpsilon); err != nil { // a bad Model, before hours of training
			return fmt.Errorf("dpsgdrepro: %w", err)
		}
	}
	for _, e := range o.Epsilons {
		if err := (account.Budget{Epsilon: e, Delta: o.Delta}).Validate(); err != nil {
			return fmt.Errorf("dpsgdrepro: %w", err)
		}
	}
	if o.Features != "" && o.Features != Raw && o.Features != Scatter {
		return fmt.Errorf("dpsgdrepro: features %q: want raw or scatter", o.Features)
	}
	if o.Seeds < 1 || !(o.EpochsScale > 0) || math.IsInf(o.EpochsScale, 0) {
		return fmt.Errorf("dpsgdrepro: seeds must be >= 1 (got %d) and the epochs scale finite and > 0 (got %v)", o.Seeds, o.EpochsScale)
	}
	return nil
}

// Row is one training run.
type Row struct {
	Private         bool      `json:"private"` // false: the non-private reference (Epsilon 0, NOT DP)
	Dataset         string    `json:"dataset"`
	Features        string    `json:"features,omitempty"` // absent: raw
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

// Point is the mean ± sample std of the test accuracy over seeds at one
// (dataset, ε).
type Point struct {
	Private bool    `json:"private"` // false: the non-private reference (Epsilon 0, NOT DP)
	Dataset string  `json:"dataset"`
	Epsilon float64 `json:"epsilon"`
	Mean    float64 `json:"mean_accuracy"`
	Std     float64 `json:"std_accuracy"`
	Runs    int     `json:"runs"`
}

// Summary is a reproduction's result: every run and every point, in the
// order of Options' datasets and ε, each dataset's reference last.
type Summary struct {
	Seed        uint64  `json:"seed"`
	Delta       float64 `json:"delta"`
	EpochsScale float64 `json:"epochs_scale"`
	// Features and Scatter are the features trained on (absent: raw) and
	// the ScatterNet's configuration.
	Features string          `json:"features,omitempty"`
	Scatter  *scatter.Config `json:"scatter,omitempty"`
	Rows     []Row           `json:"rows"`
	Points   []Point         `json:"points"`
}

// Run trains every (dataset, ε, seed) of o, then each seed's non-private
// reference when asked, drawing a progress bar per dataset on progress
// (nil: none). Datasets are loaded one at a time.
func Run(o Options, progress io.Writer) (Summary, error) {
	if err := o.Validate(); err != nil {
		return Summary{}, err
	}
	sum := Summary{Seed: o.Seed, Delta: o.Delta, EpochsScale: o.EpochsScale}
	if o.Features == Scatter {
		c := scatter.MNIST
		sum.Features, sum.Scatter = Scatter, &c
	}
	for _, name := range o.Datasets {
		if err := o.dataset(name, &sum, progress); err != nil {
			return sum, err
		}
	}
	return sum, nil
}

// labelled is a loaded dataset.
type labelled struct {
	name        string
	train, test *data.Dataset
	image       [3]int
}

// dataset runs every (ε, seed) on one dataset, then the non-private
// reference when asked.
func (o Options) dataset(name string, sum *Summary, w io.Writer) error {
	d := labelled{name: name}
	var err error
	if d.train, d.test, d.image, err = data.LoadLabelled(name, o.Source); err != nil {
		return err
	}
	if err := o.features(&d); err != nil {
		return err
	}
	runs := len(o.Epsilons)
	if o.NonPrivate {
		runs++
	}
	bar := progress.New(w, runs*o.Seeds, "repro dpsgd "+name)
	defer bar.Finish()
	for k := range runs {
		private := k < len(o.Epsilons)
		eps := dpsgd.LowEpsilon // the reference takes the ε ≥ LowEpsilon preset and ignores ε
		if private {
			eps = o.Epsilons[k]
		}
		s, err := o.setting(d, eps)
		if err != nil {
			return err
		}
		p, err := o.seeds(d, s, private, eps, sum, bar)
		if err != nil {
			return err
		}
		sum.Points = append(sum.Points, p)
	}
	return nil
}

// features replaces d's images by their ScatterNet features when
// o.Features asks for them (no image shape is left for a CNN).
func (o Options) features(d *labelled) error {
	if o.Features != Scatter {
		return nil
	}
	for _, part := range []**data.Dataset{&d.train, &d.test} {
		f, _, err := scatter.CachedFeatures(*part, scatter.MNIST, o.CacheDir)
		if err != nil {
			return fmt.Errorf("dpsgdrepro: %s: %w", d.name, err)
		}
		*part = f
	}
	d.image = [3]int{}
	return nil
}

// preset is dpsgd.Preset, or dpsgd.ScatterPreset on ScatterNet features,
// for o.Model.
func (o Options) preset(name string, eps float64) (dpsgd.Setting, error) {
	if o.Features == Scatter {
		return dpsgd.ScatterPreset(name, o.Model, eps)
	}
	return dpsgd.Preset(name, o.Model, eps)
}

// setting is d's preset for o.Model at eps, its epochs scaled.
func (o Options) setting(d labelled, eps float64) (dpsgd.Setting, error) {
	s, err := o.preset(d.name, eps)
	if err != nil {
		return s, fmt.Errorf("dpsgdrepro: %w", err)
	}
	if s, err = s.ForData(d.train.Dim(), len(d.train.ClassNames), d.image); err != nil {
		return s, fmt.Errorf("dpsgdrepro: %s: %w", d.name, err)
	}
	s.Epochs *= o.EpochsScale
	return s, nil
}

// seeds trains s from each seed and returns the mean ± std.
func (o Options) seeds(d labelled, s dpsgd.Setting, private bool, eps float64, sum *Summary, bar *progress.Bar) (Point, error) {
	var accs []float64
	for k := range o.Seeds {
		seed := sum.Seed + uint64(k)
		row, err := o.run(d, s, private, eps, seed)
		if err != nil {
			what := fmt.Sprintf("ε=%v", eps)
			if !private {
				what = "the non-private reference"
			}
			return Point{}, fmt.Errorf("%s at %s, seed %d: %w", d.name, what, seed, err)
		}
		sum.Rows = append(sum.Rows, row)
		accs = append(accs, row.TestAccuracy)
		bar.Add(1)
	}
	mean, std := stat.MeanStdDev(accs, nil)
	if len(accs) < 2 {
		std = 0
	}
	p := Point{Private: private, Dataset: d.name, Mean: mean, Std: std, Runs: len(accs)}
	if private {
		p.Epsilon = eps
	}
	return p, nil
}

// run trains once from seed: privately at (eps, o.Delta), charged to a
// fresh ledger, or (private false) the non-private reference, charged
// nothing.
func (o Options) run(d labelled, s dpsgd.Setting, private bool, eps float64, seed uint64) (Row, error) {
	r := rng.Seeded(seed)
	var (
		plan dpsgd.Plan
		net  *nn.Net
		err  error
	)
	start := time.Now()
	if private {
		plan, net, err = trainPrivate(&s, d.name, d.train, eps, o.Delta, r)
	} else {
		plan, net, err = trainReference(&s, d.train, r)
	}
	if err != nil {
		return Row{}, err
	}
	pred, err := net.Classify(d.test.X)
	if err != nil {
		return Row{}, err
	}
	row := Row{Private: private, Dataset: d.name, Features: o.rowFeatures(), Model: s.Model.String(), Seed: seed, Epochs: s.Epochs,
		Steps: plan.Steps, NoiseMultiplier: plan.NoiseMultiplier, Seconds: time.Since(start).Seconds()}
	if private {
		row.Epsilon = eps
	}
	row.TestAccuracy, row.TestRecall, _ = pool.Scores(pred, d.test.Class, len(d.train.ClassNames))
	return row, nil
}

// rowFeatures is the Row's Features: empty for raw, as before the field.
func (o Options) rowFeatures() string {
	if o.Features == Scatter {
		return Scatter
	}
	return ""
}

// trainPrivate trains s on every record of train at (eps, delta), charged
// to the ledger group train:<dataset> of a fresh ledger, as dpal train
// charges it.
func trainPrivate(s *dpsgd.Setting, name string, train *data.Dataset, eps, delta float64, r *rng.Rand) (dpsgd.Plan, *nn.Net, error) {
	plan, err := s.Calibrate(eps, delta, train.Len())
	if err != nil {
		return plan, nil, err
	}
	led, err := ledger.New(account.Budget{Epsilon: eps, Delta: delta})
	if err != nil {
		return plan, nil, err
	}
	net, tr, err := s.NewTrainer(r)
	if err != nil {
		return plan, nil, err
	}
	_, err = tr.Run(led, r, dpsgd.Data{X: train.X, Labels: train.Class},
		dpsgd.Everyone("train:"+name, train.Len(), plan.SampleRate), plan.Steps, nil)
	return plan, net, err
}

// trainReference trains s on every record of train without clipping or
// noise: NOT differentially private.
func trainReference(s *dpsgd.Setting, train *data.Dataset, r *rng.Rand) (dpsgd.Plan, *nn.Net, error) {
	plan, err := s.PlanNonPrivate(train.Len())
	if err != nil {
		return plan, nil, err
	}
	net, tr, err := s.NewNonPrivate(r)
	if err != nil {
		return plan, nil, err
	}
	_, err = tr.Run(r, dpsgd.Data{X: train.X, Labels: train.Class},
		dpsgd.Everyone("reference", train.Len(), plan.SampleRate), plan.Steps, nil)
	return plan, net, err
}

// Write writes s into dir: <dataset>-accuracy.png and .csv per dataset
// (test accuracy against ε, mean with a ±1 std band, the reference as a
// horizontal line), rows.csv (one row per run) and summary.json. Each
// summary in beside (earlier runs, e.g. the end-to-end CNN's curve beside
// the ScatterNet one) adds its curve and reference of the same dataset to
// the figures, labelled by its model and features; its rows stay in its
// own files.
func Write(dir string, s Summary, beside ...Summary) error {
	var names []string
	for _, p := range s.Points {
		if !slices.Contains(names, p.Dataset) {
			names = append(names, p.Dataset)
		}
	}
	for _, name := range names {
		pl := figure.Plot{Title: "DP-SGD test accuracy vs ε (" + name + ")", XLabel: "ε (δ fixed)", YLabel: "test accuracy"}
		labelled := len(beside) > 0 || s.Features == Scatter // else the legend of before beside
		for _, b := range append([]Summary{s}, beside...) {
			ser, lines := curve(b, name, labelled)
			if len(ser.X) > 0 {
				pl.Series = append(pl.Series, ser)
			}
			pl.HLines = append(pl.HLines, lines...)
		}
		if err := pl.Save(filepath.Join(dir, name+"-accuracy")); err != nil {
			return err
		}
	}
	if err := writeRows(dir, s.Rows); err != nil {
		return err
	}
	return figure.WriteJSON(filepath.Join(dir, "summary.json"), s)
}

// curve is s's accuracy-vs-ε series on dataset name and its reference
// line, named by what s trained (label) when labelled.
func curve(s Summary, name string, labelled bool) (figure.Series, []figure.HLine) {
	label := ""
	if labelled {
		label = s.label(name)
	}
	ser := figure.Series{Name: name + " DP-SGD" + label, Points: true}
	var lines []figure.HLine
	for _, p := range s.Points {
		switch {
		case p.Dataset != name:
		case !p.Private:
			lines = append(lines, figure.HLine{Name: fmt.Sprintf("non-private reference%s (NOT DP) %.4f", label, p.Mean), Y: p.Mean})
		default:
			ser.X, ser.Y = append(ser.X, p.Epsilon), append(ser.Y, p.Mean)
			ser.Lo, ser.Hi = append(ser.Lo, p.Mean-p.Std), append(ser.Hi, p.Mean+p.Std)
		}
	}
	return ser, lines
}

// label is " (<model>, ScatterNet features)" or " (<model>)" for s's
// runs on dataset name, from its first row there.
func (s Summary) label(name string) string {
	for _, r := range s.Rows {
		if r.Dataset != name {
			continue
		}
		if r.Features == Scatter {
			return " (ScatterNet+" + r.Model + ")"
		}
		return " (" + r.Model + ")"
	}
	return ""
}

func writeRows(dir string, rows []Row) error {
	table := [][]string{{"dataset", "model", "epsilon", "seed", "epochs", "steps", "noise_multiplier", "test_accuracy", "seconds"}}
	for _, r := range rows {
		eps := ftoa(r.Epsilon)
		if !r.Private {
			eps = "non-private"
		}
		table = append(table, []string{r.Dataset, r.Model, eps, strconv.FormatUint(r.Seed, 10), ftoa(r.Epochs),
			strconv.Itoa(r.Steps), ftoa(r.NoiseMultiplier), ftoa(r.TestAccuracy), ftoa(r.Seconds)})
	}
	return figure.WriteCSV(filepath.Join(dir, "rows.csv"), table)
}

// ftoa is v in the shortest form that reads back exactly.
func ftoa(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
