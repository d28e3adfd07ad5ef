// Package ocprepro owns the reproduction of Jain, Kothari and Thakurta (COLT
// 2012), App. G: Figure 2(a) (private FTL on synthetic regression),
// Figure 2(b) (on real data: Beijing air quality standing in for
// YearPredictionMSD, which is not available), the Figure 2(c) analogue
// (private IGD logistic regression accuracy, on KDD Cup 99 standing in for
// CoverType, which is not available), regret against T on log-log axes with
// fitted slopes, and the nominal against the exact ε of every run. It is
// data (Options) → rows → CSV/JSON + PNG (repro/figure); `dpal repro ocp`
// drives it and docs/repro-ocp.md reads its numbers.
package ocprepro

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"time"

	"github.com/dpal-dev/dpal/data"
	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/online"
	"github.com/dpal-dev/dpal/progress"
	"github.com/dpal-dev/dpal/repro/figure"
)

// Options configures a reproduction.
type Options struct {
	// OutDir receives the figures, tables and summary.json.
	OutDir string `json:"-"`
	// DataDir is the data root (beijing_air_quality/, kddcup99/).
	DataDir string `json:"-"`
	// Seed seeds the data order and every run's noise.
	Seed uint64 `json:"seed"`
	// Figures selects "2a", "2b", "2c", "regret".
	Figures []string `json:"figures"`
	// SynthT and SynthDim size Figure 2(a) (paper: 10⁵, 10).
	SynthT   int `json:"synth_t"`
	SynthDim int `json:"synth_dim"`
	// BeijingT caps Figure 2(b)'s stream (0: the whole training part).
	BeijingT int `json:"beijing_t"`
	// FTLEpsilons are Figure 2(a, b)'s ε (paper: 10, 1, 0.1, 0.01).
	FTLEpsilons []float64 `json:"ftl_epsilons"`
	// IGDEpsilons are Figure 2(c)'s ε (paper: 20, 10, 1, 0.1).
	IGDEpsilons []float64 `json:"igd_epsilons"`
	// Delta is every run's δ (paper: 0.01).
	Delta float64 `json:"delta"`
	// KDDT caps Figure 2(c)'s training stream (0: all 494,021 records).
	KDDT int `json:"kdd_t"`
	// IGDAlpha and IGDRadius are PIGD's α and ball (the paper gives none).
	IGDAlpha  float64 `json:"igd_alpha"`
	IGDRadius float64 `json:"igd_radius"`
	// Repeats is Figure 2(c)'s number of runs per row (paper: 10).
	Repeats int `json:"repeats"`
	// RegretTs are the horizons of the regret-vs-T figure.
	RegretTs []int `json:"regret_ts"`
	// Progress receives the progress bar (nil: none).
	Progress io.Writer `json:"-"`
}

// DefaultOptions is the paper's configuration where it gives one.
func DefaultOptions() Options {
	return Options{
		Figures: []string{"2a", "2b", "2c", "regret"}, SynthT: 100000, SynthDim: 10,
		FTLEpsilons: []float64{10, 1, 0.1, 0.01}, IGDEpsilons: []float64{20, 10, 1, 0.1}, Delta: 0.01,
		IGDAlpha: 0.01, IGDRadius: 10, Repeats: 10, RegretTs: []int{1000, 3000, 10000, 30000, 100000},
	}
}

// QuickOptions is a smoke configuration of a few seconds.
func QuickOptions() Options {
	o := DefaultOptions()
	o.SynthT, o.BeijingT, o.KDDT, o.Repeats = 5000, 20000, 20000, 2
	o.RegretTs = []int{1000, 3000, 10000}
	return o
}

// Run is one learner's run: its settings, privacy and results.
type Run struct {
	Figure  string          `json:"figure"`
	Name    string          `json:"name"`
	Spec    online.Spec     `json:"spec"`
	Data    string          `json:"data"`
	Privacy *online.Privacy `json:"privacy,omitempty"`
	Final   float64         `json:"final"` // average regret, or accuracy
	Seconds float64         `json:"seconds"`
	Seed    uint64          `json:"seed"`
	Repeat  int             `json:"repeat,omitempty"`
	curve   []online.Checkpoint
}

