package streamrepro

import (
	"math"
	"sort"

	"gonum.org/v1/gonum/stat"
)

// trajectory is one learner run: the released models in update order
// (index 0 is the initial w = 0) with the stream position and the number of
// labels requested when each was released, the cumulative label count after
// every observation, and test errors computed on demand.
type trajectory struct {
	W           [][]float64
	Obs         []int
	Labels      []int
	LabelsAtObs []int32
	EpsRecord   *float64  // the ledger's largest per-record ε; nil when not private
	Final       []float64 // the final model (Config.FinalShare > 0), released at the end
	errs        []float64
	eval        func(w []float64) float64
}

// updates returns the number of updates (releases after the initial model).
func (t *trajectory) updates() int { return len(t.W) - 1 }

// errAt returns the test error of the k-th released model, computing it once.
func (t *trajectory) errAt(k int) float64 {
	if t.errs == nil {
		t.errs = make([]float64, len(t.W))
		for i := range t.errs {
			t.errs[i] = math.NaN()
		}
	}
	if math.IsNaN(t.errs[k]) {
		t.errs[k] = t.eval(t.W[k])
	}
	return t.errs[k]
}

// errAtUpdate is the error after k updates; past the run's end the last
// model stays in force.
func (t *trajectory) errAtUpdate(k int) float64 {
	return t.errAt(min(k, t.updates()))
}

// errAtLabels is the error at a label count x by the paper's piece-wise
// linear interpolation between consecutive releases (§5, "Error rate versus
// label cost"). Several releases at one label count use the latest; past the
// last release the last model stays in force.
func (t *trajectory) errAtLabels(x float64) float64 {
	// k is the last release with Labels[k] ≤ x.
	k := sort.Search(len(t.Labels), func(i int) bool { return float64(t.Labels[i]) > x }) - 1
	if k < 0 {
		return t.errAt(0)
	}
	if k >= t.updates() {
		return t.errAt(t.updates())
	}
	x0, x1 := float64(t.Labels[k]), float64(t.Labels[k+1])
	e0, e1 := t.errAt(k), t.errAt(k+1)
	if x1 == x0 {
		return e1
	}
	return e0 + (e1-e0)*(x-x0)/(x1-x0)
}

// labelsAtObs is the number of labels requested after n observations; past
// the run's end the count stays at its last value.
func (t *trajectory) labelsAtObs(n int) float64 {
	if n <= 0 || len(t.LabelsAtObs) == 0 {
		return 0
	}
	return float64(t.LabelsAtObs[min(n, len(t.LabelsAtObs))-1])
}

// meanStd returns the mean and sample standard deviation (0 when n < 2).
func meanStd(v []float64) (mean, std float64) {
	if len(v) < 2 {
		return stat.Mean(v, nil), 0
	}
	return stat.MeanStdDev(v, nil)
}

// grid returns n+1 equally spaced points from 0 to hi.
func grid(hi float64, n int) []float64 {
	xs := make([]float64, n+1)
	for i := range xs {
		xs[i] = hi * float64(i) / float64(n)
	}
	return xs
}
