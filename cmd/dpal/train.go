package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dpal-dev/dpal/active/pool"
	"github.com/dpal-dev/dpal/data"
	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/dpsgd"
	"github.com/dpal-dev/dpal/model/nn"
	"github.com/dpal-dev/dpal/outfile"
	"github.com/dpal-dev/dpal/progress"
)

func init() {
	cmd := &cobra.Command{
		Use:   "train",
		Short: "Train a classifier with DP-SGD (Poisson sampling, exact Gaussian noise, RDP accounting)",
		Long: `train calibrates the DP-SGD noise multiplier for --epsilon/--delta, then
trains with Poisson sampling at rate batch/n, per-example clipping to --clip
and exact discrete-Gaussian noise, charging each epoch's steps to the ledger
just before it runs them (the charges add up to the whole run's ε; a run
whose remaining epochs do not fit the budget is refused before the first).
After each epoch it prints the ε of the steps so far and the test accuracy.

--checkpoint FILE (with --ledger) keeps the run's state, sealed and mode
0600, at every epoch's end; after a kill, rerun the same command with
--resume: it continues from the last checkpoint, pays for no epoch twice,
and under --seed writes the model an uninterrupted run would.

Defaults (model, optimizer, lr, clip, batch, epochs) are tuned per dataset:
mnist and fashion-mnist train the tanh CNN (C 0.1, momentum; mnist batch
512, lr 0.5, 30 epochs at ε ≥ 2, 15 below; fashion-mnist batch 2048, lr 4,
40 epochs at ε ≥ 2, mnist's setting below), and with --model mlp:… use C 1
and momentum: on mnist tanh, batch 4096, lr 1 and 40 epochs at ε ≥ 2
(fashion-mnist: ReLU, batch 1024, lr 1, 10 epochs), batch 256, lr 0.1
and 10 epochs below; kdd99-5class, csv and libsvm a
logistic regression (batch 1024 or 256, C 1, momentum, lr 0.5).

--features scatter (mnist, fashion-mnist) trains on Tramèr & Boneh's
ScatterNet features instead of the pixels: a fixed wavelet scattering
transform and per-image group normalisation, applied to each image on its
own, so they cost no privacy (docs/dpsgd.md). The default model is then a
logistic regression (batch 8192, C 0.1, momentum, lr 4, 60 epochs). The
features are cached in --cache-dir, keyed by a hash of the images and the
transform, and verified on every read.

--train-accuracy also prints accuracy on the private training set: that
number is NOT covered by ε (a diagnostic for experiments only).

--non-private trains the same model with the same data, sampling,
optimiser and epochs but no clipping and no noise: a reference for the
accuracy a private model gives up. It is NOT differentially private,
charges nothing and refuses --epsilon, --delta and --ledger.`,
		Args: cobra.NoArgs,
		RunE: runTrain,
	}
	o, f := &trainOpts, cmd.Flags()
	dataModelFlags(f, &o.presetOptions, "training file")
	f.Float64Var(&o.Epsilon, "epsilon", 3, "target ε of the whole run (0 < ε ≤ 50)")
	f.Float64("delta", 0, "target δ (default min(1e-5, 1/(10n)), n the training records)")
	f.Float64Var(&o.Epochs, "epochs", 0, "epochs (steps = ⌈epochs·n/batch⌉; default per dataset)")
	f.IntVar(&o.Batch, "batch", 0, "expected batch size (sampling rate = batch/n; default per dataset)")
	optimizerFlags(f, &o.presetOptions)
	f.Float64Var(&o.WeightDecay, "weight-decay", 0, "weight decay")
	f.StringVar(&o.Schedule, "schedule", "constant", "learning-rate schedule: constant|cosine")
	f.Uint64("seed", 0, "seed for reproducible sampling and noise (experiments only; default: secure randomness)")
	f.StringVar(&o.Ledger, "ledger", "", "durable ledger: a FILE or postgres://…?ledger=NAME (docs/postgres.md): the run's ε is charged to it; a new one gets --budget-epsilon/--budget-delta, later runs keep its budget")
	budgetFlags(f)
	f.StringVar(&o.Out, "out", "", "write the trained model here (JSON, see docs/dpsgd.md); an existing file needs --force")
	forceFlag(f)
	f.StringVar(&o.Checkpoint, "checkpoint", "", "with --ledger: keep the run's state here at every epoch's end (sealed, mode 0600), for --resume")
	f.BoolVar(&o.Resume, "resume", false, "continue the run saved in --checkpoint (same flags; nothing is charged twice)")
	f.BoolVar(&o.NonPrivate, "non-private", false, "train WITHOUT clipping or noise (NOT DP: a reference for comparison; refuses --epsilon, --delta, --ledger)")
	f.BoolVar(&o.TrainAccuracy, "train-accuracy", false, "also report training-set accuracy (NOT private: diagnostic only)")
	f.BoolVar(&o.JSON, "json", false, "print one JSON object")
	f.Bool("no-progress", false, "draw no progress bar")
	maxMemoryFlag(f)
	rootCmd.AddCommand(cmd)
}

