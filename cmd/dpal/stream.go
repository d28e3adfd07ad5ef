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
	"github.com/dpal-dev/dpal/dpsgd"
	"github.com/dpal-dev/dpal/model/nn"
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
	f := streamCmd.Flags()
	f.String("dataset", "demo", "dataset: demo (bundled KDD sample), kdd99, mnist09 or csv")
	f.String("data-dir", data.DefaultDir, "data root holding kddcup99/ and mnist/")
	f.String("train", "", "csv dataset: training file (label in the last column)")
	f.String("test", "", "csv dataset: test file (label in the last column)")
	f.Bool("header", false, "csv dataset: the files start with a header line")
	f.Bool("zero-is-negative", false, "csv dataset: read label 0 as -1 (0/1-labelled files); otherwise label 0 is an error")
	f.Bool("kdd-paper-encoding", false, "demo/kdd99: one-hot binary features and test-file vocabularies (the paper's 120 dimensions)")
	f.Int("events", 0, "dataset mode: stop after this many training events (0 = the whole split)")
	f.Uint64("shuffle", 0, "dataset mode: permute the training stream with this seed (default: --seed if given, else file order)")
	f.String("input", "", "event mode: read events from FILE (CSV or JSON lines; - for stdin)")
	f.Int("dim", 0, "event mode: the events' dimension (default: that of the first valid event)")
	f.String("labels", "", "event mode: oracle labels, one per event line (CSV or JSON lines)")
	f.String("out", "-", "event mode: write label requests and releases as JSON lines here (an existing file needs --force, unless a resumed run completes it)")
	f.String("answers", "", "late labels for pending requests of a resumed state: lines id,y or {\"id\": N, \"y\": 1}")
	f.Bool("paper", false, "the paper's §5 settings (gamma update, window 5, eta/t, unit ball); without it, dpal's detector (gaussian update, see docs/repro-stream.md)")
	f.String("update", "gaussian", "noisy update: gaussian (clipped gradients, Gaussian noise, (eps_g, delta)), tree (DP-FTRL on the tree mechanism; needs --label-budget, no --save-state) or gamma (the paper's eq. 8; default with --paper)")
	f.Float64("delta", 0, "gaussian and tree updates: delta of the (eps_g, delta) guarantee and of the ledger (default min(1e-5, 1/(10n)), n the dataset-mode events streamed; 1e-5 in event mode)")
	f.Float64("clip", 1, "gaussian update: per-example gradient clipping norm C")
	f.String("selector", "bernoulli", "selection: bernoulli or exponential")
	f.String("policy", "flmb", "update policy: flsw or flmb")
	f.Int("window", 0, "N for flsw, L for flmb (default: the gaussian update's batch rule, 200 at d = 116 and eps_g = 1; 5 with --paper)")
	f.Float64("epsilon-select", 1, "privacy of one selection decision (eps_s, at most 50)")
	f.Float64("epsilon-grad", 1, "privacy of one mini-batch update (eps_g, at most 50)")
	deprecate(f, "eps-select", "epsilon-select")
	deprecate(f, "eps-grad", "epsilon-grad")
	f.Int("label-budget", 0, "stop requesting labels after this many (0 = unlimited)")
	f.Float64("final-share", 0, "dataset mode, gaussian update with --label-budget: share of eps_g's zCDP budget for one final model by output perturbation (an SVM on every label, reported as the test error; docs/repro-stream.md)")
	f.Float64("b", 0.2, "exponential selector: slab half-width b of eq. 7")
	f.String("calibration", "paper", "exponential selector: paper (charge the true eps_s), scale or slab (true eps_s = epsilon-select)")
	f.Float64("tau", math.Exp(-0.2), "Bernoulli slab threshold on c = exp(-d)")
	f.Bool("shrinking-slab", false, "use tau = exp(-1/t), t the update counter")
	f.Float64("eta", 1, "step size scale: eta·R/(G·sqrt(t)) for gaussian, eta/t for gamma")
	f.Float64("lambda", 0, "regulariser lambda (default M^2/d for the gaussian update, 0.01 with --paper)")
	f.String("loss", "hinge", "loss: hinge or logistic")
	f.Float64("radius", 0, "projection radius of the model (default 1/sqrt(lambda) for the gaussian update, sqrt(d)/M unless --lambda is set; 1 with --paper)")
	f.Float64("m", 1, "norm bound M of the events")
	f.String("norm-mode", "clip", "events with norm > M: clip or reject")
	f.Bool("non-private", false, "deterministic Tong-Koller baseline without noise (NOT private)")
	f.Bool("no-baseline", false, "dataset mode: skip the non-private batch SVM")
	forceFlag(f)
	f.String("save-state", "", "write the learner's state here, atomically and authenticated (contains private data); event mode checkpoints it every --checkpoint-every events, before their lines leave")
	f.Float64("max-rejected", 0.5, "event mode: fail (after the summary) when more than this fraction of the events is rejected, from a file or stdin")
	f.Int("checkpoint-every", 256, "event mode with --save-state: event lines between checkpoints (each line waits for one before it is written)")
	f.Bool("replay", false, "event mode with --resume: feed an input the state has already consumed again from its start, charging its records again (default: skip the consumed events)")
	f.String("resume", "", "resume from a state written by --save-state (its settings apply: no configuration flags)")
	f.Uint64("seed", 0, "seed for reproducible experiments (default: secure randomness)")
	f.Bool("json", false, "print one JSON summary object")
	f.Bool("no-progress", false, "never draw a progress bar")
	maxMemoryFlag(f)
	f.String("ledger", "", "durable ledger file (see 'dpal ledger show'): charges are committed to it before each release; later runs continue it and stop when its budget is spent (default: in memory, saved with --save-state)")
	budgetFlags(f)
	deprecate(f, "budget", "budget-epsilon")
	rootCmd.AddCommand(streamCmd)
}

