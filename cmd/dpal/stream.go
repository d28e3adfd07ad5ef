package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dpal-dev/dpal/active/stream"
	"github.com/dpal-dev/dpal/data"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/outfile"
	"github.com/dpal-dev/dpal/session"
)

var streamCmd = &cobra.Command{
	Use:   "stream",
	Short: "Private stream-based active learning for anomaly detection (Ghassemi et al. 2016)",
	Long: `Runs the differentially private online active learner: each event is screened
by a private selector (Bernoulli or exponential), selected events are labelled
by an oracle, and the linear detector is updated by noisy mini-batch steps
(FLSW or FLMB). Every record spends eps_s, plus eps_g if it entered an update.

By default the update is dpal's detector: clipped per-example gradients with
exact discrete-Gaussian noise calibrated to (eps_g, delta), a batch size and a
model radius set from public quantities (eps_g, delta, d). --paper gives the
paper's §5 settings (gamma noise of eq. 8, window 5, step eta/t, unit ball),
which at eps_g = 1 learn no better than predicting "attack" for everything
(docs/repro-stream.md).

Dataset mode (default, --dataset demo|kdd99|mnist09|csv) simulates the oracle
with the training split's labels, then reports the test error, the labels
used, the ledger and the non-private batch SVM's error on the same test set
(cached under the user cache directory).

Event mode (--input FILE or -) reads events as CSV rows or JSON lines
({"x": [...]}), answers requests from --labels FILE (one label per event line)
or, without it, only emits the requests. It writes JSON lines to --out: first
a "meta" line (settings, and the seed if seeded), then "request" and "release"
lines, and a "rejected" line (line number and the class "invalid-input") for
each event that breaks the declared bounds; the details of a rejection are
private and go to the operator log on stderr only. The events' dimension is
--dim, or that of the first valid event; a run that accepts no event fails,
and one that rejects more than --max-rejected of its events (default 0.5,
from a file or stdin) fails after printing its summary.
A budget, label or state error stops the run with a non-zero exit (after a
last checkpoint, and after printing the summary and ledger). With --out -
the JSON lines own stdout: --json ends them with a "summary" line, and the
text summary goes to stderr.

--save-state and --resume split a run: the state records the configuration,
the seed, its ledger (unless --ledger) and the stream consumed (in dataset
mode the dataset and permutation; in event mode each input's length and
hashes). It is written atomically and sealed with an HMAC-SHA256 whose key
is DPAL_STATE_KEY, or the 0600 file DPAL_STATE_KEY_FILE (default: state.key
in the user config directory, created on first use); an edited state is
refused. A resume takes its settings from the state, so configuration flags
are refused; --seed must repeat the saved seed (or be omitted for fresh
secure randomness), and dataset mode refuses a different dataset or order.

In event mode with --save-state, lines wait until a checkpoint (every
--checkpoint-every event lines, and at the end) has saved the state that
accounts for them. After a crash, rerun the command with --resume: an input
the state has consumed (same first bytes) is skipped up to where the last
checkpoint stopped, and the --out file is completed, so no request or update
is issued twice; --replay instead feeds it again and charges its records
again. See docs/event-mode.md.

No output may be an input (--out, --save-state and --ledger against --input,
--labels, --answers, symlinks followed), and every output is probed before
the first event.

Without --seed the randomness is cryptographically secure; --seed is for
experiments and is recorded in every output it affects.`,
	Args: cobra.NoArgs,
	RunE: runStream,
}

