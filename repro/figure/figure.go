// Package figure owns the output side of dpal's paper reproductions: line
// plots written as PNG (gonum/plot), the same data as long-format CSV, and
// JSON summaries. Per-paper harnesses only build Plot values; how a figure
// looks is decided here, once.
package figure

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Series is one curve. Lo and Hi, when set, have the same length as X and
// draw a shaded band (a spread over repetitions, say).
type Series struct {
	// Name labels the curve in the legend and the CSV.
	Name string
	// X and Y are the curve's points, of equal length.
	X, Y []float64
	// Lo and Hi bound the shaded band at each X; the band is drawn only
	// when both are set.
	Lo, Hi []float64
	// Points draws markers as well as the line.
	Points bool
}

// HLine is a horizontal reference line across the plot, such as a
// non-private baseline.
type HLine struct {
	// Name labels the line in the legend.
	Name string
	// Y is the line's height.
	Y float64
}

// Plot is a figure: axes, curves and reference lines.
type Plot struct {
	// Title, XLabel and YLabel are the figure's and the axes' captions.
	Title, XLabel, YLabel string
	// Series are the curves, coloured and marked in order.
	Series []Series
	// HLines are the horizontal reference lines.
	HLines []HLine
	// LogX and LogY put the axis on a log scale (values must be > 0).
	LogX, LogY bool
}

// Validate reports a series whose lengths disagree or that holds no point.
func (p *Plot) Validate() error {
	if len(p.Series) == 0 && len(p.HLines) == 0 {
		return errors.New("figure: plot has nothing to draw")
	}
	for _, s := range p.Series {
		if len(s.X) != len(s.Y) {
			return fmt.Errorf("figure: series %q has %d x and %d y values", s.Name, len(s.X), len(s.Y))
		}
		if (s.Lo != nil && len(s.Lo) != len(s.X)) || (s.Hi != nil && len(s.Hi) != len(s.X)) {
			return fmt.Errorf("figure: series %q band length differs from its %d points", s.Name, len(s.X))
		}
	}
	return nil
}

// SavePNG renders the plot to path (parent directories are created).
func (p *Plot) SavePNG(path string) error {
	if err := p.Validate(); err != nil {
		return err
	}
	pl := plot.New()
	pl.Title.Text = p.Title
	pl.X.Label.Text = p.XLabel
	pl.Y.Label.Text = p.YLabel
	pl.Legend.Top = true
	pl.Add(plotter.NewGrid())
	if p.LogX {
		pl.X.Scale = plot.LogScale{}
		pl.X.Tick.Marker = logTicks{}
	}
	if p.LogY {
		pl.Y.Scale = plot.LogScale{}
		pl.Y.Tick.Marker = logTicks{}
	}
	for i, s := range p.Series {
		if err := addSeries(pl, s, plotutil.Color(i), plotutil.Shape(i)); err != nil {
			return fmt.Errorf("figure %q: %w", p.Title, err)
		}
	}
	if err := addHLines(pl, p.HLines, len(p.Series)); err != nil {
		return fmt.Errorf("figure %q: %w", p.Title, err)
	}
	pl.Legend.Top, pl.Legend.Left = p.legendCorner(pl)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("figure: %w", err)
	}
	if err := pl.Save(7*vg.Inch, 4.5*vg.Inch, path); err != nil {
		return fmt.Errorf("figure: saving %s: %w", path, err)
	}
	return nil
}

func addSeries(pl *plot.Plot, s Series, c color.Color, shape draw.GlyphDrawer) error {
	if s.Lo != nil && s.Hi != nil {
		band := make(plotter.XYs, 0, 2*len(s.X))
		for i := range s.X {
			band = append(band, plotter.XY{X: s.X[i], Y: s.Hi[i]})
		}
		for i := len(s.X) - 1; i >= 0; i-- {
			band = append(band, plotter.XY{X: s.X[i], Y: s.Lo[i]})
		}
		poly, err := plotter.NewPolygon(band)
		if err != nil {
			return fmt.Errorf("band of %q: %w", s.Name, err)
		}
		r, g, b, _ := c.RGBA()
		poly.Color = color.NRGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(b >> 8), A: 50}
		poly.LineStyle.Width = 0
		pl.Add(poly)
	}
	line, err := plotter.NewLine(xys(s.X, s.Y))
	if err != nil {
		return fmt.Errorf("series %q: %w", s.Name, err)
	}
	line.Color = c
	line.Width = vg.Points(1.5)
	pl.Add(line)
	pl.Legend.Add(s.Name, line)
	if s.Points {
		pts, err := plotter.NewScatter(xys(s.X, s.Y))
		if err != nil {
			return fmt.Errorf("series %q: %w", s.Name, err)
		}
		pts.Color = c
		pts.Shape = shape
		pl.Add(pts)
	}
	return nil
}

func addHLines(pl *plot.Plot, hs []HLine, offset int) error {
	if len(hs) == 0 {
		return nil
	}
	xmin, xmax := pl.X.Min, pl.X.Max
	if xmin == xmax {
		xmax = xmin + 1
	}
	for i, h := range hs {
		l, err := plotter.NewLine(plotter.XYs{{X: xmin, Y: h.Y}, {X: xmax, Y: h.Y}})
		if err != nil {
			return fmt.Errorf("reference line %q: %w", h.Name, err)
		}
		l.Color = plotutil.Color(offset + i)
		l.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
		l.Width = vg.Points(1.5)
		pl.Add(l)
		pl.Legend.Add(h.Name, l)
	}
	return nil
}

// legendCorner picks the plot corner whose quarter-box (the right or left
// 40 %, top or bottom 30 % of the axes) holds the fewest data points, so the
// legend hides as little of the data as possible; ties keep the top right.
func (p *Plot) legendCorner(pl *plot.Plot) (top, left bool) {
	best := -1
	for _, c := range []struct{ top, left bool }{{true, false}, {true, true}, {false, false}, {false, true}} {
		n := 0
		for _, s := range p.Series {
			for i := range s.X {
				fx := axisFraction(pl.X, s.X[i])
				fy := axisFraction(pl.Y, s.Y[i])
				inX := (c.left && fx <= 0.4) || (!c.left && fx >= 0.6)
				inY := (c.top && fy >= 0.7) || (!c.top && fy <= 0.3)
				if inX && inY {
					n++
				}
			}
		}
		if best < 0 || n < best {
			best, top, left = n, c.top, c.left
		}
	}
	return top, left
}

// axisFraction is v's position along the axis in [0, 1] under its scale.
func axisFraction(a plot.Axis, v float64) float64 {
	if !isFinite(v) || a.Max == a.Min {
		return -1
	}
	return a.Scale.Normalize(a.Min, a.Max, v)
}

// xys drops non-finite points, which gonum/plot rejects.
func xys(x, y []float64) plotter.XYs {
	out := make(plotter.XYs, 0, len(x))
	for i := range x {
		if isFinite(x[i]) && isFinite(y[i]) {
			out = append(out, plotter.XY{X: x[i], Y: y[i]})
		}
	}
	return out
}

func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// SaveCSV writes the plot's data in long format: one row per point with
// columns series, x, y, lo, hi (empty when a series has no band), then one
// row per reference line with an empty x.
func (p *Plot) SaveCSV(path string) error {
	if err := p.Validate(); err != nil {
		return err
	}
	rows := [][]string{{"series", "x", "y", "lo", "hi"}}
	for _, s := range p.Series {
		for i := range s.X {
			rows = append(rows, []string{s.Name, ftoa(s.X[i]), ftoa(s.Y[i]), at(s.Lo, i), at(s.Hi, i)})
		}
	}
	for _, h := range p.HLines {
		rows = append(rows, []string{h.Name, "", ftoa(h.Y), "", ""})
	}
	return WriteCSV(path, rows)
}

// Save writes base+".png" and base+".csv".
func (p *Plot) Save(base string) error {
	if err := p.SavePNG(base + ".png"); err != nil {
		return err
	}
	return p.SaveCSV(base + ".csv")
}

func at(v []float64, i int) string {
	if v == nil {
		return ""
	}
	return ftoa(v[i])
}

func ftoa(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// WriteCSV writes rows (the first is the header) to path, creating parent
// directories.
func WriteCSV(path string, rows [][]string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("figure: %w", err)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("figure: %w", err)
	}
	w := csv.NewWriter(f)
	if err := w.WriteAll(rows); err != nil {
		f.Close()
		return fmt.Errorf("figure: writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("figure: closing %s: %w", path, err)
	}
	return nil
}

// WriteJSON writes v as indented JSON to path, creating parent directories.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("figure: encoding %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("figure: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("figure: %w", err)
	}
	return nil
}

// logTicks labels a log axis at 1, 2 and 5 times each power of ten, with
// unlabelled minor ticks between: gonum's LogTicks labels powers of ten
// only, which leaves an axis spanning less than a decade nearly bare.
type logTicks struct{}

// Ticks implements plot.Ticker.
func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(lo > 0) || !(hi > lo) {
		return plot.LogTicks{Prec: -1}.Ticks(lo, hi)
	}
	var ticks []plot.Tick
	for p := math.Floor(math.Log10(lo)); p <= math.Ceil(math.Log10(hi)); p++ {
		base := math.Pow(10, p)
		for m := 1; m <= 9; m++ {
			v := float64(m) * base
			if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || m == 2 || m == 5 {
				t.Label = tickLabel(v)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

// tickLabel writes plain decimals across the ranges the figures use (0.001
// to 10⁶) and exponent notation only beyond them.
func tickLabel(v float64) string {
	if a := math.Abs(v); a >= 1e-3 && a < 1e6 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}