// Summary is summary.json.
type Summary struct {
	Options Options         `json:"options"`
	Runs    []Run           `json:"runs"`
	Slopes  []Slope         `json:"slopes,omitempty"`
	Tables  map[string]bool `json:"figures_written"`
}

// Slope is a fitted log-log slope of total regret against T.
type Slope struct {
	Name  string  `json:"name"`
	Slope float64 `json:"slope"`
	// Theory is the exponent the theorems give (0 for polylog).
	Theory string `json:"theory"`
}

// Reproduce runs the selected figures and writes their outputs.
func Reproduce(opt Options) (*Summary, error) {
	sum := &Summary{Options: opt, Tables: map[string]bool{}}
	for _, f := range opt.Figures {
		var err error
		switch f {
		case "2a":
			err = fig2ab(opt, sum, "2a", "synthetic")
		case "2b":
			err = fig2ab(opt, sum, "2b", "beijing")
		case "2c":
			err = fig2c(opt, sum)
		case "regret":
			err = regretVsT(opt, sum)
		default:
			err = fmt.Errorf("unknown figure %q (want 2a, 2b, 2c or regret)", f)
		}
		if err != nil {
			return sum, fmt.Errorf("figure %s: %w", f, err)
		}
		sum.Tables[f] = true
	}
	if err := writeEpsilons(opt, sum); err != nil {
		return sum, err
	}
	return sum, figure.WriteJSON(filepath.Join(opt.OutDir, "summary.json"), sum)
}

// play runs one learner over d's stream and returns its checkpoints.
func play(opt Options, spec online.Spec, d *online.Data, seed uint64, at []int) (*Run, error) {
	run := &Run{Spec: spec, Data: d.Name, Seed: seed}
	var led *ledger.Ledger
	if !spec.NonPrivate {
		var err error
		if led, err = ledger.New(account.Budget{Epsilon: math.MaxFloat64, Delta: spec.Calibration.Delta}); err != nil {
			return nil, err
		}
	}
	learner, priv, err := online.NewLearner(spec, led, []string{"repro/" + d.Name})
	if err != nil {
		return nil, err
	}
	run.Privacy = priv
	start := time.Now()
	var r *rng.Rand
	if !spec.NonPrivate {
		r = rng.Seeded(seed)
	}
	run.curve, err = online.Run(r, learner, spec.Cost, d.Train, at, nil)
	if err != nil {
		return nil, err
	}
	run.Seconds = time.Since(start).Seconds()
	if spec.Cost.Loss == online.Squared {
		run.Final = run.curve[len(run.curve)-1].AverageRegret()
	} else {
		run.Final = online.Accuracy(learner.Point(), d.Test)
	}
	return run, nil
}

func ftlSpec(d *online.Data, eps, delta float64, nonPrivate bool) online.Spec {
	return online.Spec{Algorithm: "ftl", Steps: len(d.Train), Batch: 1, NonPrivate: nonPrivate,
		Cost:        online.Cost{Loss: online.Squared, Dim: d.Dim, FeatureBound: d.FeatureBound, LabelBound: d.LabelBound, Alpha: 1, Radius: math.Inf(1)},
		Calibration: online.Calibration{Epsilon: eps, Delta: delta}}
}

