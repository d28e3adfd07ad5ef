package searchrepro

import (
	"fmt"
	"math"
	"slices"

	"github.com/dpal-dev/dpal/data"
	"github.com/dpal-dev/dpal/groupsearch"
)

// RollingWindow is the half-width of the centred window of the robust
// deviation score.
const RollingWindow = 24

// ScoreKind names a non-private anomaly score per point.
type ScoreKind string

// The two scores of the note (§6.1 asks for "an anomaly score per point").
const (
	// Raw is the value itself, shifted so the series minimum is 0 when any
	// value is negative.
	Raw ScoreKind = "raw"
	// Robust is |value − rolling median| / MAD: the rolling median over the
	// centred window of 2·RollingWindow+1 points, MAD the median absolute
	// deviation from it over the whole series.
	Robust ScoreKind = "robust"
)

// Scores computes the score of kind for every point of values.
func Scores(values []float64, kind ScoreKind) []float64 {
	out := make([]float64, len(values))
	switch kind {
	case Raw:
		lo := min(0, slices.Min(values))
		for i, v := range values {
			out[i] = v - lo
		}
	case Robust:
		dev := make([]float64, len(values))
		win := make([]float64, 0, 2*RollingWindow+1)
		for i := range values {
			win = append(win[:0], values[max(0, i-RollingWindow):min(len(values), i+RollingWindow+1)]...)
			dev[i] = math.Abs(values[i] - median(win))
		}
		mad := median(slices.Clone(dev))
		if mad == 0 {
			mad = meanOf(dev)
		}
		if mad == 0 {
			mad = 1
		}
		for i, d := range dev {
			out[i] = d / mad
		}
	}
	return out
}

// median sorts xs in place and returns its median.
func median(xs []float64) float64 {
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

func meanOf(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// Instance is one search problem built as in §6.1: scores, the anomaly and
// the thresholds derived from the data.
type Instance struct {
	// Name names the series (NAB file or synthetic shape).
	Name string `json:"name"`
	// Score is the anomaly score used (raw value or robust deviation).
	Score ScoreKind `json:"score"`
	// Shape is the synthetic shape, empty for NAB.
	Shape string `json:"shape,omitempty"`
	// Scores holds one score per point.
	Scores []float64 `json:"-"`
	// Star is the anomaly's index.
	Star int `json:"star"`
	// XStar is x*, the anomaly's score.
	XStar float64 `json:"x_star"`
	// XJ is x_j, the largest other score.
	XJ float64 `json:"x_j"`
	// TLow is t_ℓ = x_j + 0.1(x* − x_j).
	TLow float64 `json:"t_low"`
	// THigh is t_h = x* − 0.1(x* − x_j).
	THigh float64 `json:"t_high"`
	// Ratio is the threshold ratio (t_h − t_ℓ)/t_ℓ.
	Ratio float64 `json:"threshold_ratio"`
}

// Params returns the instance's public parameters at ε.
func (in *Instance) Params(eps float64) groupsearch.Params {
	return groupsearch.Params{TLow: in.TLow, THigh: in.THigh, Epsilon: eps}
}

// NewInstance applies §6.1 to scores with labelled anomalies: keep the
// largest labelled anomaly i*, let x_j be the largest other score and set
// the thresholds. ok is false when x* is not the strict maximum (the series
// does not fit eq. 1 with a single anomaly).
func NewInstance(name string, kind ScoreKind, scores []float64, anomaly []bool) (in Instance, ok bool, err error) {
	star := -1
	for i, a := range anomaly {
		if a && (star < 0 || scores[i] > scores[star]) {
			star = i
		}
	}
	if star < 0 {
		return in, false, fmt.Errorf("%s: no labelled anomaly", name)
	}
	in = Instance{Name: name, Score: kind, Scores: scores, Star: star, XStar: scores[star], XJ: math.Inf(-1)}
	for i, x := range scores {
		if i != star {
			in.XJ = max(in.XJ, x)
		}
	}
	if !(in.XStar > in.XJ) {
		return in, false, nil
	}
	d := in.XStar - in.XJ
	in.TLow, in.THigh = in.XJ+0.1*d, in.XStar-0.1*d
	in.Ratio = (in.THigh - in.TLow) / in.TLow
	return in, true, nil
}

// NABInstances builds the instances of every labelled NAB series for each
// score kind and reports the series that do not fit (the labelled anomaly
// is not the maximum score).
func NABInstances(series []data.Series, kinds []ScoreKind) (fit []Instance, misfit map[ScoreKind][]string) {
	misfit = map[ScoreKind][]string{}
	for _, s := range series {
		if s.Anomalies() == 0 {
			continue
		}
		for _, k := range kinds {
			in, ok, err := NewInstance(s.Name, k, Scores(s.Value, k), s.Anomaly)
			if err != nil || !ok {
				misfit[k] = append(misfit[k], s.Name)
				continue
			}
			fit = append(fit, in)
		}
	}
	return fit, misfit
}