// trainOptions are dpal train's flags, bound in its init. The flags that
// shared helpers read by name (--delta: deltaFlag, --seed: seedFlag,
// --budget-*: openLedger, --no-progress, --max-memory, --force) are
// declared unbound.
type trainOptions struct {
	presetOptions
	Epsilon     float64
	Epochs      float64
	Batch       int
	WeightDecay float64
	Schedule    string
	Ledger      string
	Out         string
	Checkpoint  string
	Resume      bool
	// NonPrivate trains the reference without clipping or noise.
	NonPrivate bool
	// TrainAccuracy reports the (not private) training-set accuracy.
	TrainAccuracy bool
	JSON          bool
}

var trainOpts trainOptions

// presetOptions are the dataset, model and optimiser flags that train and
// pool run both declare (dataModelFlags, optimizerFlags) and that
// settings resolves over the dataset's DP-SGD preset.
type presetOptions struct {
	Data              string
	Source            data.Source
	Model, Activation string
	Dropout           float64
	Clip, LR          float64
	Optimizer         string
	Momentum          float64
	// Features is --features (raw or scatter) and CacheDir --cache-dir
	// (applyFeatures).
	Features, CacheDir string
}

// dataModelFlags declares the dataset and model flags of o, which
// loadTrainData and settings read (train, pool run); file describes
// --file.
func dataModelFlags(f *pflag.FlagSet, o *presetOptions, file string) {
	f.StringVar(&o.Data, "data", "", "mnist|fashion-mnist|kdd99-5class|csv|libsvm (required)")
	dataSourceFlags(f, &o.Source, file, "test file (default: 20 % of --file, split by a fixed seed)")
	f.StringVar(&o.Model, "model", "", "logreg|mlp:W1[,W2[,W3]]|cnn (default per dataset)")
	f.StringVar(&o.Activation, "activation", "", "mlp: relu|tanh (default per dataset: tanh on mnist, relu elsewhere)")
	f.Float64Var(&o.Dropout, "dropout", 0, "mlp: dropout rate after each hidden layer (BALD's MC-dropout passes need > 0)")
	featureFlags(f, o)
}

// trainEpoch is one epoch's report.
type trainEpoch struct {
	Epoch         int      `json:"epoch"`
	Steps         int      `json:"steps"`
	Epsilon       float64  `json:"epsilon,omitempty"` // absent when not private
	TestAccuracy  float64  `json:"test_accuracy"`
	TrainAccuracy *float64 `json:"train_accuracy_not_private,omitempty"`
	Seconds       float64  `json:"seconds"`
}