// fig2ab is Figure 2(a) or 2(b): average regret against t of FTL and
// private FTL at each ε, with the paper's σ (and the exact calibration at
// the same nominal ε, to show what the exact accounting buys).
func fig2ab(opt Options, sum *Summary, fig, source string) error {
	n := opt.SynthT
	if source == "beijing" {
		n = opt.BeijingT
	}
	d, err := online.LoadData(source, opt.DataDir, online.Squared, n, opt.SynthDim, opt.Seed)
	if err != nil {
		return err
	}
	at := online.Checkpoints(len(d.Train), 60)
	bar := progress.New(opt.Progress, 1+2*len(opt.FTLEpsilons), "fig "+fig)
	defer bar.Finish()
	p := figure.Plot{Title: fmt.Sprintf("Fig. 2(%s): private FTL on %s (d=%d, δ=%g)", fig[1:], d.Name, d.Dim, opt.Delta),
		XLabel: "iteration t", YLabel: "average regret", LogX: true, LogY: true}
	addRun := func(name string, spec online.Spec) error {
		run, err := play(opt, spec, d, opt.Seed, at)
		if err != nil {
			return err
		}
		run.Figure, run.Name = fig, name
		sum.Runs = append(sum.Runs, *run)
		s := figure.Series{Name: name}
		for _, c := range run.curve {
			if v := c.AverageRegret(); v > 0 {
				s.X, s.Y = append(s.X, float64(c.T)), append(s.Y, v)
			}
		}
		if len(s.X) > 0 {
			p.Series = append(p.Series, s)
		}
		bar.Add(1)
		return nil
	}
	if err := addRun("FTL (non-private)", ftlSpec(d, 1, opt.Delta, true)); err != nil {
		return err
	}
	if err := addZero(d, at, &p, sum, fig); err != nil {
		return err
	}
	for _, eps := range opt.FTLEpsilons {
		if err := addRun("PFTL ε="+ftoa(eps)+" (paper σ)", ftlSpec(d, eps, opt.Delta, false)); err != nil {
			return err
		}
	}
	for _, eps := range opt.FTLEpsilons {
		spec := ftlSpec(d, eps, opt.Delta, false)
		spec.Calibration.Exact = true
		if err := addRun("PFTL ε="+ftoa(eps)+" (exact)", spec); err != nil {
			return err
		}
	}
	return p.Save(filepath.Join(opt.OutDir, "fig2"+fig[1:]))
}

// zero is the trivial learner that always plays x = 0: a private learner
// whose regret is above its curve has learnt nothing usable.
type zero struct{ x []float64 }

func (z zero) Point() []float64                        { return z.x }
func (z zero) Observe(*rng.Rand, online.Example) error { return nil }

// addZero adds the trivial learner's curve.
func addZero(d *online.Data, at []int, p *figure.Plot, sum *Summary, fig string) error {
	cost := ftlSpec(d, 1, 0.01, true).Cost
	cps, err := online.Run(nil, zero{make([]float64, d.Dim)}, cost, d.Train, at, nil)
	if err != nil {
		return err
	}
	s := figure.Series{Name: "x = 0 (trivial)"}
	for _, c := range cps {
		if v := c.AverageRegret(); v > 0 {
			s.X, s.Y = append(s.X, float64(c.T)), append(s.Y, v)
		}
	}
	p.Series = append(p.Series, s)
	last := cps[len(cps)-1]
	sum.Runs = append(sum.Runs, Run{Figure: fig, Name: "x = 0 (trivial)", Spec: online.Spec{Algorithm: "zero", Cost: cost, Steps: len(d.Train), NonPrivate: true},
		Data: d.Name, Final: last.AverageRegret()})
	return nil
}

