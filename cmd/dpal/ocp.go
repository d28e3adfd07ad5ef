package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/dpal-dev/dpal/data"
	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/online"
	"github.com/dpal-dev/dpal/progress"
)

var ocpCmd = &cobra.Command{
	Use:   "ocp",
	Short: "Private online convex programming (Jain, Kothari & Thakurta 2012): IGD, GIGA, quadratic FTL",
	Long: `ocp streams a data set once through a private online learner and releases
its iterate after every record: private IGD or GIGA (the POCP wrapper,
Algorithms 1-3) or private follow-the-leader on tree sums (Algorithm 4).
The whole run's privacy loss is charged to the ledger before the first
release. It prints the regret (when the offline optimum is computable: the
squared loss), the final iterate's test accuracy or MSE, the paper's
nominal ε, the exact ε of the whole release sequence (μ-GDP, continuous
noise), and the ε the ledger charged (zCDP of the discrete noise drawn).
The default calibration (exact) makes the charged ε the target. See
docs/repro-ocp.md.

A run whose data (synthetic) and learner would allocate more than
--max-memory is refused before either is built: private FTL holds about
(tree levels + 11)·d² floats, so d = 4,473 is the largest that fits in
8GiB on the default 100,000 synthetic records.`,
	Args: cobra.NoArgs,
	RunE: runOCP,
}

// ocpOptions are the flags of `dpal ocp` (--ledger, the budget flags,
// --force and --max-memory are read by the shared helpers).
type ocpOptions struct {
	Algorithm, Loss, Data, DataDir, Calibration, Out string
	Records, Dim, Batch                              int
	Epsilon, Delta, Alpha, Radius                    float64
	NonPrivate, JSON, NoProgress                     bool
	Seed                                             uint64
}

var ocpOpts ocpOptions

func init() {
	f, o := ocpCmd.Flags(), &ocpOpts
	f.StringVar(&o.Algorithm, "algorithm", "ftl", "igd, giga or ftl")
	f.StringVar(&o.Loss, "loss", "", "logistic, hinge or squared (default: squared for ftl, logistic otherwise)")
	f.StringVar(&o.Data, "data", "synthetic", "synthetic, beijing, kdd99, mnist09 or a CSV FILE (label ±1 last)")
	f.StringVar(&o.DataDir, "data-dir", data.DefaultDir, "data root holding beijing_air_quality/, kddcup99/, mnist/")
	f.IntVar(&o.Records, "records", 0, "use the first N records of the stream (0 = all; synthetic: 100000; >= 0)")
	f.IntVar(&o.Dim, "dim", online.SyntheticDim, "synthetic data: dimension d (>= 1)")
	f.Float64Var(&o.Epsilon, "epsilon", 1, "target ε (0 < ε ≤ 50)")
	f.Float64Var(&o.Delta, "delta", 0, "target δ (0 < δ < 1; default min(1e-5, 1/(10n)), n the records streamed)")
	f.Float64Var(&o.Alpha, "alpha", 0, "strong convexity α of the ℓ2 regulariser (default 1 for ftl, 0.01 otherwise)")
	f.Float64Var(&o.Radius, "radius", 0, "radius of the ball C (default: unbounded for ftl, 10 otherwise)")
	f.StringVar(&o.Calibration, "calibration", "exact", "exact (smallest noise whose ledger charge is (ε, δ)) or paper (the paper's β / σ formulas)")
	f.IntVar(&o.Batch, "batch", 1, "ftl: records per tree leaf and per solve (1 = Algorithm 4)")
	f.BoolVar(&o.NonPrivate, "non-private", false, "run the plain algorithm (no noise, no ledger) as a baseline")
	f.Uint64Var(&o.Seed, "seed", 0, "seed for the data order and the noise (experiments only; default: secure noise)")
	f.String("ledger", "", "durable ledger: a FILE or postgres://…?ledger=NAME (docs/postgres.md): the run's loss is committed to it before the first release")
	budgetFlags(f)
	deprecate(f, "budget", "budget-epsilon")
	f.StringVar(&o.Out, "out", "", "write every released iterate as JSON lines {\"t\":…,\"x\":[…]} to FILE (- for stdout); an existing file needs --force")
	forceFlag(f)
	f.BoolVar(&o.JSON, "json", false, "print the summary as one JSON object")
	f.BoolVar(&o.NoProgress, "no-progress", false, "no progress bar")
	maxMemoryFlag(f)
	rootCmd.AddCommand(ocpCmd)
}