// trainOutput is what `dpal train` prints. The privacy fields are absent
// (omitempty: a private run has them all > 0) when Private is false.
type trainOutput struct {
	Private bool   `json:"private"`
	NotDP   string `json:"not_dp,omitempty"`
	Dataset string `json:"dataset"`
	// featureInfo is absent for raw features, as before --features.
	featureInfo
	Model             string       `json:"model"`
	Params            int          `json:"params"`
	Records           int          `json:"records"`
	NoiseMultiplier   float64      `json:"noise_multiplier,omitempty"`
	NoiseSigma        float64      `json:"noise_sigma,omitempty"`
	SampleRate        float64      `json:"sample_rate"`
	ExpectedBatch     float64      `json:"expected_batch"`
	Steps             int          `json:"steps"`
	Epochs            float64      `json:"epochs"`
	Clip              float64      `json:"clip"`
	LR                float64      `json:"lr"`
	Optimizer         string       `json:"optimizer"`
	Epsilon           float64      `json:"epsilon,omitempty"`
	Delta             float64      `json:"delta,omitempty"`
	RDPOrder          float64      `json:"rdp_order,omitempty"`
	LedgerGroup       string       `json:"ledger_group,omitempty"`
	LedgerEpsilon     float64      `json:"ledger_epsilon,omitempty"`
	TestAccuracy      float64      `json:"test_accuracy"`
	TestRecall        []float64    `json:"test_recall"`
	ClassNames        []string     `json:"class_names"`
	ExamplesPerSecond float64      `json:"examples_per_second"`
	Seconds           float64      `json:"seconds"`
	Seed              *uint64      `json:"seed,omitempty"`
	Out               string       `json:"out,omitempty"`
	Run               string       `json:"run,omitempty"`
	Checkpoint        string       `json:"checkpoint,omitempty"`
	ResumedSteps      int          `json:"resumed_steps,omitempty"`
	EpochLog          []trainEpoch `json:"epoch_log"`
}

// trainSettings are the resolved flags of a run: the dataset's preset
// (dpsgd.Preset) with the flags that override it, and the target (ε, δ).
type trainSettings struct {
	dataset    string
	eps, delta float64
	// features are the features the run trains on (applyFeatures).
	features featureInfo
	dpsgd.Setting
}