func init() {
	o, f := &streamOpts, streamCmd.Flags()
	l := &o.learner
	f.StringVar(&o.Dataset, "dataset", "demo", "dataset: demo (bundled KDD sample), kdd99, mnist09 or csv")
	f.StringVar(&o.DataDir, "data-dir", data.DefaultDir, "data root holding kddcup99/ and mnist/")
	f.StringVar(&o.Train, "train", "", "csv dataset: training file (label in the last column)")
	f.StringVar(&o.Test, "test", "", "csv dataset: test file (label in the last column)")
	f.BoolVar(&o.Header, "header", false, "csv dataset: the files start with a header line")
	f.BoolVar(&o.ZeroIsNegative, "zero-is-negative", false, "csv dataset: read label 0 as -1 (0/1-labelled files); otherwise label 0 is an error")
	f.BoolVar(&o.KDDPaper, "kdd-paper-encoding", false, "demo/kdd99: one-hot binary features and test-file vocabularies (the paper's 120 dimensions)")
	f.IntVar(&o.Events, "events", 0, "dataset mode: stop after this many training events (0 = the whole split)")
	f.Uint64Var(&o.Shuffle, "shuffle", 0, "dataset mode: permute the training stream with this seed (default: --seed if given, else file order)")
	f.StringVar(&o.Input, "input", "", "event mode: read events from FILE (CSV or JSON lines; - for stdin)")
	f.IntVar(&o.Dim, "dim", 0, "event mode: the events' dimension (default: that of the first valid event)")
	f.StringVar(&o.Labels, "labels", "", "event mode: oracle labels, one per event line (CSV or JSON lines)")
	f.StringVar(&o.Out, "out", "-", "event mode: write label requests and releases as JSON lines here (an existing file needs --force, unless a resumed run completes it)")
	f.StringVar(&o.Answers, "answers", "", "late labels for pending requests of a resumed state: lines id,y or {\"id\": N, \"y\": 1}")
	f.BoolVar(&l.Paper, "paper", false, "the paper's §5 settings (gamma update, window 5, eta/t, unit ball); without it, dpal's detector (gaussian update, see docs/repro-stream.md)")
	f.StringVar(&l.Update, "update", "gaussian", "noisy update: gaussian (clipped gradients, Gaussian noise, (eps_g, delta)), tree (DP-FTRL on the tree mechanism; needs --label-budget, no --save-state) or gamma (the paper's eq. 8; default with --paper)")
	f.Float64Var(&l.Delta, "delta", 0, "gaussian and tree updates: delta of the (eps_g, delta) guarantee and of the ledger (default min(1e-5, 1/(10n)), n the dataset-mode events streamed; 1e-5 in event mode)")
	f.Float64Var(&l.Clip, "clip", 1, "gaussian update: per-example gradient clipping norm C")
	f.StringVar(&l.Selector, "selector", "bernoulli", "selection: bernoulli or exponential")
	f.StringVar(&l.Policy, "policy", "flmb", "update policy: flsw or flmb")
	f.IntVar(&l.Window, "window", 0, "N for flsw, L for flmb (default: the gaussian update's batch rule, 200 at d = 116 and eps_g = 1; 5 with --paper)")
	f.Float64Var(&l.EpsSelect, "epsilon-select", 1, "privacy of one selection decision (eps_s, at most 50)")
	f.Float64Var(&l.EpsGrad, "epsilon-grad", 1, "privacy of one mini-batch update (eps_g, at most 50)")
	deprecate(f, "eps-select", "epsilon-select")
	deprecate(f, "eps-grad", "epsilon-grad")
	f.IntVar(&l.LabelBudget, "label-budget", 0, "stop requesting labels after this many (0 = unlimited)")
	f.Float64Var(&l.FinalShare, "final-share", 0, "dataset mode, gaussian update with --label-budget: share of eps_g's zCDP budget for one final model by output perturbation (an SVM on every label, reported as the test error; docs/repro-stream.md)")
	f.Float64Var(&l.B, "b", 0.2, "exponential selector: slab half-width b of eq. 7")
	f.StringVar(&l.Calibration, "calibration", "paper", "exponential selector: paper (charge the true eps_s), scale or slab (true eps_s = epsilon-select)")
	f.Float64Var(&l.Tau, "tau", math.Exp(-0.2), "Bernoulli slab threshold on c = exp(-d)")
	f.BoolVar(&l.ShrinkingSlab, "shrinking-slab", false, "use tau = exp(-1/t), t the update counter")
	f.Float64Var(&l.Eta, "eta", 1, "step size scale: eta·R/(G·sqrt(t)) for gaussian, eta/t for gamma")
	f.Float64Var(&l.Lambda, "lambda", 0, "regulariser lambda (default M^2/d for the gaussian update, 0.01 with --paper)")
	f.StringVar(&l.Loss, "loss", "hinge", "loss: hinge or logistic")
	f.Float64Var(&l.Radius, "radius", 0, "projection radius of the model (default 1/sqrt(lambda) for the gaussian update, sqrt(d)/M unless --lambda is set; 1 with --paper)")
	f.Float64Var(&l.M, "m", 1, "norm bound M of the events")
	f.StringVar(&l.NormMode, "norm-mode", "clip", "events with norm > M: clip or reject")
	f.BoolVar(&l.NonPrivate, "non-private", false, "deterministic Tong-Koller baseline without noise (NOT private)")
	f.BoolVar(&o.NoBaseline, "no-baseline", false, "dataset mode: skip the non-private batch SVM")
	forceFlag(f)
	f.StringVar(&o.SaveState, "save-state", "", "write the learner's state here, atomically and authenticated (contains private data); event mode checkpoints it every --checkpoint-every events, before their lines leave")
	f.Float64("max-rejected", 0.5, "event mode: fail (after the summary) when more than this fraction of the events is rejected, from a file or stdin")
	f.IntVar(&o.CheckpointEvery, "checkpoint-every", 256, "event mode with --save-state: event lines between checkpoints (each line waits for one before it is written)")
	f.BoolVar(&o.Replay, "replay", false, "event mode with --resume: feed an input the state has already consumed again from its start, charging its records again (default: skip the consumed events)")
	f.StringVar(&o.Resume, "resume", "", "resume from a state written by --save-state (its settings apply: no configuration flags)")
	f.Uint64("seed", 0, "seed for reproducible experiments (default: secure randomness)")
	f.BoolVar(&o.JSON, "json", false, "print one JSON summary object")
	f.Bool("no-progress", false, "never draw a progress bar")
	maxMemoryFlag(f)
	f.String("ledger", "", "durable ledger: a FILE or postgres://…?ledger=NAME (docs/postgres.md) (see 'dpal ledger show'): charges are committed to it before each release; later runs continue it and stop when its budget is spent (default: in memory, saved with --save-state)")
	budgetFlags(f)
	deprecate(f, "budget", "budget-epsilon")
	rootCmd.AddCommand(streamCmd)
}

