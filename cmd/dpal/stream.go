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
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/dpal-dev/dpal/active/stream"
	"github.com/dpal-dev/dpal/data"
	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/model"
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
or, without it, only emits the requests; label requests and releases are
written as JSON lines to --out.

Without --seed the randomness is cryptographically secure; --seed is for
experiments and is recorded in the output.`,
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
	f.String("resume", "", "resume from a state written by --save-state (its settings replace the flags)")
	f.Uint64("seed", 0, "seed for reproducible experiments (default: secure randomness)")
	f.Bool("json", false, "print one JSON summary object")
	f.Bool("no-progress", false, "never draw a progress bar")
	rootCmd.AddCommand(streamCmd)
}

// streamSummary is the --json output. Scripts rely on test_error, labels,
// observed, releases, epsilon_per_record, baseline_batch_error and seed.
type streamSummary struct {
	Dataset            string          `json:"dataset,omitempty"`
	Dim                int             `json:"dim"`
	TrainSize          int             `json:"train_size,omitempty"`
	TestSize           int             `json:"test_size,omitempty"`
	Config             stream.Config   `json:"config"`
	Observed           int             `json:"observed"`
	Requested          int             `json:"requested"`
	Labels             int             `json:"labels"`
	Updates            int             `json:"updates"`
	Releases           int             `json:"releases"`
	Rejected           int             `json:"rejected"`
	TestError          *float64        `json:"test_error,omitempty"`
	BaselineBatchError *float64        `json:"baseline_batch_error,omitempty"`
	EpsSelectTrue      *float64        `json:"eps_select_true,omitempty"`
	EpsilonPerRecord   *float64        `json:"epsilon_per_record"`
	NonPrivate         bool            `json:"non_private,omitempty"`
	Ledger             *account.Ledger `json:"ledger,omitempty"`
	Seed               *uint64         `json:"seed,omitempty"`
	ShuffleSeed        *uint64         `json:"shuffle_seed,omitempty"`
	ResumedFrom        string          `json:"resumed_from,omitempty"`
	Seconds            float64         `json:"seconds"`
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

// newStreamLearner creates the learner, or restores it with --resume.
func newStreamLearner(cmd *cobra.Command, dim int, seed *uint64) (*stream.Learner, string, error) {
	resume, _ := cmd.Flags().GetString("resume")
	if resume != "" {
		fh, err := os.Open(resume)
		if err != nil {
			return nil, "", fmt.Errorf("--resume: %w", err)
		}
		defer fh.Close()
		l, err := stream.Restore(bufio.NewReader(fh), rng.New(seed), nil)
		if err != nil {
			return nil, "", fmt.Errorf("--resume %s: %w", resume, err)
		}
		if dim > 0 && l.Config().Dim != dim {
			return nil, "", fmt.Errorf("--resume %s: state has dimension %d, the events %d", resume, l.Config().Dim, dim)
		}
		if err := applyAnswers(cmd, l); err != nil {
			return nil, "", err
		}
		return l, resume, nil
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

// loadStreamDataset returns the training and test splits of --dataset.
func loadStreamDataset(cmd *cobra.Command) (train, test *data.Dataset, err error) {
	f := cmd.Flags()
	name, _ := f.GetString("dataset")
	dir, _ := f.GetString("data-dir")
	switch name {
	case "demo":
		return data.Demo()
	case "kdd99":
		return data.LoadKDD(dir, data.KDDOptions{})
	case "mnist09":
		return data.LoadIDXPair(filepath.Join(dir, "mnist"), 0, 9, 50)
	case "csv":
		header, _ := f.GetBool("header")
		load := func(flag string) (*data.Dataset, error) {
			path, _ := f.GetString(flag)
			if path == "" {
				return nil, fmt.Errorf("--dataset csv needs --%s FILE", flag)
			}
			fh, err := os.Open(path)
			if err != nil {
				return nil, err
			}
			defer fh.Close()
			return data.LoadCSV(bufio.NewReader(fh), data.CSVOptions{Name: path, Header: header, LabelColumn: -1})
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
	if n, _ := f.GetInt("events"); n > 0 && n < len(order) {
		order = order[:n]
	}
	// A resumed learner has seen the first Observed events of this order.
	done := min(l.Stats().Observed, len(order))
	bar := newBar(cmd, len(order)-done, "stream")
	for k, i := range order[done:] {
		dec, err := l.Observe(train.X[i])
		if err != nil {
			return fmt.Errorf("%s row %d: %w", train.Name, i, err)
		}
		if dec.Request {
			if err := l.Label(dec.ID, train.Y[i]); err != nil {
				return err
			}
		}
		if bar != nil && k%1024 == 0 {
			_ = bar.Add(min(1024, len(order)-done-k))
		}
	}
	if bar != nil {
		_ = bar.Finish()
	}
	if err := l.Flush(); err != nil {
		return err
	}
	if err := saveStreamState(cmd, l); err != nil {
		return err
	}
	sum := summarise(l, train.Dim(), seed, resumed)
	sum.Dataset, sum.TrainSize, sum.TestSize, sum.ShuffleSeed = train.Name, train.Len(), test.Len(), shuffle
	te := model.ErrorRate(l.Weights(), test.X, test.Y)
	sum.TestError = &te
	if skip, _ := f.GetBool("no-baseline"); !skip {
		name, _ := f.GetString("dataset")
		be, err := baselineBatchError(cmd, name, train, test)
		if err != nil {
			return fmt.Errorf("baseline batch SVM: %w", err)
		}
		sum.BaselineBatchError = &be
	}
	sum.Seconds = time.Since(start).Seconds()
	return printStreamSummary(cmd, &sum)
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

// newBar returns a progress bar on stderr for a long run in a terminal.
func newBar(cmd *cobra.Command, n int, what string) *progressbar.ProgressBar {
	if off, _ := cmd.Flags().GetBool("no-progress"); off || n < 20000 {
		return nil
	}
	fh, ok := cmd.ErrOrStderr().(*os.File)
	if !ok || !term.IsTerminal(int(fh.Fd())) {
		return nil
	}
	return progressbar.NewOptions(n, progressbar.OptionSetWriter(fh), progressbar.OptionSetDescription(what),
		progressbar.OptionShowCount(), progressbar.OptionThrottle(200*time.Millisecond), progressbar.OptionClearOnFinish())
}

// summarise fills the counters, the spend and the seed.
func summarise(l *stream.Learner, dim int, seed *uint64, resumed string) streamSummary {
	s := l.Stats()
	sum := streamSummary{
		Dim: dim, Config: l.Config(), Observed: s.Observed, Requested: s.Requested,
		Labels: s.Labelled, Updates: s.Updates, Releases: s.Updates,
		NonPrivate: l.Config().NonPrivate, Ledger: l.Ledger(), Seed: seed, ResumedFrom: resumed,
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
		for _, g := range sum.Ledger.Groups() {
			eps, _ := sum.Ledger.Spent(g)
			fmt.Fprintf(w, "    %-18s eps = %.4f\n", g, eps)
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
	var buf [8]byte
	for _, ds := range []*data.Dataset{train, test} {
		for i := 0; i < ds.Len(); i += 97 {
			for _, v := range ds.X[i] {
				binary.LittleEndian.PutUint64(buf[:], math.Float64bits(v))
				h.Write(buf[:])
			}
			binary.LittleEndian.PutUint64(buf[:], math.Float64bits(ds.Y[i]))
			h.Write(buf[:])
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// eventRecord is one line of the event-mode output.
type eventRecord struct {
	Type        string    `json:"type"` // request, release, rejected, summary
	ID          uint64    `json:"id,omitempty"`
	Line        int       `json:"line,omitempty"`
	Observation int       `json:"observation,omitempty"`
	Update      int       `json:"update,omitempty"`
	W           []float64 `json:"w,omitempty"`
	Error       string    `json:"error,omitempty"`
}

func runStreamEvents(cmd *cobra.Command, input string, seed *uint64) error {
	start := time.Now()
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
	enc := json.NewEncoder(out)
	events := stream.NewLineReader(in)
	var l *stream.Learner
	var resumed string
	var x []float64
	rejected := 0
	bar := newBar(cmd, math.MaxInt32, "events")
	for {
		line, lineNo, err := events.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("%s: %w", input, err)
		}
		y, haveY, err := nextLabel(labels, input)
		if err != nil {
			return err
		}
		if x, err = stream.ParseEvent(line, x); err != nil {
			rejected++
			if err := enc.Encode(eventRecord{Type: "rejected", Line: lineNo, Error: err.Error()}); err != nil {
				return err
			}
			continue
		}
		if l == nil {
			if l, resumed, err = newStreamLearner(cmd, len(x), seed); err != nil {
				return err
			}
		}
		dec, err := l.Observe(x)
		if err != nil {
			rejected++
			if err := enc.Encode(eventRecord{Type: "rejected", Line: lineNo, Error: err.Error()}); err != nil {
				return err
			}
			continue
		}
		if dec.Request {
			if err := enc.Encode(eventRecord{Type: "request", ID: dec.ID, Line: lineNo}); err != nil {
				return err
			}
			if haveY {
				if err := l.Label(dec.ID, y); err != nil {
					return fmt.Errorf("%s line %d: %w", input, lineNo, err)
				}
			}
		}
		if err := writeReleases(enc, l); err != nil {
			return err
		}
		if bar != nil && lineNo%1024 == 0 {
			_ = bar.Add(1024)
		}
	}
	if bar != nil {
		_ = bar.Finish()
	}
	if l == nil {
		closeOut()
		return fmt.Errorf("%s: no events", input)
	}
	if err := l.Flush(); err != nil {
		return err
	}
	if err := writeReleases(enc, l); err != nil {
		return err
	}
	if err := saveStreamState(cmd, l); err != nil {
		return err
	}
	sum := summarise(l, l.Config().Dim, seed, resumed)
	sum.Rejected = rejected
	sum.Seconds = time.Since(start).Seconds()
	if err := closeOut(); err != nil {
		return err
	}
	if outPath == "-" {
		// The JSON lines own stdout; the summary goes to stderr.
		cmd.SetOut(cmd.ErrOrStderr())
	}
	return printStreamSummary(cmd, &sum)
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