func runTrain(cmd *cobra.Command, _ []string) error {
	o := &trainOpts
	name := o.Data
	if err := checkTrainData(name); err != nil {
		return err
	}
	if err := checkFeatures(o.Features, name); err != nil {
		return err
	}
	if err := nonPrivateMisuse(cmd); err != nil {
		return err
	}
	ck, err := trainCheckpointFlags(cmd) // its refusals name the flags; checkPaths then checks the files
	if err != nil {
		return err
	}
	if err := checkPaths(cmd, []string{"out", "ledger", "checkpoint"}, []string{"file", "test-file"}); err != nil {
		return err
	}
	if err := checkTargetFlags(cmd, "epsilon"); err != nil {
		return err
	}
	if _, err := memoryLimit(cmd); err != nil {
		return err
	}
	seed, err := seedFlag(cmd)
	if err != nil {
		return err
	}
	src := o.Source
	src.Float32 = o.Features != featuresScatter // the transform reads the float64 images
	train, test, image, err := loadTrainData(src, name)
	if err != nil {
		return err
	}
	train, test, image, finfo, err := o.applyFeatures(train, test, image, true)
	if err != nil {
		return err
	}
	// The loader's float64 rows (and with --features scatter the images)
	// are garbage now. Collect them before training allocates: otherwise
	// the heap target set while they were live (twice the loaded data)
	// lets training's garbage pile up beside them, and the peak RSS stays
	// what it was when float64 and float32 rows were both held.
	debug.FreeOSMemory()
	s, err := trainFlags(cmd, name, train, image)
	if err != nil {
		return err
	}
	s.features = finfo
	if err := checkTrainSize(cmd, s, train.Len()); err != nil {
		return err
	}
	if o.NonPrivate {
		return runTrainNonPrivate(cmd, s, seed, train, test)
	}
	plan, err := s.Calibrate(s.eps, s.delta, train.Len())
	if err != nil {
		return err
	}
	led, err := trainLedger(cmd, s)
	if err != nil {
		return err
	}
	defer led.Close()
	r := rng.New(seed)
	net, tr, err := s.NewTrainer(r)
	if err != nil {
		return err
	}
	out := &trainOutput{Private: true, Dataset: name, Model: s.Model.String(), Params: net.NumParams(), Records: train.Len(),
		NoiseMultiplier: plan.NoiseMultiplier, SampleRate: plan.SampleRate, Steps: plan.Steps, Epochs: s.Epochs,
		Clip: s.Config.Clip, LR: s.Config.LR, Optimizer: s.Config.Optimizer, Epsilon: plan.Guarantee.Epsilon, Delta: s.delta,
		RDPOrder: plan.Guarantee.Order, LedgerGroup: "train:" + name, ClassNames: train.ClassNames, Seed: seed, featureInfo: s.features.recorded()}
	if !o.JSON {
		fmt.Fprintf(cmd.OutOrStdout(), "DP-SGD %s on %s (%d records, %d parameters): σ=%.6f, q=%.6g, %d steps, C=%v, target (ε=%v, δ=%v)\n",
			s.Model, s.dataset, train.Len(), net.NumParams(), plan.NoiseMultiplier, plan.SampleRate, plan.Steps, s.Config.Clip, s.eps, s.delta)
	}
	out.NoiseSigma = tr.NoiseSigma()
	run := func(after func(int) error) (dpsgd.RunResult, error) {
		return s.runIntervals(cmd, tr, led, r, plan, train, ck, out, after)
	}
	if err := trainRun(cmd, s, plan, run, net, train, test, out); err != nil {
		return err
	}
	out.LedgerEpsilon, _ = led.Spent(out.LedgerGroup)
	return finishTrain(cmd, net, train, test, out)
}

// defaultSettings is a dataset's preset (dpsgd.Preset, or
// dpsgd.ScatterPreset for --features scatter) at (eps, delta) for model
// (empty: the dataset's default model), sized for train.
func defaultSettings(name, features string, train *data.Dataset, image [3]int, eps, delta float64, model string) (trainSettings, error) {
	s := trainSettings{dataset: name, eps: eps, delta: delta}
	if err := (account.Budget{Epsilon: eps, Delta: delta}).Validate(); err != nil {
		return s, fmt.Errorf("--epsilon/--delta: %w", err)
	}
	preset := dpsgd.Preset
	if features == featuresScatter {
		preset = dpsgd.ScatterPreset
	}
	set, err := preset(name, model, eps)
	if err != nil { // --data and ε are checked: what is left to refuse is the model
		return s, fmt.Errorf("--model: %w", err)
	}
	if s.Setting, err = set.ForData(train.Dim(), len(train.ClassNames), image); err != nil {
		return s, fmt.Errorf("--model %w", err) // "--model cnn needs image data …"
	}
	return s, nil
}

// trainFlags resolves train's flags against the dataset's defaults: the
// flags it shares with pool run (presetOptions.settings), then its own
// epochs, batch, weight decay and schedule.
func trainFlags(cmd *cobra.Command, name string, train *data.Dataset, image [3]int) (trainSettings, error) {
	o := &trainOpts
	s, err := o.settings(cmd, o.Epsilon, name, train, image)
	if err != nil {
		return s, err
	}
	if cmd.Flags().Changed("epochs") {
		s.Epochs = o.Epochs
	}
	if o.Batch != 0 {
		s.Batch = o.Batch
	}
	s.Config.WeightDecay, s.Config.Schedule = o.WeightDecay, o.Schedule
	return s, nil
}