// streamOptions are dpal stream's flags, bound in its init. The flags
// that shared helpers read by name (--seed, --max-rejected, --ledger and
// the budget flags, --force, --no-progress, --max-memory) are declared
// unbound.
type streamOptions struct {
	// Dataset mode: the dataset, where it is, how it is read and
	// streamed.
	Dataset, DataDir, Train, Test    string
	Header, ZeroIsNegative, KDDPaper bool
	Events                           int
	Shuffle                          uint64
	NoBaseline                       bool
	// Event mode: the events, labels and output lines.
	Input                string
	Dim                  int
	Labels, Out, Answers string
	CheckpointEvery      int
	Replay               bool
	// learner is the learner's configuration (streamConfigFlags).
	learner streamLearnerOptions
	// SaveState and Resume are the state files.
	SaveState, Resume string
	JSON              bool
}

// streamLearnerOptions are the flags of the learner's configuration,
// which streamConfig applies, each when given, over the preset the
// dimension and --paper choose (so they are not bound into a
// stream.Config: their defaults are the preset's, not the flags').
type streamLearnerOptions struct {
	Paper                                                 bool
	Update, Selector, Policy, Calibration, NormMode, Loss string
	Delta, Clip, EpsSelect, EpsGrad, FinalShare           float64
	B, Tau, Eta, Lambda, Radius, M                        float64
	Window, LabelBudget                                   int
	ShrinkingSlab, NonPrivate                             bool
}

var streamOpts streamOptions

func runStream(cmd *cobra.Command, _ []string) error {
	seed, err := seedFlag(cmd)
	if err != nil {
		return err
	}
	if in := streamOpts.Input; in != "" {
		return runStreamEvents(cmd, in, seed)
	}
	return runStreamDataset(cmd, seed)
}