// ocpSummary is what `dpal ocp` reports.
type ocpSummary struct {
	Spec          online.Spec     `json:"spec"`
	Data          *online.Data    `json:"data"`
	Records       int             `json:"records"`
	Seed          *uint64         `json:"seed,omitempty"`
	Privacy       *online.Privacy `json:"privacy,omitempty"`
	Loss          float64         `json:"loss"`
	Regret        *float64        `json:"regret,omitempty"`
	AverageRegret *float64        `json:"average_regret,omitempty"`
	TestAccuracy  *float64        `json:"test_accuracy,omitempty"`
	TestMSE       *float64        `json:"test_mse,omitempty"`
	TestRecords   int             `json:"test_records"`
	Seconds       float64         `json:"seconds"`
	Ledger        *ledger.Report  `json:"ledger,omitempty"`
}

func runOCP(cmd *cobra.Command, _ []string) error {
	o := &ocpOpts
	spec, err := ocpSpec(cmd, o)
	if err != nil {
		return err
	}
	seed := givenSeed(cmd, o.Seed)
	dataSeed := uint64(1)
	if seed != nil {
		dataSeed = *seed
	}
	name := o.Data
	// --data names a dataset or a file: only a file can be clobbered.
	if err := checkPaths(cmd, []string{"out", "ledger"}, []string{"data"}); err != nil {
		return err
	}
	n, dim, err := ocpSizeFlags(cmd, name, o.Records, o.Dim)
	if err != nil {
		return err
	}
	if name == "synthetic" {
		// The data are generated here: their size and the learner's
		// are checked before either is allocated.
		s := spec
		s.Steps, s.Cost.Dim = cmp.Or(n, online.SyntheticRecords), cmp.Or(dim, online.SyntheticDim)
		if err := checkOCPMemory(cmd, s, s.Steps); err != nil {
			return err
		}
	}
	d, err := online.LoadData(name, o.DataDir, spec.Cost.Loss, n, dim, dataSeed)
	if err != nil {
		return fmt.Errorf("--data: %w", err)
	}
	if len(d.Train) < 2 {
		return fmt.Errorf("--data %s: %d records, need at least 2", name, len(d.Train))
	}
	spec.Cost.Dim, spec.Cost.FeatureBound, spec.Cost.LabelBound = d.Dim, d.FeatureBound, d.LabelBound
	spec.Steps = len(d.Train)
	if spec.Calibration.Delta, err = checkDelta(cmd, "delta", o.Delta, spec.Steps); err != nil {
		return err
	}
	if err := checkOCPMemory(cmd, spec, 0); err != nil {
		return err
	}
	led, err := ocpLedger(cmd, spec, d.Name)
	if err != nil {
		return err
	}
	if led != nil {
		defer led.Close()
	}
	group := "ocp/" + d.Name
	learner, priv, err := online.NewLearner(spec, led, []string{group})
	if err != nil {
		return err
	}
	r := rng.New(seed)
	if spec.NonPrivate {
		r = nil
	}
	sum := &ocpSummary{Spec: spec, Data: d, Records: spec.Steps, Seed: seed, Privacy: priv, TestRecords: len(d.Test)}
	start := time.Now()
	if err := ocpStream(cmd, o, r, learner, spec, d, sum); err != nil {
		return err
	}
	sum.Seconds = time.Since(start).Seconds()
	if led != nil {
		if sum.Ledger, err = led.Report(group); err != nil {
			return err
		}
	}
	return printOCP(cmd, o.JSON, sum)
}