// settings resolves the flags o holds against the dataset's preset at
// target ε eps (δ is --delta: deltaFlag). pool run has no weight decay or
// schedule flag and keeps the preset's (none, constant).
func (o *presetOptions) settings(cmd *cobra.Command, eps float64, name string, train *data.Dataset, image [3]int) (trainSettings, error) {
	if err := checkPositiveFlags(cmd, "batch", "clip", "lr"); err != nil {
		return trainSettings{}, err
	}
	delta, err := deltaFlag(cmd, "delta", train.Len())
	if err != nil {
		return trainSettings{}, err
	}
	s, err := defaultSettings(name, o.Features, train, image, eps, delta, o.Model)
	if err != nil {
		return s, err
	}
	if s.Model.Arch == nn.MLP {
		if cmd.Flags().Changed("activation") {
			s.Model.Activation = o.Activation
		}
		s.Model.Dropout = o.Dropout
	}
	if err := s.Model.Validate(); err != nil {
		return s, fmt.Errorf("--model: %w", err)
	}
	c := &s.Config
	c.Clip = nonZeroOr(o.Clip, c.Clip)
	c.LR = nonZeroOr(o.LR, c.LR)
	if o.Optimizer != "" {
		c.Optimizer = o.Optimizer
	}
	c.Momentum = o.Momentum
	return s, nil
}

// nonZeroOr is v, or def when v is zero (the flag's "default per
// dataset").
func nonZeroOr(v, def float64) float64 {
	if v == 0 {
		return def
	}
	return v
}

// trainLedger opens the run's ledger (openLedger): the run charges
// every record its (ε, δ).
func trainLedger(cmd *cobra.Command, s trainSettings) (*ledger.Ledger, error) {
	return openLedger(cmd, runLedger{Charge: account.Budget{Epsilon: s.eps, Delta: s.delta}})
}

// trainRun runs the plan through run (which charges first when private),
// reporting after every epoch.
func trainRun(cmd *cobra.Command, s trainSettings, plan dpsgd.Plan, run func(after func(int) error) (dpsgd.RunResult, error),
	net *nn.Net, train, test *data.Dataset, out *trainOutput) error {
	trainAcc, asJSON := trainOpts.TrainAccuracy, trainOpts.JSON
	bar := progress.New(progressOut(cmd), plan.Steps, "DP-SGD steps")
	defer bar.Finish()
	start := time.Now()
	ends := epochEnds(plan.Steps, s.Epochs)
	after := func(done int) error {
		bar.Add(1)
		i, ok := slices.BinarySearch(ends, done)
		if !ok {
			return nil
		}
		ep, err := epochReport(net, s, plan, done, i+1, train, test, trainAcc)
		if err != nil {
			return err
		}
		ep.Seconds = time.Since(start).Seconds()
		out.EpochLog = append(out.EpochLog, ep)
		if !asJSON {
			printEpoch(cmd.OutOrStdout(), ep)
		}
		return nil
	}
	res, err := run(after)
	if err != nil {
		return err
	}
	out.ExpectedBatch = res.ExpectedBatch
	out.Seconds = res.Seconds
	if n := res.Steps - res.Resumed; n > 0 {
		out.ExamplesPerSecond = float64(n) * res.ExpectedBatch / res.Seconds
	}
	return nil
}

// epochReport is the state after done steps: the ε of those steps and the
// test accuracy (the test set is not the private data). A plan without
// noise (the non-private reference) has no ε.
func epochReport(net *nn.Net, s trainSettings, plan dpsgd.Plan, done, epoch int, train, test *data.Dataset, trainAcc bool) (trainEpoch, error) {
	ep := trainEpoch{Epoch: epoch, Steps: done}
	if plan.NoiseMultiplier > 0 {
		res, err := account.Epsilon([]account.Phase{{SampleRate: plan.SampleRate, NoiseMultiplier: plan.NoiseMultiplier, Steps: done}}, s.delta, account.Options{})
		if err != nil {
			return trainEpoch{}, err
		}
		ep.Epsilon = res.Epsilon
	}
	acc, err := accuracy(net, test)
	if err != nil {
		return trainEpoch{}, err
	}
	ep.TestAccuracy = acc
	if trainAcc {
		a, err := accuracy(net, train)
		if err != nil {
			return trainEpoch{}, err
		}
		ep.TrainAccuracy = &a
	}
	return ep, nil
}