// streamConfig builds the learner's configuration: dpal's detector
// (stream.DetectorConfig), or the paper's §5 settings with --paper, then
// every flag the user set. The Gaussian and tree updates' window follows the noise
// rule (Config.NoiseWindow) unless --window is set, and its radius 1/√λ
// unless --radius is.
func streamConfig(cmd *cobra.Command, dim, records int) (stream.Config, error) {
	f, o := cmd.Flags(), &streamOpts.learner
	cfg := stream.DetectorConfig(dim)
	if o.Paper {
		cfg = stream.DefaultConfig(dim)
	}
	if err := checkTargetFlags(cmd, "epsilon-select", "epsilon-grad"); err != nil {
		return cfg, err
	}
	enums := []struct {
		flag, value string
		parse       func(string) error
	}{
		{"update", o.Update, func(s string) (err error) { cfg.Update, err = stream.ParseUpdate(s); return }},
		{"selector", o.Selector, func(s string) (err error) { cfg.Selector, err = stream.ParseSelector(s); return }},
		{"policy", o.Policy, func(s string) (err error) { cfg.Policy, err = stream.ParsePolicy(s); return }},
		{"calibration", o.Calibration, func(s string) (err error) { cfg.Calibration, err = stream.ParseCalibration(s); return }},
		{"norm-mode", o.NormMode, func(s string) (err error) { cfg.NormMode, err = stream.ParseNormMode(s); return }},
	}
	for _, e := range enums {
		if !f.Changed(e.flag) {
			continue
		}
		if err := e.parse(e.value); err != nil {
			return cfg, fmt.Errorf("--%s: %w", e.flag, err)
		}
	}
	// The gaussian and tree updates clip gradients and add Gaussian noise;
	// with --paper their clip starts at zero. Their δ is --delta, or the
	// default for the records the stream covers (records; 0 in event
	// mode, where their number is unknown: 1e-5).
	gaussian := cfg.GaussianNoise()
	if gaussian && cfg.Clip == 0 {
		cfg.Clip = 1
	}
	if gaussian {
		var err error
		if cfg.Delta, err = deltaFlag(cmd, "delta", records); err != nil {
			return cfg, err
		}
	} else {
		given(f, "delta", &cfg.Delta, o.Delta)
	}
	given(f, "window", &cfg.Window, o.Window)
	cfg.LabelBudget, cfg.FinalShare, cfg.ShrinkingSlab, cfg.NonPrivate = o.LabelBudget, o.FinalShare, o.ShrinkingSlab, o.NonPrivate
	for _, p := range []struct {
		flag string
		dst  *float64
		v    float64
	}{{"epsilon-select", &cfg.EpsSelect, o.EpsSelect}, {"epsilon-grad", &cfg.EpsGrad, o.EpsGrad}, {"b", &cfg.B, o.B},
		{"tau", &cfg.Tau, o.Tau}, {"eta", &cfg.Eta, o.Eta}, {"lambda", &cfg.Lambda, o.Lambda}, {"m", &cfg.M, o.M}, {"clip", &cfg.Clip, o.Clip}} {
		given(f, p.flag, p.dst, p.v)
	}
	given(f, "loss", &cfg.Loss, o.Loss)
	if gaussian && !f.Changed("radius") && cfg.Lambda > 0 {
		cfg.Radius = 1 / math.Sqrt(cfg.Lambda)
	}
	given(f, "radius", &cfg.Radius, o.Radius)
	if gaussian && !f.Changed("window") {
		if w, err := cfg.NoiseWindow(); err == nil {
			cfg.Window = w
		}
	}
	return cfg, nil
}

// given sets *dst to v, the value of flag name of f, when the user gave
// the flag: the configuration keeps its preset's value otherwise.
func given[T any](f *pflag.FlagSet, name string, dst *T, v T) {
	if f.Changed(name) {
		*dst = v
	}
}

// streamConfigFlags are the flags streamConfig reads. A resumed learner
// takes its configuration from the state, so none of them may be set.
var streamConfigFlags = []string{
	"paper", "update", "delta", "clip",
	"selector", "policy", "window", "epsilon-select", "epsilon-grad", "label-budget", "final-share", "b", "calibration",
	"tau", "shrinking-slab", "eta", "lambda", "loss", "radius", "m", "norm-mode", "non-private",
}

// streamLedger opens the learner's ledger (openLedger): its charge is the
// config's own per-record budget (cfg.Budget); without --ledger the
// learner keeps its own ledger holding exactly that.
func streamLedger(cmd *cobra.Command, cfg stream.Config) (*ledger.Ledger, error) {
	rl := runLedger{NonPrivate: cfg.NonPrivate, Own: true}
	if !cfg.NonPrivate {
		var err error
		if rl.Charge, err = cfg.Budget(); err != nil {
			return nil, err
		}
	}
	return openLedger(cmd, rl)
}