// fig2c is the Figure 2(c) analogue: test accuracy of the final released
// iterate of private IGD (logistic loss) on KDD Cup 99 at each ε, averaged
// over Repeats shuffles, beside non-private IGD and POL (the
// online-to-batch average, one release) at the same ε.
func fig2c(opt Options, sum *Summary) error {
	bar := progress.New(opt.Progress, opt.Repeats*(1+2*len(opt.IGDEpsilons)), "fig 2c")
	defer bar.Finish()
	type row struct {
		name string
		eps  float64
		acc  []float64
		priv *online.Privacy
	}
	rows := []*row{{name: "IGD (non-private)"}}
	for _, e := range opt.IGDEpsilons {
		rows = append(rows, &row{name: "PIGD", eps: e})
	}
	for _, e := range opt.IGDEpsilons {
		rows = append(rows, &row{name: "POL", eps: e})
	}
	full, err := online.LoadData("kdd99", opt.DataDir, online.Logistic, 0, 0, opt.Seed)
	if err != nil {
		return err
	}
	trivial := majority(full.Test)
	for rep := range opt.Repeats {
		seed := opt.Seed + uint64(rep)
		d := *full
		d.Train = make([]online.Example, len(full.Train))
		for i, j := range data.Permutation(len(full.Train), seed) {
			d.Train[i] = full.Train[j]
		}
		if opt.KDDT > 0 && opt.KDDT < len(d.Train) {
			d.Train = d.Train[:opt.KDDT]
		}
		cost := online.Cost{Loss: online.Logistic, Dim: d.Dim, FeatureBound: 1, Alpha: opt.IGDAlpha, Radius: opt.IGDRadius}
		for _, rw := range rows {
			spec := online.Spec{Algorithm: "igd", Cost: cost, Steps: len(d.Train), NonPrivate: rw.eps == 0,
				Calibration: online.Calibration{Epsilon: rw.eps, Delta: opt.Delta, Exact: true}}
			if rw.eps == 0 {
				spec.Calibration.Epsilon = 1 // unused: non-private
			}
			var acc float64
			start := time.Now()
			var priv *online.Privacy
			if rw.name == "POL" {
				led, _ := ledger.New(account.Budget{Epsilon: math.MaxFloat64, Delta: opt.Delta})
				res, err := online.POL(rng.Seeded(seed), cost, d.Train, spec.Calibration, led, []string{"repro/kdd99"})
				if err != nil {
					return err
				}
				acc, priv = online.Accuracy(res.Model, d.Test), &res.Privacy
			} else {
				run, err := play(opt, spec, &d, seed, []int{len(d.Train)})
				if err != nil {
					return err
				}
				acc, priv = run.Final, run.Privacy
			}
			rw.acc, rw.priv = append(rw.acc, acc), priv
			sum.Runs = append(sum.Runs, Run{Figure: "2c", Name: rw.name, Spec: spec, Data: d.Name, Privacy: priv,
				Final: acc, Seconds: time.Since(start).Seconds(), Seed: seed, Repeat: rep})
			bar.Add(1)
		}
	}
	table := [][]string{{"method", "epsilon", "delta", "accuracy_mean", "accuracy_sd", "runs", "exact_epsilon", "charged_epsilon", "majority_class"}}
	p := figure.Plot{Title: "Fig. 2(c) analogue: logistic regression on KDD Cup 99", XLabel: "ε", YLabel: "test accuracy", LogX: true}
	series := map[string]*figure.Series{}
	for _, rw := range rows {
		m, sd := meanSD(rw.acc)
		exact, charged := "", ""
		if rw.priv != nil {
			exact, charged = ftoa(rw.priv.ExactEpsilon), ftoa(rw.priv.ChargedEpsilon)
		}
		table = append(table, []string{rw.name, ftoa(rw.eps), ftoa(opt.Delta), ftoa(m), ftoa(sd), strconv.Itoa(len(rw.acc)), exact, charged, ftoa(trivial)})
		if rw.eps == 0 {
			p.HLines = append(p.HLines, figure.HLine{Name: "IGD (non-private)", Y: m})
			continue
		}
		s := series[rw.name]
		if s == nil {
			s = &figure.Series{Name: rw.name + " (final iterate)", Points: true}
			if rw.name == "POL" {
				s.Name = "POL (averaged, one release)"
			}
			series[rw.name] = s
		}
		s.X, s.Y = append(s.X, rw.eps), append(s.Y, m)
	}
	p.HLines = append(p.HLines, figure.HLine{Name: "majority class", Y: trivial})
	for _, name := range []string{"PIGD", "POL"} {
		if s := series[name]; s != nil {
			p.Series = append(p.Series, *s)
		}
	}
	if err := figure.WriteCSV(filepath.Join(opt.OutDir, "fig2c.csv"), table); err != nil {
		return err
	}
	return p.SavePNG(filepath.Join(opt.OutDir, "fig2c.png"))
}