// accuracy is net's accuracy on d's rows, in float32 (data.Dataset.X32)
// or float64.
func accuracy(net *nn.Net, d *data.Dataset) (float64, error) {
	if d.X == nil {
		return net.Accuracy32(d.X32, d.Class)
	}
	return net.Accuracy(d.X, d.Class)
}

// classify is net's class for each of d's rows, in float32
// (data.Dataset.X32) or float64.
func classify(net *nn.Net, d *data.Dataset) ([]int, error) {
	if d.X == nil {
		return net.Classify32(d.X32)
	}
	return net.Classify(d.X)
}

// trainData is d as the trainer reads it: its rows (float64 or float32)
// and classes.
func trainData(d *data.Dataset) dpsgd.Data {
	return dpsgd.Data{X: d.X, X32: d.X32, Labels: d.Class}
}

// epochEnds lists the last step of each epoch, increasing: epoch k of
// ⌈epochs⌉ ends at step round(k·steps/epochs), the last at steps (the
// epoch before the last ends there too when the last is under half a
// step: its end is listed once, and that epoch is the last reported). It
// holds one int per epoch, which checkTrainSize counts against
// --max-memory (a map of every epoch's end grew to gigabytes for --epochs
// 1e12).
func epochEnds(steps int, epochs float64) []int {
	k := int(math.Ceil(epochs))
	ends := make([]int, 0, k)
	for e := 1; e < k; e++ {
		ends = append(ends, int(math.Round(float64(e)*float64(steps)/epochs)))
	}
	if len(ends) == 0 || ends[len(ends)-1] < steps {
		ends = append(ends, steps)
	}
	return ends
}

// finishTrain fills the final accuracy, saves the model and prints out.
func finishTrain(cmd *cobra.Command, net *nn.Net, train, test *data.Dataset, out *trainOutput) error {
	pred, err := classify(net, test)
	if err != nil {
		return err
	}
	out.TestAccuracy, out.TestRecall, _ = pool.Scores(pred, test.Class, len(train.ClassNames))
	if err := saveTrained(cmd, net, train, out); err != nil {
		return err
	}
	if trainOpts.JSON {
		return printJSON(cmd.OutOrStdout(), out)
	}
	printTrain(cmd.OutOrStdout(), out)
	return nil
}

// saveTrained writes the model to --out, if set, with its privacy record.
func saveTrained(cmd *cobra.Command, net *nn.Net, train *data.Dataset, out *trainOutput) error {
	path := trainOpts.Out
	if path == "" {
		return nil
	}
	record, err := json.Marshal(struct {
		Private         bool    `json:"private"`
		NotDP           string  `json:"not_dp,omitempty"`
		Dataset         string  `json:"dataset"`
		NoiseMultiplier float64 `json:"noise_multiplier"`
		SampleRate      float64 `json:"sample_rate"`
		Steps           int     `json:"steps"`
		Clip            float64 `json:"clip"`
		Epsilon         float64 `json:"epsilon"`
		Delta           float64 `json:"delta"`
		Seed            *uint64 `json:"seed,omitempty"`
		featureInfo
	}{out.Private, out.NotDP, out.Dataset, out.NoiseMultiplier, out.SampleRate, out.Steps, out.Clip, out.Epsilon, out.Delta, out.Seed, out.featureInfo})
	if err != nil {
		return err
	}
	if err := writeModel(path, net, nn.Meta{ClassNames: train.ClassNames, Privacy: record}); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	out.Out = path
	return nil
}