// stateKeyFor returns the key of state files when --save-state or
// --resume is given (session.StateKey), else nil.
func stateKeyFor(cmd *cobra.Command) ([]byte, error) {
	if streamOpts.SaveState == "" && streamOpts.Resume == "" {
		return nil, nil
	}
	return session.StateKey()
}

// checkDatasetPaths refuses an output that would clobber an input, and
// probes the outputs, before the dataset is streamed.
func checkDatasetPaths(cmd *cobra.Command) error {
	p := pathFlags(cmd, "save-state", "ledger", "train", "test", "resume")
	outs := []outfile.Path{p["save-state"], p["ledger"]}
	if err := outfile.CheckDistinct(outs, []outfile.Path{p["train"], p["test"]}); err != nil {
		return err
	}
	if err := outfile.CheckDistinct([]outfile.Path{p["ledger"]}, []outfile.Path{p["resume"]}); err != nil {
		return err
	}
	return probeOutputs(cmd, outs)
}

// loadStreamDataset returns the training and test splits of --dataset.
func loadStreamDataset() (train, test *data.Dataset, err error) {
	o := &streamOpts
	name, dir, paper := o.Dataset, o.DataDir, o.KDDPaper
	if paper && name != "demo" && name != "kdd99" {
		return nil, nil, fmt.Errorf("--kdd-paper-encoding applies to --dataset demo or kdd99, not %q", name)
	}
	kddOpt := data.KDDOptions{OneHotBinary: paper, VocabFromTest: paper}
	switch name {
	case "demo":
		return data.DemoOptions(kddOpt)
	case "kdd99":
		return data.LoadKDD(dir, kddOpt)
	case "mnist09":
		return data.LoadIDXPair(filepath.Join(dir, "mnist"), 0, 9, data.IDXPairBlock)
	case "csv":
		load := func(flag, path string) (*data.Dataset, error) {
			if path == "" {
				return nil, fmt.Errorf("--dataset csv needs --%s FILE", flag)
			}
			fh, err := os.Open(path)
			if err != nil {
				return nil, fmt.Errorf("--%s: %w", flag, err)
			}
			defer fh.Close()
			return data.LoadCSV(bufio.NewReader(fh), data.CSVOptions{Name: path, Header: o.Header, LabelColumn: -1, ZeroIsNegative: o.ZeroIsNegative})
		}
		if train, err = load("train", o.Train); err != nil {
			return nil, nil, err
		}
		if test, err = load("test", o.Test); err != nil {
			return nil, nil, err
		}
		if train.Dim() != test.Dim() {
			return nil, nil, fmt.Errorf("csv: train has %d features, test %d", train.Dim(), test.Dim())
		}
		return train, test, nil
	}
	return nil, nil, fmt.Errorf("--dataset: unknown dataset %q (want demo, kdd99, mnist09 or csv)", name)
}

func runStreamDataset(cmd *cobra.Command, seed *uint64) error {
	start := time.Now()
	o := &streamOpts
	if n := o.Events; n < 0 {
		return fmt.Errorf("--events must be >= 0 (0 = the whole split), got %d", n)
	}
	if _, err := maxRejected(cmd, false); err != nil {
		return err
	}
	if err := checkDatasetPaths(cmd); err != nil {
		return err
	}
	key, err := stateKeyFor(cmd)
	if err != nil {
		return err
	}
	train, test, err := loadStreamDataset()
	if err != nil {
		return err
	}
	run := session.DatasetRun{Train: train, Test: test, Shuffle: streamShuffle(cmd, seed),
		Progress: progressOut(cmd), Notice: cmd.ErrOrStderr(), Name: o.Dataset, Events: o.Events, Baseline: !o.NoBaseline}
	sum, err := streamSpec(cmd, seed, key).StreamDataset(run)
	if err != nil {
		return err
	}
	sum.Seconds = time.Since(start).Seconds()
	return printStreamSummary(cmd, &sum)
}