func runStream(cmd *cobra.Command, _ []string) error {
	seed, err := seedFlag(cmd)
	if err != nil {
		return err
	}
	if in, _ := cmd.Flags().GetString("input"); in != "" {
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
	f := cmd.Flags()
	cfg := stream.DetectorConfig(dim)
	if paper, _ := f.GetBool("paper"); paper {
		cfg = stream.DefaultConfig(dim)
	}
	if err := checkTargetFlags(cmd, "epsilon-select", "epsilon-grad"); err != nil {
		return cfg, err
	}
	str := func(name string) string { s, _ := f.GetString(name); return s }
	num := func(name string, v *float64) {
		if f.Changed(name) {
			*v, _ = f.GetFloat64(name)
		}
	}
	enums := []struct {
		flag  string
		parse func(string) error
	}{
		{"update", func(s string) (err error) { cfg.Update, err = stream.ParseUpdate(s); return }},
		{"selector", func(s string) (err error) { cfg.Selector, err = stream.ParseSelector(s); return }},
		{"policy", func(s string) (err error) { cfg.Policy, err = stream.ParsePolicy(s); return }},
		{"calibration", func(s string) (err error) { cfg.Calibration, err = stream.ParseCalibration(s); return }},
		{"norm-mode", func(s string) (err error) { cfg.NormMode, err = stream.ParseNormMode(s); return }},
	}
	for _, e := range enums {
		if !f.Changed(e.flag) {
			continue
		}
		if err := e.parse(str(e.flag)); err != nil {
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
		num("delta", &cfg.Delta)
	}
	if f.Changed("window") {
		cfg.Window, _ = f.GetInt("window")
	}
	cfg.LabelBudget, _ = f.GetInt("label-budget")
	cfg.FinalShare, _ = f.GetFloat64("final-share")
	cfg.ShrinkingSlab, _ = f.GetBool("shrinking-slab")
	cfg.NonPrivate, _ = f.GetBool("non-private")
	for name, v := range map[string]*float64{"epsilon-select": &cfg.EpsSelect, "epsilon-grad": &cfg.EpsGrad, "b": &cfg.B,
		"tau": &cfg.Tau, "eta": &cfg.Eta, "lambda": &cfg.Lambda, "m": &cfg.M, "clip": &cfg.Clip} {
		num(name, v)
	}
	if f.Changed("loss") {
		cfg.Loss = str("loss")
	}
	if gaussian && !f.Changed("radius") && cfg.Lambda > 0 {
		cfg.Radius = 1 / math.Sqrt(cfg.Lambda)
	}
	num("radius", &cfg.Radius)
	if gaussian && !f.Changed("window") {
		if w, err := cfg.NoiseWindow(); err == nil {
			cfg.Window = w
		}
	}
	return cfg, nil
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
	save, _ := cmd.Flags().GetString("save-state")
	resume, _ := cmd.Flags().GetString("resume")
	if save == "" && resume == "" {
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
func loadStreamDataset(cmd *cobra.Command) (train, test *data.Dataset, err error) {
	f := cmd.Flags()
	name, _ := f.GetString("dataset")
	dir, _ := f.GetString("data-dir")
	paper, _ := f.GetBool("kdd-paper-encoding")
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
		header, _ := f.GetBool("header")
		zeroNeg, _ := f.GetBool("zero-is-negative")
		load := func(flag string) (*data.Dataset, error) {
			path, _ := f.GetString(flag)
			if path == "" {
				return nil, fmt.Errorf("--dataset csv needs --%s FILE", flag)
			}
			fh, err := os.Open(path)
			if err != nil {
				return nil, fmt.Errorf("--%s: %w", flag, err)
			}
			defer fh.Close()
			return data.LoadCSV(bufio.NewReader(fh), data.CSVOptions{Name: path, Header: header, LabelColumn: -1, ZeroIsNegative: zeroNeg})
		}
		if train, err = load("train"); err != nil {
			return nil, nil, err
		}
		if test, err = load("test"); err != nil {
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
	f := cmd.Flags()
	if n, _ := f.GetInt("events"); n < 0 {
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
	train, test, err := loadStreamDataset(cmd)
	if err != nil {
		return err
	}
	run := session.DatasetRun{Train: train, Test: test, Shuffle: streamShuffle(cmd, seed),
		Progress: progressOut(cmd), Notice: cmd.ErrOrStderr()}
	run.Name, _ = f.GetString("dataset")
	run.Events, _ = f.GetInt("events")
	noBaseline, _ := f.GetBool("no-baseline")
	run.Baseline = !noBaseline
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
	}
	s.Resume, _ = f.GetString("resume")
	s.Answers, _ = f.GetString("answers")
	s.SaveState, _ = f.GetString("save-state")
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
		v, _ := cmd.Flags().GetUint64("shuffle")
		return &v
	}
	if seed != nil {
		v := *seed
		return &v
	}
	return nil
}

func printStreamSummary(cmd *cobra.Command, sum *session.Summary) error {
	if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
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
	f := cmd.Flags()
	if f.Changed("final-share") {
		return errors.New("--final-share: the final model is released in dataset mode only")
	}
	maxRej, err := maxRejected(cmd, true)
	if err != nil {
		return err
	}
	run := session.EventRun{Input: input, Stdin: cmd.InOrStdin(), Stdout: cmd.OutOrStdout(), Force: forced(cmd),
		WindowSet: f.Changed("window"), Progress: progressOut(cmd),
		Log: slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))}
	if run.Dim, _ = f.GetInt("dim"); run.Dim < 0 {
		return fmt.Errorf("--dim must be >= 1 (or 0: that of the first valid event), got %d", run.Dim)
	}
	// Everything is checked before the first line is written: the flags,
	// the paths, the state and the input's position.
	if err := checkEventPaths(cmd, input); err != nil {
		return err
	}
	run.Labels, _ = f.GetString("labels")
	run.Out, _ = f.GetString("out")
	run.Every, _ = f.GetInt("checkpoint-every")
	run.Replay, _ = f.GetBool("replay")
	resume, _ := f.GetString("resume")
	switch {
	case run.Every < 1:
		return fmt.Errorf("--checkpoint-every must be >= 1, got %d", run.Every)
	case run.Replay && resume == "":
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
	if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
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

// checkPaths refuses an output flag's file that is an input flag's file or
// another output's, and probes the outputs, before anything is read: a
// run fails at once, not after its work.
func checkPaths(cmd *cobra.Command, outputs, inputs []string) error {
	p := pathFlags(cmd, append(append([]string{}, outputs...), inputs...)...)
	outs, ins := make([]outfile.Path, len(outputs)), make([]outfile.Path, len(inputs))
	for i, n := range outputs {
		outs[i] = p[n]
	}
	for i, n := range inputs {
		ins[i] = p[n]
	}
	if err := outfile.CheckDistinct(outs, ins); err != nil {
		return err
	}
	return probeOutputs(cmd, outs)
}

// pathFlags reads the named string flags as outfile paths.
func pathFlags(cmd *cobra.Command, names ...string) map[string]outfile.Path {
	m := make(map[string]outfile.Path, len(names))
	for _, n := range names {
		v, _ := cmd.Flags().GetString(n)
		m[n] = outfile.Path{Flag: "--" + n, Path: v}
	}
	return m
}

// probeOutputs checks that each output of cmd can be written and may
// replace what is there (checkReplace); those written by
// outfile.WriteFile (--save-state, --posterior-out) need a directory
// that takes a temporary file.
func probeOutputs(cmd *cobra.Command, outs []outfile.Path) error {
	for _, o := range outs {
		if o.Flag == "--ledger" && ledger.IsURL(o.Path) {
			continue // a database, not a file
		}
		probe := outfile.Probe
		if o.Flag == "--save-state" || o.Flag == "--posterior-out" {
			probe = outfile.ProbeReplace
		}
		if err := probe(o.Path); err != nil {
			return fmt.Errorf("%s %s: %w", o.Flag, o.Path, err)
		}
		if err := checkReplace(cmd, o); err != nil {
			return err
		}
	}
	return nil
}

// outputKinds are the formats (outfile.Sniff's names) that outputs write,
// by command and flag; the others write plain text, CSV or JSON lines.
var outputKinds = map[string]string{"train --out": nn.FileFormat, "train --checkpoint": dpsgd.CheckpointFormat,
	"stream --save-state": session.StateFormat}

// checkReplace is outfile.CheckReplace for cmd's output o, the one place
// the runs decide whether an output may replace an existing file: with
// --force one of its own kind or a plain one, never a ledger, a store or
// a dpal file of another kind. The --ledger file is opened, not replaced.
// Stream's documented replacements need no --force: --save-state over
// the state it resumes, and --out that a resumed run completes
// (openOutput checks it once the state says which output it wrote); nor
// do train --resume's: the checkpoint it continues and the model it
// completes (of their own kinds only).
func checkReplace(cmd *cobra.Command, o outfile.Path) error {
	if o.Flag == "--ledger" {
		return nil
	}
	f := cmd.Flags()
	force := forced(cmd)
	if r := f.Lookup("resume"); r != nil && r.Value.Type() == "bool" {
		if resume, _ := f.GetBool("resume"); resume && (o.Flag == "--out" || o.Flag == "--checkpoint") {
			force = true
		}
	} else if r != nil {
		switch resume, _ := f.GetString("resume"); {
		case resume == "":
		case o.Flag == "--out":
			return nil
		case o.Flag == "--save-state" && outfile.Same(o.Path, resume):
			force = true
		}
	}
	return outfile.CheckReplace(o, outputKinds[cmd.Name()+" "+o.Flag], force)
}

// forced reports whether cmd was given --force.
func forced(cmd *cobra.Command) bool {
	if cmd.Flags().Lookup("force") == nil {
		return false
	}
	force, _ := cmd.Flags().GetBool("force")
	return force
}

// forceFlag declares --force for a command with outputs.
func forceFlag(f *pflag.FlagSet) {
	f.Bool("force", false, "replace existing output files (never a ledger, a store, or a state or model file of another kind)")
}
