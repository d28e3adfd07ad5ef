package streamrepro

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"

	"gonum.org/v1/gonum/stat"

	"github.com/dpal-dev/dpal/active/stream"
	"github.com/dpal-dev/dpal/repro/figure"
)

// spread says which band a plotted curve carries.
type spread int

const (
	// quartiles shades the 25 %–75 % range over permutations: the runs
	// are often bimodal (a model pointing the wrong way), which ±1 std
	// hides and which pushes its band below zero.
	quartiles spread = iota
	// stdDev draws mean ± 1 standard deviation, the paper's Fig. 4 bars.
	stdDev
)

// curve is one plotted series with the statistics behind it.
type curve struct {
	series figure.Series
	stats  [][]string
}

// figures writes the requested figures of one dataset and returns their
// base paths (each has .png, .csv and _stats.csv). Errors are in percent,
// as in the paper.
func (e *experiment) figures(results map[method][]runResult, batchErr, constErr float64) ([]string, error) {
	s, w := e.set, e.opt.Window
	refs := []figure.HLine{
		{Name: "NonPrivate-Batch", Y: 100 * batchErr},
		{Name: "Constant +1 (w = 0)", Y: 100 * constErr},
	}
	type plot struct {
		file   string
		p      figure.Plot
		curves []curve
	}
	var plots []*plot
	newPlot := func(file, what, xl, yl string, hl []figure.HLine) *plot {
		p := &plot{file: file, p: figure.Plot{
			Title:  fmt.Sprintf("%s: %s (%d permutations)", s.Name, what, e.opt.Perms),
			XLabel: xl, YLabel: yl, HLines: hl,
		}}
		plots = append(plots, p)
		return p
	}
	add := func(p *plot, c curve) {
		p.p.Series = append(p.p.Series, c.series)
		p.curves = append(p.curves, c)
	}
	base := append(baseMethods(w), nonPrivateMethod(w))
	if e.opt.wants(2) {
		p := newPlot("fig2_error_vs_updates", "error over time", "Number of updates", "Error rate (%)", refs)
		for _, m := range base {
			add(p, curveOf(m.name(w), grid(float64(s.Updates), s.Updates), perRun(results[m], pickUpdate), 100, quartiles, false))
		}
	}
	if e.opt.wants(3) {
		p := newPlot("fig3_error_vs_labels", "error vs labels requested", "Number of labeled points", "Error rate (%)", refs)
		for _, m := range base {
			add(p, curveOf(m.name(w), labelGrid(s), perRun(results[m], pickLabels), 100, quartiles, false))
		}
	}
	if e.opt.wants(4) {
		p := newPlot("fig4_error_vs_batch_size", fmt.Sprintf("error after %d labels, Bernoulli", s.Fig4Labels),
			"Batch size (FLMB: L; FLSW: window N)", "Error rate (%)", refs)
		xs := make([]float64, len(e.opt.BatchSizes))
		for i, b := range e.opt.BatchSizes {
			xs[i] = float64(b)
		}
		for _, pol := range []stream.PolicyKind{stream.FLMB, stream.FLSW} {
			per := make([][]float64, e.opt.Perms)
			for _, b := range e.opt.BatchSizes {
				for i, r := range results[method{Selector: stream.Bernoulli, Policy: pol, Window: b}] {
					per[i] = append(per[i], r.ErrorAtFig4Labels)
				}
			}
			name := "Bernoulli-" + map[stream.PolicyKind]string{stream.FLSW: "FLSW", stream.FLMB: "FLMB"}[pol]
			add(p, curveOf(name, xs, per, 100, stdDev, true))
		}
	}
	if e.opt.wants(5) {
		pa := newPlot("fig5a_labels_vs_observations", "labels requested, fixed vs shrinking slab",
			"Number of observations", "Number of labels requested", nil)
		pb := newPlot("fig5b_error_vs_labels", "error vs labels, fixed vs shrinking slab",
			"Number of labeled points", "Error rate (%)", refs)
		for _, pol := range []stream.PolicyKind{stream.FLMB, stream.FLSW} {
			for _, shrink := range []bool{false, true} {
				m := method{Selector: stream.Bernoulli, Policy: pol, Window: w, Shrinking: shrink}
				name := m.name(w)
				if !shrink {
					name += "-fixed"
				}
				add(pa, curveOf(name, obsGrid(s), perRun(results[m], pickObs), 1, quartiles, false))
				add(pb, curveOf(name, labelGrid(s), perRun(results[m], pickLabels), 100, quartiles, false))
			}
		}
	}
	var files []string
	for _, p := range plots {
		path := filepath.Join(e.opt.OutDir, s.Name, p.file)
		if err := p.p.Save(path); err != nil {
			return nil, err
		}
		rows := [][]string{{"series", "x", "mean", "std", "q25", "median", "q75", "min", "max", "runs"}}
		for _, c := range p.curves {
			rows = append(rows, c.stats...)
		}
		if err := figure.WriteCSV(path+"_stats.csv", rows); err != nil {
			return nil, err
		}
		files = append(files, path)
	}
	return files, nil
}

func pickUpdate(r runResult) []float64 { return r.byUpdate }
func pickLabels(r runResult) []float64 { return r.byLabels }
func pickObs(r runResult) []float64    { return r.labelsByObs }

// perRun collects the curve pick extracts from each run.
func perRun(rs []runResult, pick func(runResult) []float64) [][]float64 {
	per := make([][]float64, len(rs))
	for i, r := range rs {
		per[i] = pick(r)
	}
	return per
}

// curveOf turns per-run curves (per[run][point]) into the mean curve with
// the chosen band, all scaled by scale, plus a statistics row per point.
func curveOf(name string, xs []float64, per [][]float64, scale float64, sp spread, points bool) curve {
	c := curve{series: figure.Series{Name: name, X: xs, Points: points}}
	vals := make([]float64, len(per))
	for j, x := range xs {
		for i := range per {
			vals[i] = scale * per[i][j]
		}
		m, sd := meanStd(vals)
		slices.Sort(vals)
		q25, med, q75 := quantile(0.25, vals), quantile(0.5, vals), quantile(0.75, vals)
		lo, hi := q25, q75
		if sp == stdDev {
			lo, hi = m-sd, m+sd
		}
		c.series.Y = append(c.series.Y, m)
		c.series.Lo = append(c.series.Lo, lo)
		c.series.Hi = append(c.series.Hi, hi)
		c.stats = append(c.stats, []string{name, ftoa(x), ftoa(m), ftoa(sd), ftoa(q25), ftoa(med), ftoa(q75),
			ftoa(vals[0]), ftoa(vals[len(vals)-1]), strconv.Itoa(len(vals))})
	}
	return c
}

// quantile is the linearly interpolated p-quantile of sorted values.
func quantile(p float64, sorted []float64) float64 {
	if len(sorted) == 1 {
		return sorted[0]
	}
	return stat.Quantile(p, stat.LinInterp, sorted, nil)
}

func ftoa(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