// streamSpec maps the flags to the run's session.Spec: the configuration
// of a new learner (streamConfig), its memory check and ledger
// (streamLedger), the seed, and the state files with their key.
func streamSpec(cmd *cobra.Command, seed *uint64, key []byte) *session.Spec {
	f := cmd.Flags()
	s := &session.Spec{
		Config: func(dim, records int) (stream.Config, error) { return streamConfig(cmd, dim, records) },
		Check:  func(cfg stream.Config) error { return checkStreamMemory(cmd, cfg) },
		Ledger: func(cfg stream.Config) (*ledger.Ledger, error) { return streamLedger(cmd, cfg) },
		Seed:   seed, Key: key,
		Resume: streamOpts.Resume, Answers: streamOpts.Answers, SaveState: streamOpts.SaveState,
	}
	for _, name := range streamConfigFlags {
		if f.Changed(name) {
			s.Overrides = append(s.Overrides, "--"+name)
		}
	}
	return s
}

// streamShuffle returns the seed of the training stream's permutation:
// --shuffle, else --seed, else nil (the file order).
func streamShuffle(cmd *cobra.Command, seed *uint64) *uint64 {
	if cmd.Flags().Changed("shuffle") {
		v := streamOpts.Shuffle
		return &v
	}
	if seed != nil {
		v := *seed
		return &v
	}
	return nil
}

func printStreamSummary(cmd *cobra.Command, sum *session.Summary) error {
	if streamOpts.JSON {
		return printJSON(cmd.OutOrStdout(), sum)
	}
	w := cmd.OutOrStdout()
	c := sum.Config
	fmt.Fprintf(w, "dpal stream: %s selection, %s update, %s (window %d), eps_s = %v, eps_g = %v\n",
		c.Selector, c.Update, c.Policy, c.Window, c.EpsSelect, c.EpsGrad)
	if sum.Dataset != "" {
		fmt.Fprintf(w, "  data         %s: %d training events streamed, %d test rows, %d features\n",
			sum.Dataset, sum.Observed, sum.TestSize, sum.Dim)
	}
	fmt.Fprintf(w, "  labels       %d requested of %d events observed (%d updates released)\n",
		sum.Requested, sum.Observed, sum.Updates)
	if sum.Rejected > 0 {
		fmt.Fprintf(w, "  rejected     %d events (details in the log on stderr)\n", sum.Rejected)
	}
	if sum.TestError != nil && sum.LastUpdateError != nil {
		fmt.Fprintf(w, "  test error   %.4f (final model by output perturbation; last update's model %.4f)\n", *sum.TestError, *sum.LastUpdateError)
	} else if sum.TestError != nil {
		fmt.Fprintf(w, "  test error   %.4f\n", *sum.TestError)
	}
	if sum.ConstantError != nil {
		fmt.Fprintf(w, "  constant     %.4f (predicting \"attack\" (+1) for every event)\n", *sum.ConstantError)
	}
	if sum.BaselineBatchError != nil {
		fmt.Fprintf(w, "  baseline     %.4f (non-private batch linear SVM on all training labels)\n", *sum.BaselineBatchError)
	}
	if sum.NonPrivate {
		fmt.Fprintln(w, "  privacy      NONE: non-private Tong-Koller baseline")
	} else {
		printStreamPrivacy(w, sum)
	}
	if sum.Skipped > 0 {
		fmt.Fprintf(w, "  resumed      skipped the %d event lines the state had already consumed\n", sum.Skipped)
	}
	if sum.Replays > 0 {
		fmt.Fprintf(w, "  replayed     consumed input fed again %d time(s) with --replay: its records were charged again\n", sum.Replays)
	}
	if sum.Seed != nil {
		fmt.Fprintf(w, "  seed         %d (experiment mode)\n", *sum.Seed)
	}
	return nil
}