// writeModel saves net to path atomically with outfile.WriteFile (mode
// 0600, as the temporary file it used to rename).
func writeModel(path string, net *nn.Net, meta nn.Meta) error {
	return outfile.WriteFile(path, 0o600, func(w io.Writer) error { return net.Save(w, meta) })
}

func printEpoch(w io.Writer, ep trainEpoch) {
	eps := fmt.Sprintf("ε=%.4f", ep.Epsilon)
	if ep.Epsilon == 0 {
		eps = "NOT DP"
	}
	fmt.Fprintf(w, "epoch %3d  step %6d  %s  test accuracy %.4f", ep.Epoch, ep.Steps, eps, ep.TestAccuracy)
	if ep.TrainAccuracy != nil {
		fmt.Fprintf(w, "  train accuracy %.4f (not private)", *ep.TrainAccuracy)
	}
	fmt.Fprintf(w, "  %.0fs\n", ep.Seconds)
}

func printTrain(w io.Writer, o *trainOutput) {
	if !o.Private {
		fmt.Fprintf(w, "done: test accuracy %.4f, %s, %.0f examples/s\n", o.TestAccuracy, o.NotDP, o.ExamplesPerSecond)
	} else {
		fmt.Fprintf(w, "done: test accuracy %.4f, (ε=%.4f, δ=%v) charged to ledger group %q (ε %.4f), %.0f examples/s\n",
			o.TestAccuracy, o.Epsilon, o.Delta, o.LedgerGroup, o.LedgerEpsilon, o.ExamplesPerSecond)
	}
	for c, r := range o.TestRecall {
		fmt.Fprintf(w, "  recall %-8s %.4f\n", o.ClassNames[c], r)
	}
	if o.Out != "" {
		fmt.Fprintf(w, "model written to %s\n", o.Out)
	}
}

// checkTrainData refuses a dataset without a DP-SGD preset.
func checkTrainData(name string) error {
	if slices.Contains(dpsgd.PresetDatasets(), name) {
		return nil
	}
	ds := dpsgd.PresetDatasets()
	return fmt.Errorf("--data %q: want %s or %s", name, strings.Join(ds[:len(ds)-1], ", "), ds[len(ds)-1])
}

// dataSourceFlags declares where loadTrainData reads a dataset from,
// bound to src; file and testFile describe --file and --test-file.
func dataSourceFlags(f *pflag.FlagSet, src *data.Source, file, testFile string) {
	f.StringVar(&src.Dir, "data-dir", data.DefaultDir, "data root holding mnist/, fashion_mnist/, kddcup99/")
	f.StringVar(&src.File, "file", "", "csv/libsvm: "+file)
	f.StringVar(&src.TestFile, "test-file", "", "csv/libsvm: "+testFile)
}

// loadTrainData loads a dataset's training and test parts from src with
// class labels, and the image shape for the CNN (data.LoadLabelled).
func loadTrainData(src data.Source, name string) (train, test *data.Dataset, image [3]int, err error) {
	train, test, image, err = data.LoadLabelled(name, src)
	return train, test, image, dataFlagError(err)
}

// dataFlagError names the flag a csv or libsvm dataset lacks.
func dataFlagError(err error) error {
	if nf, ok := errors.AsType[*data.NoFileError](err); ok {
		return fmt.Errorf("--data %s needs --file", nf.Dataset)
	}
	return err
}

// optimizerFlags declares the DP-SGD optimiser flags of o, which settings
// reads over the dataset's preset (train, pool run).
func optimizerFlags(f *pflag.FlagSet, o *presetOptions) {
	f.Float64Var(&o.Clip, "clip", 0, "per-example clipping norm C (default per dataset)")
	f.Float64Var(&o.LR, "lr", 0, "learning rate (default per dataset)")
	f.StringVar(&o.Optimizer, "optimizer", "", "sgd|momentum|adam|nadam (default per dataset)")
	f.Float64Var(&o.Momentum, "momentum", 0.9, "momentum coefficient")
}