// ocpSpec reads the algorithm, cost and calibration flags.
func ocpSpec(cmd *cobra.Command, o *ocpOptions) (online.Spec, error) {
	f := cmd.Flags()
	var s online.Spec
	s.Algorithm = o.Algorithm
	if s.Algorithm != "igd" && s.Algorithm != "giga" && s.Algorithm != "ftl" {
		return s, fmt.Errorf("--algorithm: %q is not igd, giga or ftl", s.Algorithm)
	}
	ftl := s.Algorithm == "ftl"
	lossName := o.Loss
	if lossName == "" {
		lossName = map[bool]string{true: "squared", false: "logistic"}[ftl]
	}
	loss, err := online.ParseLoss(lossName)
	if err != nil {
		return s, fmt.Errorf("--loss: %w", err)
	}
	if ftl && loss != online.Squared {
		return s, fmt.Errorf("--loss %s: ftl is for the squared loss", loss)
	}
	s.Cost = online.Cost{Loss: loss, Alpha: 1, Radius: math.Inf(1)}
	if !ftl {
		s.Cost.Alpha, s.Cost.Radius = 0.01, 10
	}
	if f.Changed("alpha") {
		s.Cost.Alpha = o.Alpha
	}
	if f.Changed("radius") {
		s.Cost.Radius = o.Radius
	}
	if !(s.Cost.Alpha > 0) || math.IsInf(s.Cost.Alpha, 0) {
		return s, fmt.Errorf("--alpha must be finite and > 0, got %v", s.Cost.Alpha)
	}
	if !(s.Cost.Radius > 0) {
		return s, fmt.Errorf("--radius must be > 0, got %v", s.Cost.Radius)
	}
	s.Batch = o.Batch
	if s.Batch < 1 {
		return s, fmt.Errorf("--batch must be >= 1, got %d", s.Batch)
	}
	s.NonPrivate = o.NonPrivate
	if o.Calibration != "exact" && o.Calibration != "paper" {
		return s, fmt.Errorf("--calibration: %q is not exact or paper", o.Calibration)
	}
	s.Calibration.Exact = o.Calibration == "exact"
	s.Calibration.Epsilon = o.Epsilon
	if err := account.ValidateTargetEpsilon(s.Calibration.Epsilon); err != nil {
		return s, fmt.Errorf("--epsilon: %w", err)
	}
	// δ needs the number of records (deltaFlag, once they are loaded); a
	// bad --delta is refused now.
	_, err = checkDelta(cmd, "delta", o.Delta, 0)
	return s, err
}

// ocpLedger opens the run's ledger (openLedger). A new --ledger file's cap
// is the ε of the whole release sequence (chargedEpsilon) at the target
// δ. Without a file the in-memory ledger only records the run, so it is
// left uncapped: finding the charged ε builds a scratch learner (for FTL
// (levels + 11)·d² floats), which only a file's default cap is worth.
func ocpLedger(cmd *cobra.Command, spec online.Spec, name string) (*ledger.Ledger, error) {
	if spec.NonPrivate {
		return openLedger(cmd, runLedger{NonPrivate: true})
	}
	rl := runLedger{Charge: account.Budget{Epsilon: math.MaxFloat64, Delta: spec.Calibration.Delta}}
	if path, err := cmd.Flags().GetString("ledger"); err != nil {
		return nil, err
	} else if path != "" && !changed(cmd.Flags(), "budget-epsilon") {
		if rl.Charge.Epsilon, err = chargedEpsilon(spec, name); err != nil {
			return nil, err
		}
	}
	return openLedger(cmd, rl)
}

// openReleases opens --out for the released iterates ("-" is stdout);
// the returned function flushes and closes it.
func openReleases(cmd *cobra.Command, path string) (io.Writer, func() error, error) {
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

// chargedEpsilon is the ε the run spec would charge at its δ: the learner
// is built once against a scratch in-memory ledger, and nothing is released.
func chargedEpsilon(spec online.Spec, name string) (float64, error) {
	scratch, err := ledger.New(account.Budget{Epsilon: math.MaxFloat64, Delta: spec.Calibration.Delta})
	if err != nil {
		return 0, err
	}
	_, priv, err := online.NewLearner(spec, scratch, []string{"ocp/" + name})
	if err != nil {
		return 0, err
	}
	return priv.ChargedEpsilon, nil
}

// ocpStream plays the stream, writes the releases to --out and fills the
// regret and test figures.
func ocpStream(cmd *cobra.Command, o *ocpOptions, r *rng.Rand, learner online.Learner, spec online.Spec, d *online.Data, sum *ocpSummary) error {
	var enc *json.Encoder
	if o.Out != "" {
		w, closeOut, err := openReleases(cmd, o.Out)
		if err != nil {
			return err
		}
		defer closeOut()
		enc = json.NewEncoder(w)
	}
	bar := progress.New(progressTo(cmd, o.NoProgress), len(d.Train), "ocp")
	defer bar.Finish()
	var writeErr error
	tick := func(t int) {
		bar.Add(1)
		if enc != nil && writeErr == nil && t < len(d.Train) {
			writeErr = enc.Encode(struct {
				T int       `json:"t"`
				X []float64 `json:"x"`
			}{t + 1, learner.Point()})
		}
	}
	cps, err := online.Run(r, learner, spec.Cost, d.Train, []int{len(d.Train)}, tick)
	if err != nil {
		return err
	}
	if writeErr != nil {
		return fmt.Errorf("--out: %w", writeErr)
	}
	last := cps[len(cps)-1]
	sum.Loss = last.Loss
	if !math.IsNaN(last.Best) {
		reg, avg := last.Loss-last.Best, last.AverageRegret()
		sum.Regret, sum.AverageRegret = &reg, &avg
	}
	if len(d.Test) > 0 {
		x := learner.Point()
		if spec.Cost.Loss == online.Squared {
			m := online.MSE(x, d.Test)
			sum.TestMSE = &m
		} else {
			a := online.Accuracy(x, d.Test)
			sum.TestAccuracy = &a
		}
	}
	return nil
}

func printOCP(cmd *cobra.Command, asJSON bool, s *ocpSummary) error {
	if asJSON {
		return printJSON(cmd.OutOrStdout(), s)
	}
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "ocp: %s, %s loss on %s (%d records, d = %d) in %.1fs\n", s.Spec.Algorithm, s.Spec.Cost.Loss, s.Data.Name, s.Records, s.Data.Dim, s.Seconds)
	if s.Seed != nil {
		fmt.Fprintf(w, "seed: %d\n", *s.Seed)
	}
	fmt.Fprintf(w, "cost paid: %.6g\n", s.Loss)
	if s.Regret != nil {
		fmt.Fprintf(w, "regret: %.6g (average %.4g)\n", *s.Regret, *s.AverageRegret)
	}
	if s.TestAccuracy != nil {
		fmt.Fprintf(w, "test accuracy: %.4f (%d records)\n", *s.TestAccuracy, s.TestRecords)
	}
	if s.TestMSE != nil {
		fmt.Fprintf(w, "test MSE: %.6g (%d records)\n", *s.TestMSE, s.TestRecords)
	}
	printPrivacy(w, s.Privacy)
	return nil
}

func printPrivacy(w io.Writer, p *online.Privacy) {
	if p == nil {
		fmt.Fprintln(w, "privacy: none (non-private baseline)")
		return
	}
	fmt.Fprintf(w, "nominal: (ε, δ) = (%.4g, %.4g)  [paper's claim for this calibration]\n", p.NominalEpsilon, p.NominalDelta)
	if p.ProofNote != "" {
		fmt.Fprintf(w, "  note: %s\n", p.ProofNote)
	}
	fmt.Fprintf(w, "exact:   ε = %.4g at δ = %.4g  [whole release sequence, continuous noise, μ-GDP, μ = %.4g]\n", p.ExactEpsilon, p.Delta, p.Mu)
	fmt.Fprintf(w, "charged: ε = %.4g at δ = %.4g  [ledger, ρ = %.4g zCDP of the discrete noise drawn]\n", p.ChargedEpsilon, p.Delta, p.Rho)
}
