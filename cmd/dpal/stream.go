package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dpal-dev/dpal/active/stream"
	"github.com/dpal-dev/dpal/data"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/model"
	"github.com/dpal-dev/dpal/progress"
)

var streamCmd = &cobra.Command{
	Use:   "stream",
	Short: "Private stream-based active learning for anomaly detection (Ghassemi et al. 2016)",
	Long: `Runs the differentially private online active learner: each event is screened
by a private selector (Bernoulli or exponential), selected events are labelled
by an oracle, and the linear detector is updated by noisy mini-batch steps
(FLSW or FLMB). Every record spends eps_s, plus eps_g if it entered an update.

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
private and go to the operator log on stderr only. A budget or state error
stops the run with a non-zero exit (after writing --save-state).

--save-state and --resume split a run: the state records the configuration,
the seed and, in dataset mode, the stream order (dataset and permutation).
A resume takes its settings from the state, so configuration flags are
refused; --seed must repeat the saved seed (or be omitted for fresh secure
randomness), and dataset mode refuses a different dataset or order, which
would replay records the ledger has already charged.

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
	f.String("labels", "", "event mode: oracle labels, one per event line (CSV or JSON lines)")
	f.String("out", "-", "event mode: write label requests and releases as JSON lines here")
	f.String("answers", "", "late labels for pending requests of a resumed state: lines id,y or {\"id\": N, \"y\": 1}")
	f.String("selector", "bernoulli", "selection: bernoulli or exponential")
	f.String("policy", "flmb", "update policy: flsw or flmb")
	f.Int("window", 5, "N for flsw, L for flmb")
	f.Float64("eps-select", 1, "privacy of one selection decision (eps_s)")
	f.Float64("eps-grad", 1, "privacy of one mini-batch update (eps_g)")
	f.Int("label-budget", 0, "stop requesting labels after this many (0 = unlimited)")
	f.Float64("b", 0.2, "exponential selector: slab half-width b of eq. 7")
	f.String("calibration", "paper", "exponential selector: paper (charge the true eps_s), scale or slab (true eps_s = eps-select)")
	f.Float64("tau", math.Exp(-0.2), "Bernoulli slab threshold on c = exp(-d)")
	f.Bool("shrinking-slab", false, "use tau = exp(-1/t), t the update counter")
	f.Float64("eta", 1, "step size eta of eta_t = eta/t")
	f.Float64("lambda", 0.01, "regulariser lambda")
	f.String("loss", "hinge", "loss: hinge or logistic")
	f.Float64("radius", 1, "projection radius of the model")
	f.Float64("m", 1, "norm bound M of the events")
	f.String("norm-mode", "clip", "events with norm > M: clip or reject")
	f.Bool("non-private", false, "deterministic Tong-Koller baseline without noise (NOT private)")
	f.Bool("no-baseline", false, "dataset mode: skip the non-private batch SVM")
	f.String("save-state", "", "write the learner's state here at the end (contains private data)")
	f.String("resume", "", "resume from a state written by --save-state (its settings apply: no configuration flags)")
	f.Uint64("seed", 0, "seed for reproducible experiments (default: secure randomness)")
	f.Bool("json", false, "print one JSON summary object")
	f.Bool("no-progress", false, "never draw a progress bar")
	rootCmd.AddCommand(streamCmd)
}

// streamSummary is the --json output. Scripts rely on test_error, labels,
// observed, releases, epsilon_per_record, baseline_batch_error and seed.
type streamSummary struct {
	Dataset            string         `json:"dataset,omitempty"`
	Dim                int            `json:"dim"`
	TrainSize          int            `json:"train_size,omitempty"`
	TestSize           int            `json:"test_size,omitempty"`
	Config             stream.Config  `json:"config"`
	Observed           int            `json:"observed"`
	Requested          int            `json:"requested"`
	Labels             int            `json:"labels"`
	Updates            int            `json:"updates"`
	Releases           int            `json:"releases"`
	Rejected           int            `json:"rejected"`
	TestError          *float64       `json:"test_error,omitempty"`
	BaselineBatchError *float64       `json:"baseline_batch_error,omitempty"`
	EpsSelectTrue      *float64       `json:"eps_select_true,omitempty"`
	EpsilonPerRecord   *float64       `json:"epsilon_per_record"`
	NonPrivate         bool           `json:"non_private,omitempty"`
	Ledger             *ledger.Report `json:"ledger,omitempty"`
	Seed               *uint64        `json:"seed,omitempty"`
	ShuffleSeed        *uint64        `json:"shuffle_seed,omitempty"`
	ResumedFrom        string         `json:"resumed_from,omitempty"`
	Seconds            float64        `json:"seconds"`
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

// streamConfig builds the learner's configuration from the flags.
func streamConfig(cmd *cobra.Command, dim int) (stream.Config, error) {
	f := cmd.Flags()
	cfg := stream.DefaultConfig(dim)
	var err error
	str := func(name string) string { s, _ := f.GetString(name); return s }
	num := func(name string) float64 { v, _ := f.GetFloat64(name); return v }
	if cfg.Selector, err = stream.ParseSelector(str("selector")); err != nil {
		return cfg, fmt.Errorf("--selector: %w", err)
	}
	if cfg.Policy, err = stream.ParsePolicy(str("policy")); err != nil {
		return cfg, fmt.Errorf("--policy: %w", err)
	}
	if cfg.Calibration, err = stream.ParseCalibration(str("calibration")); err != nil {
		return cfg, fmt.Errorf("--calibration: %w", err)
	}
	if cfg.NormMode, err = stream.ParseNormMode(str("norm-mode")); err != nil {
		return cfg, fmt.Errorf("--norm-mode: %w", err)
	}
	cfg.Window, _ = f.GetInt("window")
	cfg.LabelBudget, _ = f.GetInt("label-budget")
	cfg.ShrinkingSlab, _ = f.GetBool("shrinking-slab")
	cfg.NonPrivate, _ = f.GetBool("non-private")
	cfg.EpsSelect, cfg.EpsGrad, cfg.B, cfg.Tau = num("eps-select"), num("eps-grad"), num("b"), num("tau")
	cfg.Eta, cfg.Lambda, cfg.Radius, cfg.M = num("eta"), num("lambda"), num("radius"), num("m")
	cfg.Loss = str("loss")
	return cfg, nil
}

// streamConfigFlags are the flags streamConfig reads. A resumed learner
// takes its configuration from the state, so none of them may be set.
var streamConfigFlags = []string{
	"selector", "policy", "window", "eps-select", "eps-grad", "label-budget", "b", "calibration",
	"tau", "shrinking-slab", "eta", "lambda", "loss", "radius", "m", "norm-mode", "non-private",
}

// newStreamLearner creates the learner, or restores it with --resume
// (checking its dimension against dim unless dim is 0).
func newStreamLearner(cmd *cobra.Command, dim int, seed *uint64) (*stream.Learner, string, error) {
	resume, _ := cmd.Flags().GetString("resume")
	if resume != "" {
		l, err := resumeStreamLearner(cmd, resume, dim, seed)
		return l, resume, err
	}
	if path, _ := cmd.Flags().GetString("answers"); path != "" {
		return nil, "", errors.New("--answers labels the pending requests of a saved state: use it with --resume")
	}
	cfg, err := streamConfig(cmd, dim)
	if err != nil {
		return nil, "", err
	}
	l, err := stream.New(cfg, rng.New(seed), nil)
	return l, "", err
}

// resumeStreamLearner restores --resume and applies --answers.
func resumeStreamLearner(cmd *cobra.Command, path string, dim int, seed *uint64) (*stream.Learner, error) {
	var set []string
	for _, name := range streamConfigFlags {
		if cmd.Flags().Changed(name) {
			set = append(set, "--"+name)
		}
	}
	if len(set) > 0 {
		return nil, fmt.Errorf("--resume takes the configuration saved in %s; remove %s", path, strings.Join(set, ", "))
	}
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--resume: %w", err)
	}
	defer fh.Close()
	l, err := stream.Restore(bufio.NewReader(fh), rng.New(seed), nil)
	if errors.Is(err, stream.ErrSeedMismatch) {
		return nil, fmt.Errorf("--resume %s: %w (pass the saved --seed, or omit --seed for fresh secure randomness)", path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("--resume %s: %w", path, err)
	}
	if dim > 0 && l.Config().Dim != dim {
		return nil, fmt.Errorf("--resume %s: state has dimension %d, the events %d", path, l.Config().Dim, dim)
	}
	if err := applyAnswers(cmd, l); err != nil {
		return nil, err
	}
	return l, nil
}

// streamInfo describes the stream a learner consumed; it is saved with
// the state (stream.Learner.SetStreamInfo) so that a resume can check it
// continues the same stream. In dataset mode the order is the dataset
// (identified by a fingerprint) and its permutation; --events only cuts
// the order short, so a resume may change it.
type streamInfo struct {
	Mode        string  `json:"mode"` // "dataset" or "events"
	Dataset     string  `json:"dataset,omitempty"`
	Rows        int     `json:"rows,omitempty"`
	Fingerprint string  `json:"fingerprint,omitempty"`
	Permutation *uint64 `json:"permutation,omitempty"` // absent: file order
	Events      int     `json:"events,omitempty"`      // --events of the run that saved (0 = all)
}

// savedStreamInfo decodes a restored learner's stream info (nil if none).
func savedStreamInfo(l *stream.Learner) (*streamInfo, error) {
	raw := l.StreamInfo()
	if raw == nil {
		return nil, nil
	}
	var info streamInfo
	if err := json.Unmarshal(raw, &info); err != nil {
		return nil, fmt.Errorf("stream info: %w", err)
	}
	return &info, nil
}

// setStreamInfo records info in l for --save-state.
func setStreamInfo(l *stream.Learner, info streamInfo) error {
	b, err := json.Marshal(info)
	if err != nil {
		return err
	}
	return l.SetStreamInfo(b)
}

// describeOrder names a stream order for error messages.
func describeOrder(perm *uint64) string {
	if perm == nil {
		return "file order"
	}
	return fmt.Sprintf("the permutation of seed %d", *perm)
}

// checkResumedOrder refuses a dataset-mode resume whose stream is not the
// saved one: skipping the first Observed events of another order would
// feed records twice while the ledger charges each group once.
func checkResumedOrder(l *stream.Learner, path string, now streamInfo) error {
	was, err := savedStreamInfo(l)
	if err != nil {
		return fmt.Errorf("--resume %s: %w", path, err)
	}
	switch {
	case was == nil:
		return fmt.Errorf("--resume %s: the state does not record its stream order, so dataset mode cannot tell which events it has seen", path)
	case was.Mode != now.Mode:
		return fmt.Errorf("--resume %s: the state was written in %s mode; resume it in the same mode", path, was.Mode)
	case was.Fingerprint != now.Fingerprint || was.Rows != now.Rows:
		return fmt.Errorf("--resume %s: the state streamed %s (%d rows, fingerprint %s), not %s (%d rows, fingerprint %s): pass the same --dataset, --data-dir and --kdd-paper-encoding",
			path, was.Dataset, was.Rows, was.Fingerprint, now.Dataset, now.Rows, now.Fingerprint)
	case (was.Permutation == nil) != (now.Permutation == nil) ||
		was.Permutation != nil && *was.Permutation != *now.Permutation:
		return fmt.Errorf("--resume %s: the state streamed the training split in %s, this run would use %s: pass the same --shuffle (or --seed)",
			path, describeOrder(was.Permutation), describeOrder(now.Permutation))
	}
	return nil
}

// applyAnswers gives a resumed learner the late labels of --answers, for
// requests it saved as pending (the oracle answered between the runs).
func applyAnswers(cmd *cobra.Command, l *stream.Learner) error {
	path, _ := cmd.Flags().GetString("answers")
	if path == "" {
		return nil
	}
	fh, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("--answers: %w", err)
	}
	defer fh.Close()
	lr := stream.NewLineReader(bufio.NewReader(fh))
	for {
		line, n, err := lr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("--answers: %w", err)
		}
		id, y, err := stream.ParseAnswer(line)
		if err == nil {
			err = l.Label(id, y)
		}
		if err != nil {
			return fmt.Errorf("--answers %s line %d: %w", path, n, err)
		}
	}
}

// saveStreamState writes --save-state, if asked for.
func saveStreamState(cmd *cobra.Command, l *stream.Learner) error {
	path, _ := cmd.Flags().GetString("save-state")
	if path == "" {
		return nil
	}
	fh, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("--save-state: %w", err)
	}
	if err := l.SaveState(fh); err != nil {
		fh.Close()
		return err
	}
	return fh.Close()
}

// stopStream ends a run that failed with err after the learner l accepted
// events: it still writes --save-state, so nothing accepted is lost.
func stopStream(cmd *cobra.Command, l *stream.Learner, err error) error {
	if saveErr := saveStreamState(cmd, l); saveErr != nil {
		return errors.Join(err, saveErr)
	}
	return err
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
		return data.LoadIDXPair(filepath.Join(dir, "mnist"), 0, 9, 50)
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
	train, test, err := loadStreamDataset(cmd)
	if err != nil {
		return err
	}
	if train.Len() == 0 || test.Len() == 0 {
		return errors.New("dataset has an empty training or test split")
	}
	l, resumed, err := newStreamLearner(cmd, train.Dim(), seed)
	if err != nil {
		return err
	}
	order, shuffle := streamOrder(cmd, train.Len(), seed)
	name, _ := f.GetString("dataset")
	info := streamInfo{Mode: "dataset", Dataset: train.Name, Rows: train.Len(),
		Fingerprint: datasetFingerprint(name, train), Permutation: shuffle}
	info.Events, _ = f.GetInt("events")
	if resumed != "" {
		if err := checkResumedOrder(l, resumed, info); err != nil {
			return err
		}
	}
	if err := setStreamInfo(l, info); err != nil {
		return err
	}
	if n := info.Events; n > 0 && n < len(order) {
		order = order[:n]
	}
	if err := streamDataset(cmd, l, train, order); err != nil {
		return stopStream(cmd, l, err)
	}
	if err := saveStreamState(cmd, l); err != nil {
		return err
	}
	sum := summarise(l, train.Dim(), resumed)
	sum.Dataset, sum.TrainSize, sum.TestSize, sum.ShuffleSeed = train.Name, train.Len(), test.Len(), shuffle
	te := model.ErrorRate(l.Weights(), test.X, test.Y)
	sum.TestError = &te
	if skip, _ := f.GetBool("no-baseline"); !skip {
		be, err := baselineBatchError(cmd, name, train, test)
		if err != nil {
			return fmt.Errorf("baseline batch SVM: %w", err)
		}
		sum.BaselineBatchError = &be
	}
	sum.Seconds = time.Since(start).Seconds()
	return printStreamSummary(cmd, &sum)
}

// streamDataset feeds the training rows in order to l, answering every
// request with the row's label, and flushes. A resumed learner has seen
// the first Observed events of the order (checkResumedOrder made sure it
// is the saved one).
func streamDataset(cmd *cobra.Command, l *stream.Learner, train *data.Dataset, order []int) error {
	done := min(l.Stats().Observed, len(order))
	todo := len(order) - done
	var bar *progress.Bar
	if todo >= minBarRows {
		bar = progress.New(progressOut(cmd), todo, "stream")
	}
	// Deferred so that an error is printed on a cleared line.
	defer bar.Finish()
	for k, i := range order[done:] {
		dec, err := l.Observe(train.X[i])
		if err != nil {
			return fmt.Errorf("%s row %d: %w", train.Name, i, err)
		}
		if dec.Request {
			if err := l.Label(dec.ID, train.Y[i]); err != nil {
				return fmt.Errorf("%s row %d: %w", train.Name, i, err)
			}
		}
		if k%1024 == 0 {
			bar.Add(min(1024, todo-k))
		}
	}
	return l.Flush()
}

// streamOrder returns the order of the training stream: a permutation by
// --shuffle, else by --seed, else the file order.
func streamOrder(cmd *cobra.Command, n int, seed *uint64) ([]int, *uint64) {
	var s *uint64
	if cmd.Flags().Changed("shuffle") {
		v, _ := cmd.Flags().GetUint64("shuffle")
		s = &v
	} else if seed != nil {
		v := *seed
		s = &v
	}
	if s != nil {
		return data.Permutation(n, *s), s
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	return order, nil
}

// minBarRows is the shortest dataset stream that gets a progress bar: a
// shorter one is over before a bar would tell the user anything.
const minBarRows = 20000

// learnerSeed returns the seed driving l (for a resumed learner the
// saved one), or nil for secure randomness.
func learnerSeed(l *stream.Learner) *uint64 {
	if s, ok := l.Seed(); ok {
		return &s
	}
	return nil
}

// summarise fills the counters, the spend and the seed.
func summarise(l *stream.Learner, dim int, resumed string) streamSummary {
	s := l.Stats()
	sum := streamSummary{
		Dim: dim, Config: l.Config(), Observed: s.Observed, Requested: s.Requested,
		Labels: s.Labelled, Updates: s.Updates, Releases: s.Updates,
		NonPrivate: l.Config().NonPrivate, Seed: learnerSeed(l), ResumedFrom: resumed,
	}
	if led := l.Ledger(); led != nil {
		sum.Ledger, _ = led.Report("")
	}
	if !sum.NonPrivate {
		eps, sel := s.MaxEpsilonPerRecord, s.EpsSelect
		sum.EpsilonPerRecord, sum.EpsSelectTrue = &eps, &sel
	}
	return sum
}

func printStreamSummary(cmd *cobra.Command, sum *streamSummary) error {
	if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
		return printJSON(cmd.OutOrStdout(), sum)
	}
	w := cmd.OutOrStdout()
	c := sum.Config
	fmt.Fprintf(w, "dpal stream: %s selection, %s (window %d), eps_s = %v, eps_g = %v\n",
		c.Selector, c.Policy, c.Window, c.EpsSelect, c.EpsGrad)
	if sum.Dataset != "" {
		fmt.Fprintf(w, "  data         %s: %d training events streamed, %d test rows, %d features\n",
			sum.Dataset, sum.Observed, sum.TestSize, sum.Dim)
	}
	fmt.Fprintf(w, "  labels       %d requested of %d events observed (%d updates released)\n",
		sum.Requested, sum.Observed, sum.Updates)
	if sum.TestError != nil {
		fmt.Fprintf(w, "  test error   %.4f\n", *sum.TestError)
	}
	if sum.BaselineBatchError != nil {
		fmt.Fprintf(w, "  baseline     %.4f (non-private batch linear SVM on all training labels)\n", *sum.BaselineBatchError)
	}
	if sum.NonPrivate {
		fmt.Fprintln(w, "  privacy      NONE: non-private Tong-Koller baseline")
	} else {
		fmt.Fprintf(w, "  privacy      every record eps <= %.4f (selection eps_s %.4f", *sum.EpsilonPerRecord, *sum.EpsSelectTrue)
		if c.Selector == stream.Exponential && *sum.EpsSelectTrue > c.EpsSelect*(1+1e-9) {
			fmt.Fprintf(w, " > target %v: Lemma 2's condition fails, see --calibration", c.EpsSelect)
		}
		fmt.Fprintf(w, ", update eps_g %v)\n", c.EpsGrad)
		fmt.Fprintln(w, "  ledger")
		for _, g := range sum.Ledger.Groups {
			fmt.Fprintf(w, "    %-18s eps = %.4f\n", g.Group, g.Epsilon)
		}
	}
	if sum.Seed != nil {
		fmt.Fprintf(w, "  seed         %d (experiment mode)\n", *sum.Seed)
	}
	return nil
}

// baselineBatchError trains the non-private linear SVM on the whole
// training split (model.TrainLinearSVM, default options) and returns its
// test error, cached in the user cache directory under a key made of the
// dataset name, the options and a fingerprint of the data.
func baselineBatchError(cmd *cobra.Command, name string, train, test *data.Dataset) (float64, error) {
	opt := model.SVMOptions{}
	key := baselineKey(name, opt, train, test)
	path := ""
	if dir, err := os.UserCacheDir(); err == nil {
		path = filepath.Join(dir, "dpal", "stream-baseline-"+key[:24]+".json")
		if b, err := os.ReadFile(path); err == nil {
			var c struct {
				Key   string  `json:"key"`
				Error float64 `json:"test_error"`
			}
			if json.Unmarshal(b, &c) == nil && c.Key == key {
				return c.Error, nil
			}
		}
	}
	if train.Len() > 20000 {
		fmt.Fprintf(cmd.ErrOrStderr(), "dpal stream: training the non-private batch SVM on %d rows (cached afterwards)\n", train.Len())
	}
	w, err := model.TrainLinearSVM(train.X, train.Y, opt)
	if err != nil {
		return 0, err
	}
	e := model.ErrorRate(w, test.X, test.Y)
	if path != "" {
		b, _ := json.Marshal(map[string]any{"key": key, "dataset": name, "options": opt, "test_error": e})
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err == nil {
			if err := os.WriteFile(path, b, 0o644); err != nil {
				slog.Warn("stream: cannot cache the baseline", "err", err)
			}
		}
	}
	return e, nil
}

// baselineKey hashes the dataset's name, the SVM options, both splits'
// sizes and every 97th row of each, enough to tell data versions apart.
func baselineKey(name string, opt model.SVMOptions, train, test *data.Dataset) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s|%+v|%s|%d|%s|%d|%d|", name, opt, train.Name, train.Len(), test.Name, test.Len(), train.Dim())
	hashRows(h, train)
	hashRows(h, test)
	return hex.EncodeToString(h.Sum(nil))
}

// datasetFingerprint identifies a training split for a resume: its name,
// size, dimension and every 97th row.
func datasetFingerprint(name string, train *data.Dataset) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s|%s|%d|%d|", name, train.Name, train.Len(), train.Dim())
	hashRows(h, train)
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// hashRows writes every 97th row of ds (features, then label) to h.
func hashRows(h io.Writer, ds *data.Dataset) {
	var buf [8]byte
	for i := 0; i < ds.Len(); i += 97 {
		for _, v := range ds.X[i] {
			binary.LittleEndian.PutUint64(buf[:], math.Float64bits(v))
			h.Write(buf[:])
		}
		binary.LittleEndian.PutUint64(buf[:], math.Float64bits(ds.Y[i]))
		h.Write(buf[:])
	}
}

// eventRecord is one line of the event-mode output. It is public: a
// rejected event carries only its line number and the error class
// rejectedClass; the details go to the operator log.
type eventRecord struct {
	Type        string    `json:"type"` // request, release, rejected
	ID          uint64    `json:"id,omitempty"`
	Line        int       `json:"line,omitempty"`
	Observation int       `json:"observation,omitempty"`
	Update      int       `json:"update,omitempty"`
	W           []float64 `json:"w,omitempty"`
	Error       string    `json:"error,omitempty"`
}

// rejectedClass is the public error class of a rejected event: it broke
// the declared bounds (unparsable, wrong dimension, NaN or Inf, ‖x‖ > M in
// reject mode). Which bound, and the offending values, are private.
const rejectedClass = "invalid-input"

// eventMeta is the first line of the event-mode output: the settings the
// run used and, when seeded, the seed (for a resumed run the saved one).
type eventMeta struct {
	Type        string  `json:"type"` // "meta"
	Seed        *uint64 `json:"seed,omitempty"`
	Selector    string  `json:"selector"`
	Policy      string  `json:"policy"`
	Window      int     `json:"window"`
	EpsSelect   float64 `json:"eps_select"`
	EpsGrad     float64 `json:"eps_grad"`
	LabelBudget int     `json:"label_budget"`
	M           float64 `json:"m"`
	NormMode    string  `json:"norm_mode"`
	NonPrivate  bool    `json:"non_private,omitempty"`
	ResumedFrom string  `json:"resumed_from,omitempty"`
}

func newEventMeta(cfg stream.Config, seed *uint64, resumed string) eventMeta {
	return eventMeta{
		Type: "meta", Seed: seed, Selector: cfg.Selector.String(), Policy: cfg.Policy.String(),
		Window: cfg.Window, EpsSelect: cfg.EpsSelect, EpsGrad: cfg.EpsGrad, LabelBudget: cfg.LabelBudget,
		M: cfg.M, NormMode: cfg.NormMode.String(), NonPrivate: cfg.NonPrivate, ResumedFrom: resumed,
	}
}

// eventRun is the state of one event-mode run.
type eventRun struct {
	cmd      *cobra.Command
	input    string
	seed     *uint64
	enc      *json.Encoder
	log      *slog.Logger
	l        *stream.Learner // nil until the first event (unless resumed)
	resumed  string
	rejected int
}

func runStreamEvents(cmd *cobra.Command, input string, seed *uint64) error {
	start := time.Now()
	run := &eventRun{cmd: cmd, input: input, seed: seed,
		log: slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))}
	meta, err := run.begin()
	if err != nil {
		return err
	}
	in, closeIn, err := openInput(cmd, input)
	if err != nil {
		return err
	}
	defer closeIn()
	var labels *stream.LineReader
	if path, _ := cmd.Flags().GetString("labels"); path != "" {
		fh, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("--labels: %w", err)
		}
		defer fh.Close()
		labels = stream.NewLineReader(bufio.NewReader(fh))
	}
	outPath, _ := cmd.Flags().GetString("out")
	out, closeOut, err := openOutput(cmd, outPath)
	if err != nil {
		return err
	}
	run.enc = json.NewEncoder(out)
	err = run.enc.Encode(meta)
	if err == nil {
		err = run.loop(stream.NewLineReader(in), labels)
	}
	if err == nil && run.l == nil {
		err = fmt.Errorf("%s: no events", input)
	}
	if err == nil {
		err = run.finish()
	}
	if cerr := closeOut(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	sum := summarise(run.l, run.l.Config().Dim, run.resumed)
	sum.Rejected = run.rejected
	sum.Seconds = time.Since(start).Seconds()
	if outPath == "-" {
		// The JSON lines own stdout; the summary goes to stderr.
		cmd.SetOut(cmd.ErrOrStderr())
	}
	return printStreamSummary(cmd, &sum)
}

// begin restores --resume at once (its settings and seed head the
// output), or checks the flags' configuration; it returns the meta line.
func (run *eventRun) begin() (eventMeta, error) {
	if resume, _ := run.cmd.Flags().GetString("resume"); resume == "" {
		if path, _ := run.cmd.Flags().GetString("answers"); path != "" {
			return eventMeta{}, errors.New("--answers labels the pending requests of a saved state: use it with --resume")
		}
		cfg, err := streamConfig(run.cmd, 0)
		return newEventMeta(cfg, run.seed, ""), err
	}
	l, resumed, err := newStreamLearner(run.cmd, 0, run.seed)
	if err != nil {
		return eventMeta{}, err
	}
	was, err := savedStreamInfo(l)
	if err != nil {
		return eventMeta{}, fmt.Errorf("--resume %s: %w", resumed, err)
	}
	if was != nil && was.Mode != "events" {
		return eventMeta{}, fmt.Errorf("--resume %s: the state was written in %s mode; resume it in the same mode", resumed, was.Mode)
	}
	run.l, run.resumed = l, resumed
	return newEventMeta(l.Config(), learnerSeed(l), resumed), setStreamInfo(l, streamInfo{Mode: "events"})
}

// loop streams the events. Bad events are rejected and the run goes on;
// any other error (the budget, the label file, the output) stops it, and
// --save-state is still written.
func (run *eventRun) loop(events, labels *stream.LineReader) error {
	var x []float64
	seen := false
	// The number of events is unknown (the input may be a pipe): a spinner.
	bar := progress.New(progressOut(run.cmd), 0, "events")
	defer bar.Finish()
	for {
		line, lineNo, err := events.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err == nil {
			err = run.event(line, lineNo, labels, &x, &seen)
		}
		if err != nil {
			if run.l != nil {
				return stopStream(run.cmd, run.l, err)
			}
			return err
		}
		if lineNo%1024 == 0 {
			bar.Add(1024)
		}
	}
	return nil
}

// event handles one input line: parse, observe, request, label, release.
func (run *eventRun) event(line []byte, lineNo int, labels *stream.LineReader, x *[]float64, seen *bool) error {
	y, haveY, err := nextLabel(labels, run.input)
	if err != nil {
		return err
	}
	if *x, err = stream.ParseEvent(line, *x); err != nil {
		return run.reject(lineNo, err)
	}
	if err := run.ensureLearner(len(*x), *seen); err != nil {
		return err
	}
	*seen = true
	dec, err := run.l.Observe(*x)
	if errors.Is(err, stream.ErrInvalidEvent) {
		return run.reject(lineNo, err)
	}
	if err != nil {
		return fmt.Errorf("%s line %d: %w", run.input, lineNo, err)
	}
	if dec.Request {
		if err := run.enc.Encode(eventRecord{Type: "request", ID: dec.ID, Line: lineNo}); err != nil {
			return err
		}
		if haveY {
			if err := run.l.Label(dec.ID, y); err != nil {
				return fmt.Errorf("%s line %d: %w", run.input, lineNo, err)
			}
		}
	}
	return writeReleases(run.enc, run.l)
}

// ensureLearner creates the learner for the first event's dimension, or
// checks a resumed learner's dimension against the first event's: a file
// of another dimension is the operator's error, not a bad record.
func (run *eventRun) ensureLearner(dim int, seen bool) error {
	if run.l == nil {
		l, _, err := newStreamLearner(run.cmd, dim, run.seed)
		if err != nil {
			return err
		}
		run.l = l
		return setStreamInfo(l, streamInfo{Mode: "events"})
	}
	if !seen && run.l.Config().Dim != dim {
		return fmt.Errorf("--resume %s: state has dimension %d, the events %d", run.resumed, run.l.Config().Dim, dim)
	}
	return nil
}

// reject writes the public rejected line and logs the details privately.
func (run *eventRun) reject(lineNo int, err error) error {
	run.rejected++
	run.log.Warn("dpal stream: event rejected", "input", run.input, "line", lineNo, "err", err)
	return run.enc.Encode(eventRecord{Type: "rejected", Line: lineNo, Error: rejectedClass})
}

// finish flushes the last window, writes its release and the state.
func (run *eventRun) finish() error {
	if err := run.l.Flush(); err != nil {
		return stopStream(run.cmd, run.l, err)
	}
	if err := writeReleases(run.enc, run.l); err != nil {
		return stopStream(run.cmd, run.l, err)
	}
	return saveStreamState(run.cmd, run.l)
}

// nextLabel reads the oracle's label for the next event line, if any.
func nextLabel(labels *stream.LineReader, input string) (float64, bool, error) {
	if labels == nil {
		return 0, false, nil
	}
	line, lineNo, err := labels.Next()
	if errors.Is(err, io.EOF) {
		return 0, false, fmt.Errorf("--labels: fewer labels than events in %s", input)
	}
	if err != nil {
		return 0, false, fmt.Errorf("--labels: %w", err)
	}
	y, err := stream.ParseLabel(line)
	if err != nil {
		return 0, false, fmt.Errorf("--labels line %d: %w", lineNo, err)
	}
	return y, true, nil
}

// writeReleases writes and forgets the learner's new releases.
func writeReleases(enc *json.Encoder, l *stream.Learner) error {
	for _, r := range l.Releases() {
		if err := enc.Encode(eventRecord{Type: "release", Observation: r.Observation, Update: r.Update, W: r.W}); err != nil {
			return err
		}
	}
	l.DropReleases()
	return nil
}

func openInput(cmd *cobra.Command, path string) (io.Reader, func(), error) {
	if path == "-" {
		return bufio.NewReader(cmd.InOrStdin()), func() {}, nil
	}
	fh, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("--input: %w", err)
	}
	return bufio.NewReader(fh), func() { fh.Close() }, nil
}

func openOutput(cmd *cobra.Command, path string) (io.Writer, func() error, error) {
	if path == "-" {
		return cmd.OutOrStdout(), func() error { return nil }, nil
	}
	fh, err := os.Create(path)
	if err != nil {
		return nil, nil, fmt.Errorf("--out: %w", err)
	}
	bw := bufio.NewWriter(fh)
	return bw, func() error {
		if err := bw.Flush(); err != nil {
			fh.Close()
			return err
		}
		return fh.Close()
	}, nil
}