// printStreamPrivacy prints the per-record ε, how it splits, and the
// ledger: each group's ε against the budget and what is left.
func printStreamPrivacy(w io.Writer, sum *session.Summary) {
	c := sum.Config
	at := ""
	if d := c.LedgerDelta(); d > 0 {
		at = fmt.Sprintf(" at delta %g", d)
	}
	fmt.Fprintf(w, "  privacy      every record eps <= %.4f%s (selection eps_s %.4f", *sum.EpsilonPerRecord, at, *sum.EpsSelectTrue)
	if c.Selector == stream.Exponential && *sum.EpsSelectTrue > c.EpsSelect*(1+1e-9) {
		fmt.Fprintf(w, " > target %v: Lemma 2's condition fails, see --calibration", c.EpsSelect)
	}
	fmt.Fprintf(w, ", update eps_g %v if labelled)\n", c.EpsGrad)
	if sum.Ledger == nil {
		return
	}
	fmt.Fprintf(w, "  ledger       budget eps %.4f per record (delta %g)\n", sum.Ledger.Meta.Budget.Epsilon, sum.Ledger.Meta.Budget.Delta)
	for _, g := range sum.Ledger.Groups {
		fmt.Fprintf(w, "    %-18s eps = %.4f spent, %.4f left\n", g.Group, g.Epsilon, g.Remaining)
	}
}

func runStreamEvents(cmd *cobra.Command, input string, seed *uint64) error {
	start := time.Now()
	f, o := cmd.Flags(), &streamOpts
	if f.Changed("final-share") {
		return errors.New("--final-share: the final model is released in dataset mode only")
	}
	maxRej, err := maxRejected(cmd, true)
	if err != nil {
		return err
	}
	run := session.EventRun{Input: input, Stdin: cmd.InOrStdin(), Stdout: cmd.OutOrStdout(), Force: forced(cmd),
		WindowSet: f.Changed("window"), Progress: progressOut(cmd),
		Log: slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn})),
		Dim: o.Dim, Labels: o.Labels, Out: o.Out, Every: o.CheckpointEvery, Replay: o.Replay}
	if run.Dim < 0 {
		return fmt.Errorf("--dim must be >= 1 (or 0: that of the first valid event), got %d", run.Dim)
	}
	// Everything is checked before the first line is written: the flags,
	// the paths, the state and the input's position.
	if err := checkEventPaths(cmd, input); err != nil {
		return err
	}
	switch {
	case run.Every < 1:
		return fmt.Errorf("--checkpoint-every must be >= 1, got %d", run.Every)
	case run.Replay && o.Resume == "":
		return errors.New("--replay feeds a resumed state an input it has consumed: use it with --resume")
	}
	key, err := stateKeyFor(cmd)
	if err != nil {
		return err
	}
	res, err := streamSpec(cmd, seed, key).StreamEvents(run)
	if res == nil {
		return err
	}
	// A failed run still says what it spent before the error; a finished
	// one that rejected too many events fails after its summary.
	if err == nil {
		err = checkRejected(res.Summary.Rejected, res.Accepted, maxRej)
	}
	res.Summary.Seconds = time.Since(start).Seconds()
	return errors.Join(err, printEventSummary(cmd, &res.Summary, run.Out))
}

// printEventSummary prints an event run's summary. With --out - the JSON
// lines own stdout: --json then ends them with a "summary" line there,
// and the text summary goes to stderr.
func printEventSummary(cmd *cobra.Command, sum *session.Summary, out string) error {
	if out != "-" {
		return printStreamSummary(cmd, sum)
	}
	if streamOpts.JSON {
		return json.NewEncoder(cmd.OutOrStdout()).Encode(struct {
			Type string `json:"type"`
			*session.Summary
		}{"summary", sum})
	}
	cmd.SetOut(cmd.ErrOrStderr())
	return printStreamSummary(cmd, sum)
}

// checkEventPaths refuses an output that would clobber an input, and
// probes every output, before anything is read or written.
func checkEventPaths(cmd *cobra.Command, input string) error {
	p := pathFlags(cmd, "out", "save-state", "ledger", "labels", "answers", "resume")
	p["input"] = outfile.Path{Flag: "--input", Path: input}
	outs := []outfile.Path{p["out"], p["save-state"], p["ledger"]}
	if err := outfile.CheckDistinct(outs, []outfile.Path{p["input"], p["labels"], p["answers"]}); err != nil {
		return err
	}
	// --save-state may be --resume: it is replaced atomically.
	if err := outfile.CheckDistinct([]outfile.Path{p["out"], p["ledger"]}, []outfile.Path{p["resume"]}); err != nil {
		return err
	}
	return probeOutputs(cmd, outs)
}
