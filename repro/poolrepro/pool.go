// Package poolrepro owns the reproduction of Schwethelm et al. 2024,
// "Differentially Private Active Learning: Balancing Effective Data
// Selection and Privacy" (paper 001): the Table 1 analogue (random
// baseline, random AL with naive and step-amplified training, the
// uncertainty acquisitions with exact (not DP) and private selection),
// Table 2 (ε ∈ {3, 5, 8, 16}), Fig. 7 (ε_Sel sweep at ε = 8), App. D.1's
// Table 4 (continual learning, noise reduction, step amplification) and
// dpal's basic vs joint-RDP accounting, on MNIST, Fashion-MNIST and KDD
// Cup 99 5-class with fast models and a labelling budget scaled down from
// App. B. It drives package active/pool (the system) and writes through
// repro/figure.
//
// Every private run charges a per-record ledger and reports the largest
// deviation of any record's ledger ε from the plan; runs with exact top-k
// selection are marked DP: false ("not DP"). Seeded randomness throughout:
// this is an experiment, and the seeds are recorded.
//
// Its name is unique in the module (<system>repro), so no importer needs an alias.
package poolrepro

import (
	"errors"
	"fmt"
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
	"github.com/dpal-dev/dpal/repro/figure"
)

// Data is one dataset: its training part is the pool. Image is the
// images' height, width and channels (zero for tabular data), which a CNN
// needs.
type Data struct {
	Train, Test *data.Dataset
	Image       [3]int
}

// Setting is a dataset's scaled experiment (App. B's Table 3, scaled).
type Setting struct {
	// PoolSize is the number of training records drawn (uniformly, per
	// run) as the unlabelled pool; 0 uses all.
	PoolSize int `json:"pool_size"`
	// Initial and Queries are |D_1| and the T query sizes (B = their sum).
	Initial int   `json:"initial"`
	Queries []int `json:"queries"`
	// Batch is the expected batch b, Epochs e per phase of the naive plan.
	Batch  int `json:"batch"`
	Epochs int `json:"epochs"`
	// RandomEpochs are the epochs of the random-subset baseline (no AL).
	RandomEpochs float64 `json:"random_epochs"`
	// Model is the network ("logreg", "mlp:64"); BALDModel the MC-dropout
	// network of the BALD rows, with BALDDropout.
	Model       string  `json:"model"`
	BALDModel   string  `json:"bald_model"`
	BALDDropout float64 `json:"bald_dropout"`
	// Clip, LR and Optimizer are the DP-SGD setting.
	Clip      float64 `json:"clip"`
	LR        float64 `json:"lr"`
	Optimizer string  `json:"optimizer"`
}

// Budget is B, the labelling budget.
func (s Setting) Budget() int {
	b := s.Initial
	for _, q := range s.Queries {
		b += q
	}
	return b
}

// Options configure a reproduction.
type Options struct {
	Seed uint64 `json:"seed"`
	// Runs is the number of seeds per configuration (per experiment).
	Runs map[string]int `json:"runs"`
	// Datasets are the datasets to run, each with its Setting.
	Datasets []string           `json:"datasets"`
	Settings map[string]Setting `json:"settings"`
	// Experiments to run: table1, table2, fig7, table4, accounting.
	Experiments []string `json:"experiments"`
}

// Experiment names.
const (
	Table1     = "table1"
	Table2     = "table2"
	Fig7       = "fig7"
	Table4     = "table4"
	Accounting = "accounting"
	// PoissonExp is dpal's Poisson active learning (issue 30) at ε 1, 3
	// and 8 against random selection with the same plan (the same
	// expected labels, steps and σ); Efficiency is its label-efficiency
	// sweep over budgets.
	PoissonExp = "poisson"
	Efficiency = "efficiency"
	// Headline is PoissonExp's two ε = 8 rows alone (for costly models).
	Headline = "headline"
	// TopKTrue is the paper's top-k rows with σ calibrated to their true
	// (replace-one) ε.
	TopKTrue = "topk"
)

// The Poisson rows' public selection rule, fixed before any run (not
// tuned on the test set): p_max 0.2, and a record counts as uncertain
// from a quarter of its normalised score's range.
const (
	PoissonPMax      = 0.2
	PoissonThreshold = 0.25
)

// EfficiencyScales are the label-efficiency experiment's budget fractions.
var EfficiencyScales = []float64{0.1, 0.2, 0.4, 0.6, 0.8, 1}

// DefaultOptions is the full reproduction: App. B's CIFAR-10/RetinalOCT
// schedule (initial 10 000, queries 10 000, 3 000, 1 000, 1 000, batch
// 4096, B = 25 000) scaled by 1/5 (initial 2 000, queries 2 000, 600, 200,
// 200, batch 800, B = 5 000) on a pool of 20 000 (B/pool = 25 %, as
// RetinalOCT; 50 000 for KDD'99), 10 epochs per phase instead of 30.
func DefaultOptions() Options {
	base := Setting{PoolSize: 20000, Initial: 2000, Queries: []int{2000, 600, 200, 200}, Batch: 800, Epochs: 10,
		RandomEpochs: 33, Model: "logreg", BALDModel: "mlp:64", BALDDropout: 0.25, Clip: 1, LR: 0.5, Optimizer: dpsgd.Momentum}
	// KDD'99's rare classes (r2l 0.23 %, u2r 0.01 % of the training file)
	// need a larger pool to be present at all: 50 000 (B/pool = 10 %, as
	// CheXpert).
	kdd := base
	kdd.PoolSize = 50000
	return Options{Seed: 1,
		Runs:        map[string]int{Table1: 5, Table2: 3, Fig7: 3, Table4: 3, Accounting: 3, PoissonExp: 5, Efficiency: 5, TopKTrue: 5, Headline: 5},
		Datasets:    []string{"kdd99-5class", "mnist", "fashion-mnist"},
		Settings:    map[string]Setting{"kdd99-5class": kdd, "mnist": base, "fashion-mnist": base},
		Experiments: []string{Table1, Table2, Fig7, Table4, Accounting},
	}
}

// WithCNN returns o with the image datasets' model replaced by the
// Tramèr–Boneh CNN at dpal train's MNIST setting (C 0.1, momentum, lr 0.5);
// the tabular datasets keep logistic regression.
func (o Options) WithCNN() Options {
	settings := map[string]Setting{}
	for k, s := range o.Settings {
		if k == "mnist" || k == "fashion-mnist" {
			s.Model, s.Clip, s.LR, s.Optimizer = nn.CNN, 0.1, 0.5, dpsgd.Momentum
		}
		settings[k] = s
	}
	o.Settings = settings
	return o
}

// QuickOptions is a smoke run: one seed, a tiny budget, table 1 only.
func QuickOptions() Options {
	o := DefaultOptions()
	s := Setting{PoolSize: 2000, Initial: 200, Queries: []int{100, 50}, Batch: 100, Epochs: 3, RandomEpochs: 6,
		Model: "logreg", BALDModel: "mlp:16", BALDDropout: 0.25, Clip: 1, LR: 0.5, Optimizer: dpsgd.Momentum}
	o.Runs = map[string]int{Table1: 1, Table2: 1, Fig7: 1, Table4: 1, Accounting: 1, PoissonExp: 1, Efficiency: 1, TopKTrue: 1, Headline: 1}
	for k := range o.Settings {
		o.Settings[k] = s
	}
	o.Experiments = []string{Table1}
	return o
}

// Method is one configuration of the learner.
type Method struct {
	// Name is the row label ("Random", "Random AL (SA)", "Entropy (DP)"…).
	Name string `json:"method"`
	// Baseline trains on a random subset of size B in one DP-SGD run (no
	// AL).
	Baseline      bool            `json:"baseline,omitempty"`
	Acquisition   string          `json:"acquisition"`
	NotDP         bool            `json:"not_dp,omitempty"`
	Mode          pool.Mode       `json:"-"`
	Accounting    pool.Accounting `json:"-"`
	Epsilon       float64         `json:"epsilon"`
	EpsilonSelect float64         `json:"epsilon_select"`
	// Selection is the selection scheme (top-k, the zero value, or
	// Poisson with PMax and Threshold, see pool.Learner).
	Selection pool.Selection `json:"-"`
	PMax      float64        `json:"p_max,omitempty"`
	Threshold float64        `json:"threshold,omitempty"`
	// Scale multiplies the setting's initial set, queries and batch (0
	// means 1): the label-efficiency experiment's smaller budgets, with
	// the same sampling rates and steps.
	Scale float64 `json:"scale,omitempty"`
}

// key identifies a configuration, so that experiments share runs.
func (m Method) key(dataset string, run int) string {
	return fmt.Sprintf("%s|%v|%s|%v|%d|%d|%g|%g|%d|%g|%g|%g|%d", dataset, m.Baseline, m.Acquisition, m.NotDP, m.Mode, m.Accounting,
		m.Epsilon, m.EpsilonSelect, m.Selection, m.PMax, m.Threshold, m.scale(), run)
}

func (m Method) scale() float64 {
	if m.Scale == 0 {
		return 1
	}
	return m.Scale
}

// scaled is the setting with its labelled sizes and batch multiplied by
// f (rounded, at least 1; the initial set at least the batch).
func (s Setting) scaled(f float64) Setting {
	if f == 1 {
		return s
	}
	r := func(v int) int { return max(1, int(math.Round(float64(v)*f))) }
	out := s
	out.Batch, out.Initial = r(s.Batch), max(r(s.Initial), r(s.Batch))
	out.Queries = make([]int, len(s.Queries))
	for i, q := range s.Queries {
		out.Queries[i] = r(q)
	}
	return out
}

// Row is one run.
type Row struct {
	Experiment string  `json:"experiment"`
	Dataset    string  `json:"dataset"`
	Method     string  `json:"method"`
	DP         bool    `json:"dp"`
	Mode       string  `json:"mode"`
	Accounting string  `json:"accounting"`
	Epsilon    float64 `json:"epsilon"`
	EpsSelect  float64 `json:"epsilon_select"`
	Delta      float64 `json:"delta"`
	Selection  string  `json:"selection"`
	Scale      float64 `json:"scale"`
	// Labels is the number of records labelled (random under Poisson
	// selection).
	Labels   int     `json:"labels"`
	Run      int     `json:"run"`
	Seed     uint64  `json:"seed"`
	Accuracy float64 `json:"test_accuracy"`
	Balanced float64 `json:"balanced_accuracy"`
	// Recall is the final model's recall per class on the test set.
	Recall []float64 `json:"test_recall"`
	// MaxDeviation is the largest |ledger ε − planned ε| over every pool
	// record (the baseline: of its one group).
	MaxDeviation float64 `json:"max_ledger_deviation"`
	// LedgerMax is the largest ε any record paid.
	LedgerMax float64 `json:"ledger_max_epsilon"`
	Seconds   float64 `json:"seconds"`
}

// Point is the mean ± std over runs of one method in one experiment.
type Point struct {
	Experiment  string  `json:"experiment"`
	Dataset     string  `json:"dataset"`
	Method      string  `json:"method"`
	DP          bool    `json:"dp"`
	Epsilon     float64 `json:"epsilon"`
	EpsSelect   float64 `json:"epsilon_select"`
	Accuracy    float64 `json:"mean_accuracy"`
	AccuracyStd float64 `json:"std_accuracy"`
	Balanced    float64 `json:"mean_balanced_accuracy"`
	BalancedStd float64 `json:"std_balanced_accuracy"`
	// Recall is the mean recall per class.
	Recall       []float64 `json:"mean_test_recall"`
	Runs         int       `json:"runs"`
	MaxDeviation float64   `json:"max_ledger_deviation"`
	// Labels is the mean number of records labelled; Scale the budget
	// fraction.
	Labels float64 `json:"mean_labels"`
	Scale  float64 `json:"scale"`
}

// Trivial is a dataset's majority-class model on its test set.
type Trivial struct {
	Dataset  string  `json:"dataset"`
	Class    string  `json:"majority_class"`
	Accuracy float64 `json:"accuracy"`
	Balanced float64 `json:"balanced_accuracy"`
}

// Summary is what summary.json holds.
type Summary struct {
	Options    Options      `json:"options"`
	Trivial    []Trivial    `json:"trivial"`
	Points     []Point      `json:"points"`
	Efficiency []LabelsNeed `json:"label_efficiency,omitempty"`
	Rows       []Row        `json:"rows"`
	Seconds    float64      `json:"seconds"`
}

// LabelsNeed is one method's label efficiency on a dataset: the labels it
// needs to reach Reference, the headline metric (balanced accuracy on
// KDD'99, accuracy elsewhere) of random Poisson selection with the full
// budget, interpolated linearly between the budgets of the efficiency
// experiment (in mean labels asked); Reached is false when no budget gets
// there (Labels is then 0).
type LabelsNeed struct {
	Dataset   string  `json:"dataset"`
	Method    string  `json:"method"`
	Reference float64 `json:"reference"`
	Reached   bool    `json:"reached"`
	Labels    float64 `json:"labels"`
	// FullBudget is the method's mean labels at scale 1.
	FullBudget float64 `json:"full_budget_labels"`
}

// labelEfficiency computes LabelsNeed per dataset and method from the
// efficiency experiment's points.
func labelEfficiency(points []Point) []LabelsNeed {
	var out []LabelsNeed
	byData := map[string][]Point{}
	var order []string
	for _, p := range points {
		if p.Experiment != Efficiency {
			continue
		}
		if _, ok := byData[p.Dataset]; !ok {
			order = append(order, p.Dataset)
		}
		byData[p.Dataset] = append(byData[p.Dataset], p)
	}
	for _, d := range order {
		ps := byData[d]
		ref := math.NaN()
		for _, p := range ps {
			if p.Method == "Random, Poisson" && p.Scale == 1 {
				ref, _ = metric(d, p)
			}
		}
		methods := map[string][]Point{}
		var names []string
		for _, p := range ps {
			if _, ok := methods[p.Method]; !ok {
				names = append(names, p.Method)
			}
			methods[p.Method] = append(methods[p.Method], p)
		}
		for _, n := range names {
			curve := methods[n]
			slices.SortFunc(curve, func(a, b Point) int { return cmpFloat(a.Labels, b.Labels) })
			need := LabelsNeed{Dataset: d, Method: n, Reference: ref}
			for i, p := range curve {
				if p.Scale == 1 {
					need.FullBudget = p.Labels
				}
				y, _ := metric(d, p)
				if need.Reached || !(y >= ref) {
					continue
				}
				need.Reached, need.Labels = true, p.Labels
				if i > 0 {
					q := curve[i-1]
					yq, _ := metric(d, q)
					need.Labels = q.Labels + (p.Labels-q.Labels)*(ref-yq)/(y-yq)
				}
			}
			out = append(out, need)
		}
	}
	return out
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Methods returns an experiment's configurations, in table order.
func Methods(exp string) []Method {
	dp := func(name, acq string, eps, sel float64) Method {
		return Method{Name: name, Acquisition: acq, Mode: pool.StepAmplification, Epsilon: eps, EpsilonSelect: sel}
	}
	random := Method{Name: "Random", Baseline: true, Acquisition: "random", Epsilon: 8}
	switch exp {
	case Table1:
		out := []Method{random,
			{Name: "Random AL (naive)", Acquisition: "random", Mode: pool.Naive, Epsilon: 8},
			{Name: "Random AL (SA)", Acquisition: "random", Mode: pool.StepAmplification, Epsilon: 8}}
		for _, a := range []string{"lc", "margin", "entropy", "bald"} {
			out = append(out, Method{Name: a + " (not DP)", Acquisition: a, NotDP: true, Mode: pool.StepAmplification, Epsilon: 8},
				dp(a+" (DP)", a, 8, 2))
		}
		return out
	case Table2:
		var out []Method
		for i, eps := range []float64{3, 5, 8, 16} {
			sel := []float64{1, 1, 2, 4}[i]
			r := random
			r.Epsilon = eps
			out = append(out, r, Method{Name: "Random AL (SA)", Acquisition: "random", Mode: pool.StepAmplification, Epsilon: eps},
				dp("entropy (DP)", "entropy", eps, sel))
		}
		return out
	case Fig7:
		var out []Method
		for _, sel := range []float64{0.5, 1, 2, 3, 4, 6} {
			out = append(out, dp("entropy (DP)", "entropy", 8, sel))
		}
		return out
	case Table4:
		out := []Method{}
		for _, m := range []pool.Mode{pool.Continual, pool.NoiseReduction, pool.StepAmplification} {
			x := dp("entropy (DP), "+m.String(), "entropy", 8, 2)
			x.Mode = m
			out = append(out, x)
		}
		return out
	case Accounting:
		out := []Method{}
		for _, a := range []pool.Accounting{pool.Basic, pool.RDP} {
			x := dp("entropy (DP), "+a.String(), "entropy", 8, 2)
			x.Accounting = a
			out = append(out, x)
		}
		return out
	case PoissonExp:
		var out []Method
		for _, eps := range []float64{1, 3, 8} {
			out = append(out, poissonMethod("Random, Poisson", "random", eps, 1), poissonMethod("entropy, Poisson", "entropy", eps, 1))
		}
		return append(out, poissonMethod("lc, Poisson", "lc", 8, 1), poissonMethod("margin, Poisson", "margin", 8, 1))
	case Headline:
		return []Method{poissonMethod("Random, Poisson", "random", 8, 1), poissonMethod("entropy, Poisson", "entropy", 8, 1)}
	case TopKTrue:
		return []Method{{Name: "Random AL (SA), true ε", Acquisition: "random", Mode: pool.StepAmplification, Epsilon: 8},
			dp("entropy (DP), true ε", "entropy", 8, 2), dp("margin (DP), true ε", "margin", 8, 2)}
	case Efficiency:
		var out []Method
		for _, f := range EfficiencyScales {
			out = append(out, poissonMethod("Random, Poisson", "random", 8, f), poissonMethod("entropy, Poisson", "entropy", 8, f))
		}
		return out
	}
	return nil
}

// poissonMethod is a Poisson row: step amplification, the public selection
// rule, the budget and p_max scaled by f (an uncertainty rule asks about
// p_max times the uncertain records whatever the declared sizes, so a
// smaller budget needs a smaller p_max; random selection at the same f
// shares the plan, hence η, σ and the steps).
func poissonMethod(name, acq string, eps, f float64) Method {
	return Method{Name: name, Acquisition: acq, Mode: pool.StepAmplification, Epsilon: eps, Selection: pool.Poisson,
		PMax: PoissonPMax * f, Threshold: PoissonThreshold, Scale: f}
}

// Validate checks the options.
func (o Options) Validate() error {
	if len(o.Datasets) == 0 || len(o.Experiments) == 0 {
		return errors.New("repro pool: no dataset or no experiment")
	}
	for _, e := range o.Experiments {
		if Methods(e) == nil {
			return fmt.Errorf("repro pool: unknown experiment %q (want table1, table2, fig7, table4, accounting, poisson, efficiency, topk, headline)", e)
		}
		if o.Runs[e] < 1 {
			return fmt.Errorf("repro pool: experiment %s needs at least one run", e)
		}
	}
	for _, d := range o.Datasets {
		s, ok := o.Settings[d]
		if !ok {
			return fmt.Errorf("repro pool: no setting for dataset %q", d)
		}
		if s.PoolSize != 0 && s.PoolSize < s.Budget() {
			return fmt.Errorf("repro pool: %s: pool %d below the labelling budget %d", d, s.PoolSize, s.Budget())
		}
	}
	return nil
}

// Total is the number of runs Reproduce makes (shared configurations
// counted once).
func (o Options) Total() int {
	seen := map[string]bool{}
	for _, d := range o.Datasets {
		for _, e := range o.Experiments {
			for _, m := range Methods(e) {
				for run := range o.Runs[e] {
					seen[m.key(d, run)] = true
				}
			}
		}
	}
	return len(seen)
}

// Reproduce runs every experiment on every dataset; progress, if not nil,
// is called after each run.
func Reproduce(o Options, sets map[string]Data, progress func()) (Summary, error) {
	if err := o.Validate(); err != nil {
		return Summary{}, err
	}
	start := time.Now()
	sum := Summary{Options: o}
	cache := map[string]Row{}
	for di, d := range o.Datasets {
		ds, ok := sets[d]
		if !ok {
			return sum, fmt.Errorf("repro pool: dataset %q not loaded", d)
		}
		sum.Trivial = append(sum.Trivial, trivial(d, ds))
		for _, e := range o.Experiments {
			for _, m := range Methods(e) {
				var rows []Row
				for run := range o.Runs[e] {
					k := m.key(d, run)
					row, ok := cache[k]
					if !ok {
						seed := o.Seed + uint64(1000*di+run)
						var err error
						if row, err = runOne(o.Settings[d], d, ds, m, seed); err != nil {
							return sum, fmt.Errorf("repro pool: %s, %s, %s, run %d: %w", e, d, m.Name, run, err)
						}
						row.Run, row.Seed = run, seed
						cache[k] = row
						if progress != nil {
							progress()
						}
					}
					row.Experiment = e
					rows = append(rows, row)
				}
				sum.Rows = append(sum.Rows, rows...)
				sum.Points = append(sum.Points, point(e, d, m, rows))
			}
		}
	}
	sum.Efficiency = labelEfficiency(sum.Points)
	sum.Seconds = time.Since(start).Seconds()
	return sum, nil
}

// trivial is the majority class of the training part, scored on the test
// part.
func trivial(name string, d Data) Trivial {
	classes := len(d.Train.ClassNames)
	count := make([]int, classes)
	for _, c := range d.Train.Class {
		count[c]++
	}
	maj := 0
	for c := range count {
		if count[c] > count[maj] {
			maj = c
		}
	}
	pred := make([]int, d.Test.Len())
	for i := range pred {
		pred[i] = maj
	}
	acc, _, bal := pool.Scores(pred, d.Test.Class, classes)
	return Trivial{Dataset: name, Class: d.Train.ClassNames[maj], Accuracy: acc, Balanced: bal}
}

func point(exp, d string, m Method, rows []Row) Point {
	acc, bal := make([]float64, len(rows)), make([]float64, len(rows))
	p := Point{Experiment: exp, Dataset: d, Method: m.Name, DP: !m.NotDP, Epsilon: m.Epsilon, EpsSelect: m.EpsilonSelect, Runs: len(rows), Scale: m.scale()}
	for i, r := range rows {
		acc[i], bal[i] = r.Accuracy, r.Balanced
		p.MaxDeviation = max(p.MaxDeviation, r.MaxDeviation)
		p.Labels += float64(r.Labels) / float64(len(rows))
		if p.Recall == nil {
			p.Recall = make([]float64, len(r.Recall))
		}
		for c, v := range r.Recall {
			if c < len(p.Recall) {
				p.Recall[c] += v / float64(len(rows))
			}
		}
	}
	p.Accuracy, p.AccuracyStd = meanStd(acc)
	p.Balanced, p.BalancedStd = meanStd(bal)
	return p
}

func meanStd(x []float64) (float64, float64) {
	if len(x) < 2 {
		return stat.Mean(x, nil), 0
	}
	return stat.MeanStdDev(x, nil)
}

// runOne runs one configuration with one seed.
func runOne(s Setting, name string, d Data, m Method, seed uint64) (Row, error) {
	r := rng.Seeded(seed)
	train, err := subset(r.Split(), d.Train, s.PoolSize)
	if err != nil {
		return Row{}, err
	}
	s = s.scaled(m.scale())
	delta := 1 / float64(s.Budget()) // the paper's rows keep the paper's δ = 1/B
	if m.Selection == pool.Poisson {
		// The guarantee covers every pool record (each is scored and may be
		// chosen), so δ is set against the pool, not the labelling budget.
		delta = account.DefaultDelta(train.Len())
	}
	row := Row{Dataset: name, Method: m.Name, DP: !m.NotDP, Mode: m.Mode.String(), Accounting: m.Accounting.String(),
		Epsilon: m.Epsilon, EpsSelect: m.EpsilonSelect, Delta: delta, Selection: m.Selection.String(), Scale: m.scale()}
	acq, err := pool.ParseAcquisition(m.Acquisition)
	if err != nil {
		return row, err
	}
	model, dropout := s.Model, 0.0
	if acq == pool.BALD {
		model, dropout = s.BALDModel, s.BALDDropout
	}
	spec, err := nn.ParseArch(model)
	if err != nil {
		return row, err
	}
	spec.Inputs, spec.Classes, spec.Dropout = train.Dim(), len(train.ClassNames), dropout
	switch spec.Arch {
	case nn.MLP:
		spec.Activation = nn.ReLU
	case nn.CNN:
		spec.Image = d.Image
	}
	tcfg := dpsgd.Config{Clip: s.Clip, LR: s.LR, Optimizer: s.Optimizer, Momentum: 0.9}
	start := time.Now()
	if m.Baseline {
		row.Mode = "none"
		err = baseline(&row, r, s, spec, tcfg, train, d.Test)
	} else {
		err = active(&row, r, s, m, pool.Learner{Spec: spec, Train: tcfg, Acquisition: acq, NotDP: m.NotDP, Threshold: m.Threshold}, train, d.Test)
	}
	row.Seconds = time.Since(start).Seconds()
	return row, err
}

// subset draws n records uniformly (reading none), or returns all.
func subset(r *rng.Rand, d *data.Dataset, n int) (*data.Dataset, error) {
	if n == 0 || n >= d.Len() {
		return d, nil
	}
	idx, err := pool.RandomSubset(r, n, d.Len())
	if err != nil {
		return nil, err
	}
	slices.Sort(idx)
	return d.Subset(idx), nil
}

// active is one pool.Run.
func active(row *Row, r *rng.Rand, s Setting, m Method, lr pool.Learner, train, test *data.Dataset) error {
	plan, err := pool.Build(pool.Config{Epsilon: m.Epsilon, EpsilonSelect: m.EpsilonSelect, Delta: row.Delta, Batch: s.Batch,
		Epochs: s.Epochs, Initial: s.Initial, Queries: s.Queries, Mode: m.Mode, Accounting: m.Accounting,
		Selection: m.Selection, PoolSize: train.Len(), PMax: m.PMax})
	if err != nil {
		return err
	}
	led, err := ledger.New(account.Budget{Epsilon: m.Epsilon, Delta: row.Delta})
	if err != nil {
		return err
	}
	res, err := pool.Run(led, r, pool.Input{Plan: plan, Learner: lr, Pool: train.X, Oracle: pool.DatasetOracle{Classes: train.Class}, Test: test})
	if err != nil {
		return err
	}
	row.Accuracy, row.Balanced, row.MaxDeviation = res.TestAccuracy, res.BalancedAccuracy, res.Privacy.MaxDeviation
	row.Labels, row.Recall = res.Labels, res.TestRecall
	_, row.LedgerMax = led.MaxEpsilon()
	return nil
}

// baseline is Table 1's "Random": DP-SGD on a uniformly drawn labelled set
// of size B in one run, at the target (ε, δ), σ calibrated by
// dpsgd.Calibrate; all B records are charged alike, as one ledger group.
func baseline(row *Row, r *rng.Rand, s Setting, spec nn.Spec, cfg dpsgd.Config, train, test *data.Dataset) error {
	b := s.Budget()
	lab, err := subset(r.Split(), train, b)
	if err != nil {
		return err
	}
	plan, err := dpsgd.Calibrate(row.Epsilon, row.Delta, s.RandomEpochs, s.Batch, b)
	if err != nil {
		return err
	}
	cfg.NoiseMultiplier = plan.NoiseMultiplier
	net, err := nn.New(spec, r.Split())
	if err != nil {
		return err
	}
	tr, err := dpsgd.New(net, cfg)
	if err != nil {
		return err
	}
	led, err := ledger.New(account.Budget{Epsilon: row.Epsilon, Delta: row.Delta})
	if err != nil {
		return err
	}
	all := make([]int, b)
	for i := range all {
		all[i] = i
	}
	if _, err := tr.Run(led, r.Split(), dpsgd.Data{X: lab.X, Labels: lab.Class}, []dpsgd.Group{{Name: "random-subset", Records: all, Rate: plan.SampleRate}}, plan.Steps, nil); err != nil {
		return err
	}
	pred, err := net.Classify(test.X)
	if err != nil {
		return err
	}
	row.Accuracy, row.Recall, row.Balanced = pool.Scores(pred, test.Class, spec.Classes)
	row.Labels = b
	row.LedgerMax, _ = led.Spent("random-subset")
	row.MaxDeviation = math.Max(0, row.LedgerMax-row.Epsilon)
	return nil
}

// Write saves rows.csv, points.csv, summary.json and one figure per
// dataset and experiment into dir.
func Write(dir string, s Summary) error {
	if err := figure.WriteJSON(filepath.Join(dir, "summary.json"), s); err != nil {
		return err
	}
	rows := [][]string{{"experiment", "dataset", "method", "dp", "mode", "accounting", "selection", "scale", "epsilon", "epsilon_select", "delta", "run", "seed",
		"labels", "test_accuracy", "balanced_accuracy", "max_ledger_deviation", "seconds"}}
	for _, r := range s.Rows {
		rows = append(rows, []string{r.Experiment, r.Dataset, r.Method, strconv.FormatBool(r.DP), r.Mode, r.Accounting, r.Selection, ftoa(r.Scale),
			ftoa(r.Epsilon), ftoa(r.EpsSelect), ftoa(r.Delta), strconv.Itoa(r.Run), strconv.FormatUint(r.Seed, 10), strconv.Itoa(r.Labels),
			ftoa(r.Accuracy), ftoa(r.Balanced), ftoa(r.MaxDeviation), ftoa(r.Seconds)})
	}
	if err := figure.WriteCSV(filepath.Join(dir, "rows.csv"), rows); err != nil {
		return err
	}
	pts := [][]string{{"experiment", "dataset", "method", "dp", "epsilon", "epsilon_select", "scale", "mean_labels", "mean_accuracy", "std_accuracy",
		"mean_balanced_accuracy", "std_balanced_accuracy", "runs"}}
	for _, p := range s.Points {
		pts = append(pts, []string{p.Experiment, p.Dataset, p.Method, strconv.FormatBool(p.DP), ftoa(p.Epsilon), ftoa(p.EpsSelect), ftoa(p.Scale),
			ftoa(p.Labels), ftoa(p.Accuracy), ftoa(p.AccuracyStd), ftoa(p.Balanced), ftoa(p.BalancedStd), strconv.Itoa(p.Runs)})
	}
	if err := figure.WriteCSV(filepath.Join(dir, "points.csv"), pts); err != nil {
		return err
	}
	return writeFigures(dir, s)
}

// writeFigures draws Table 2 (accuracy vs ε) and Fig. 7 (accuracy vs ε_Sel)
// per dataset, with the majority class as a reference line.
func writeFigures(dir string, s Summary) error {
	for _, t := range s.Trivial {
		for _, f := range []struct {
			exp, x string
			of     func(Point) float64
		}{{Table2, "ε", func(p Point) float64 { return p.Epsilon }}, {Fig7, "ε_Sel (ε = 8)", func(p Point) float64 { return p.EpsSelect }}} {
			series := map[string]*figure.Series{}
			var order []string
			for _, p := range s.Points {
				if p.Experiment != f.exp || p.Dataset != t.Dataset {
					continue
				}
				sr, ok := series[p.Method]
				if !ok {
					sr = &figure.Series{Name: p.Method, Points: true}
					series[p.Method] = sr
					order = append(order, p.Method)
				}
				y, sd := metric(t.Dataset, p)
				sr.X, sr.Y = append(sr.X, f.of(p)), append(sr.Y, y)
				sr.Lo, sr.Hi = append(sr.Lo, y-sd), append(sr.Hi, y+sd)
			}
			if len(order) == 0 {
				continue
			}
			name, _ := metricName(t.Dataset)
			pl := figure.Plot{Title: fmt.Sprintf("%s %s (paper 001)", t.Dataset, f.exp), XLabel: f.x, YLabel: name,
				HLines: []figure.HLine{{Name: "majority class", Y: trivialMetric(t)}}}
			for _, n := range order {
				pl.Series = append(pl.Series, *series[n])
			}
			if err := pl.Save(filepath.Join(dir, t.Dataset+"-"+f.exp)); err != nil {
				return err
			}
		}
	}
	return nil
}

// metricName is the headline metric of a dataset: balanced accuracy on
// the imbalanced KDD'99 (RetinalOCT's test set is balanced), accuracy
// elsewhere.
func metricName(dataset string) (string, bool) {
	if dataset == "kdd99-5class" {
		return "balanced accuracy", true
	}
	return "test accuracy", false
}

func metric(dataset string, p Point) (float64, float64) {
	if _, bal := metricName(dataset); bal {
		return p.Balanced, p.BalancedStd
	}
	return p.Accuracy, p.AccuracyStd
}

func trivialMetric(t Trivial) float64 {
	if _, bal := metricName(t.Dataset); bal {
		return t.Balanced
	}
	return t.Accuracy
}

func ftoa(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