// regretVsT runs FTL, private FTL (ε = 1, exact) and private IGD on the
// squared loss (ε = 1, exact, C the ball of radius 10) on synthetic streams
// of each horizon T, and fits the slope of log total regret against log T.
func regretVsT(opt Options, sum *Summary) error {
	maxT := opt.RegretTs[len(opt.RegretTs)-1]
	d, err := online.LoadData("synthetic", opt.DataDir, online.Squared, maxT, opt.SynthDim, opt.Seed)
	if err != nil {
		return err
	}
	type curve struct {
		name, theory string
		spec         func(*online.Data) online.Spec
	}
	curves := []curve{
		{"FTL (non-private)", "log T (Kakade–Shalev-Shwartz)", func(d *online.Data) online.Spec { return ftlSpec(d, 1, opt.Delta, true) }},
		{"PFTL ε=1 (exact)", "polylog T (Theorem 4)", func(d *online.Data) online.Spec {
			s := ftlSpec(d, 1, opt.Delta, false)
			s.Calibration.Exact = true
			return s
		}},
		{"PIGD squared ε=1 (exact)", "√T (Theorem 2)", func(d *online.Data) online.Spec {
			s := ftlSpec(d, 1, opt.Delta, false)
			s.Algorithm, s.Calibration.Exact, s.Cost.Radius, s.Cost.Alpha = "igd", true, 10, 1
			return s
		}},
	}
	bar := progress.New(opt.Progress, len(curves)*len(opt.RegretTs), "regret vs T")
	defer bar.Finish()
	p := figure.Plot{Title: "Total regret against T (synthetic, d=" + strconv.Itoa(d.Dim) + ")", XLabel: "T", YLabel: "regret", LogX: true, LogY: true}
	table := [][]string{{"method", "T", "regret", "exact_epsilon"}}
	for _, c := range curves {
		s := figure.Series{Name: c.name, Points: true}
		for _, T := range opt.RegretTs {
			sub := *d
			sub.Train = d.Train[:T]
			run, err := play(opt, c.spec(&sub), &sub, opt.Seed, []int{T})
			if err != nil {
				return err
			}
			run.Figure, run.Name = "regret", c.name
			sum.Runs = append(sum.Runs, *run)
			last := run.curve[len(run.curve)-1]
			reg := last.Loss - last.Best
			exact := ""
			if run.Privacy != nil {
				exact = ftoa(run.Privacy.ExactEpsilon)
			}
			table = append(table, []string{c.name, strconv.Itoa(T), ftoa(reg), exact})
			if reg > 0 {
				s.X, s.Y = append(s.X, float64(T)), append(s.Y, reg)
			}
			bar.Add(1)
		}
		sum.Slopes = append(sum.Slopes, Slope{Name: c.name, Slope: logSlope(s.X, s.Y), Theory: c.theory})
		p.Series = append(p.Series, s)
	}
	if err := figure.WriteCSV(filepath.Join(opt.OutDir, "regret_vs_T.csv"), table); err != nil {
		return err
	}
	return p.SavePNG(filepath.Join(opt.OutDir, "regret_vs_T.png"))
}

// writeEpsilons writes every private run's nominal, exact and charged ε.
func writeEpsilons(opt Options, sum *Summary) error {
	rows := [][]string{{"figure", "run", "T", "nominal_epsilon", "nominal_delta", "exact_epsilon", "charged_epsilon", "delta", "mu", "proof_note"}}
	seen := map[string]bool{}
	for _, r := range sum.Runs {
		key := r.Figure + r.Name + strconv.Itoa(r.Spec.Steps)
		if r.Privacy == nil || seen[key] {
			continue
		}
		seen[key] = true
		p := r.Privacy
		rows = append(rows, []string{r.Figure, r.Name + " ε=" + ftoa(r.Spec.Calibration.Epsilon), strconv.Itoa(r.Spec.Steps),
			ftoa(p.NominalEpsilon), ftoa(p.NominalDelta), ftoa(p.ExactEpsilon), ftoa(p.ChargedEpsilon), ftoa(p.Delta), ftoa(p.Mu), p.ProofNote})
	}
	return figure.WriteCSV(filepath.Join(opt.OutDir, "epsilons.csv"), rows)
}

// logSlope is the least-squares slope of log y against log x.
func logSlope(x, y []float64) float64 {
	if len(x) < 2 {
		return math.NaN()
	}
	var sx, sy, sxx, sxy float64
	for i := range x {
		lx, ly := math.Log(x[i]), math.Log(y[i])
		sx, sy, sxx, sxy = sx+lx, sy+ly, sxx+lx*lx, sxy+lx*ly
	}
	n := float64(len(x))
	return (n*sxy - sx*sy) / (n*sxx - sx*sx)
}

func meanSD(v []float64) (mean, sd float64) {
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	for _, x := range v {
		sd += (x - mean) * (x - mean)
	}
	if len(v) > 1 {
		sd = math.Sqrt(sd / float64(len(v)-1))
	}
	return mean, sd
}

// majority is the accuracy of always predicting the more common label.
func majority(test []online.Example) float64 {
	pos := 0
	for _, ex := range test {
		if ex.Y > 0 {
			pos++
		}
	}
	return float64(max(pos, len(test)-pos)) / float64(len(test))
}

func ftoa(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }
