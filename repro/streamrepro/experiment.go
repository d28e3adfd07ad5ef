package streamrepro

import (
	"fmt"
	"math"
	"slices"
	"time"

	"gonum.org/v1/gonum/floats"

	"github.com/dpal-dev/dpal/active/stream"
	"github.com/dpal-dev/dpal/data"
	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/model"
	"github.com/dpal-dev/dpal/progress"
)

// experiment is one dataset's share of Run.
type experiment struct {
	opt       *Options
	set       Dataset
	permSeeds []uint64
	seed      uint64
	bar       *progress.Bar
}

func (e *experiment) tick() {
	e.bar.Add(1)
}

// runResult is what the figures need from one run, computed as soon as
// the run ends so that its released models can be dropped.
type runResult struct {
	RunRecord
	byUpdate, byLabels, labelsByObs []float64
}

func (e *experiment) run() (*DatasetSummary, error) {
	start := time.Now()
	train, test := e.set.Train, e.set.Test
	if train == nil || test == nil || train.Len() == 0 || test.Len() == 0 {
		return nil, fmt.Errorf("empty training or test split")
	}
	for _, d := range []*data.Dataset{train, test} {
		if err := d.Validate(); err != nil {
			return nil, err
		}
	}
	if e.opt.Centre {
		train, test = centred(train, test)
		e.set.Train, e.set.Test = train, test
	}
	r := rng.Seeded(e.seed)
	testSeed, cvSeed, valSeed := r.Uint64(), r.Uint64(), r.Uint64()
	evalSet := subsample(test, e.opt.TestRows, testSeed)
	fitIdx, valIdx, err := data.SplitTrainTest(train.Len(), e.opt.CVFrac, cvSeed)
	if err != nil {
		return nil, fmt.Errorf("cross-validation split: %w", err)
	}
	fit := train.Subset(fitIdx)
	val := subsample(train.Subset(valIdx), e.opt.ValRows, valSeed)

	ds := &DatasetSummary{
		Name: e.set.Name, Dim: train.Dim(), TrainRows: train.Len(), TestRows: test.Len(),
		TestEvalRows: evalSet.Len(), TestSubsampleSeed: testSeed,
		Horizons: Horizons{Updates: e.set.Updates, Labels: e.set.Labels, Fig4Labels: e.set.Fig4Labels, Fig5Obs: fig5Obs(e.set)},
	}
	if ds.BatchSVM, err = e.batchSVM(train, test, evalSet, fit, val); err != nil {
		return nil, err
	}
	if ds.CV, err = e.crossValidate(fit, val, cvSeed); err != nil {
		return nil, err
	}
	results, err := e.runAll(evalSet, ds.CV.Chosen)
	if err != nil {
		return nil, err
	}
	ms, _ := plan(e.opt, e.set)
	for _, m := range ms {
		ds.Methods = append(ds.Methods, summarise(m.name(e.opt.Window), results[m]))
		for _, res := range results[m] {
			ds.Runs = append(ds.Runs, res.RunRecord)
		}
	}
	ds.ConstantError = model.ErrorRate(make([]float64, train.Dim()), evalSet.X, evalSet.Y)
	if ds.Figures, err = e.figures(results, ds.BatchSVM.TestErrorEval, ds.ConstantError); err != nil {
		return nil, err
	}
	ds.Seconds = time.Since(start).Seconds()
	return ds, nil
}

// subsample returns at most n rows of d chosen by seed (all when n is 0 or
// d is no larger), in their original order.
func subsample(d *data.Dataset, n int, seed uint64) *data.Dataset {
	if n == 0 || d.Len() <= n {
		return d
	}
	idx := data.Permutation(d.Len(), seed)[:n]
	slices.Sort(idx)
	return d.Subset(idx)
}

// batchSVM fits the "NonPrivate-Batch" baseline: λ cross-validated on
// (fit, val) when the grid has several values, then a fit on the whole
// training split with all labels.
func (e *experiment) batchSVM(train, test, evalSet, fit, val *data.Dataset) (BatchSVM, error) {
	out := BatchSVM{LambdaGrid: e.opt.SVMLambdaGrid, Lambda: e.opt.SVMLambdaGrid[0]}
	if len(e.opt.SVMLambdaGrid) > 1 {
		best := math.Inf(1)
		for _, lambda := range e.opt.SVMLambdaGrid {
			w, err := model.TrainLinearSVM(fit.X, fit.Y, model.SVMOptions{Lambda: lambda})
			if err != nil {
				return out, fmt.Errorf("batch SVM: %w", err)
			}
			v := model.ErrorRate(w, val.X, val.Y)
			out.ValErrors = append(out.ValErrors, v)
			if v < best {
				best, out.Lambda = v, lambda
			}
			e.tick()
		}
	}
	t0 := time.Now()
	w, err := model.TrainLinearSVM(train.X, train.Y, model.SVMOptions{Lambda: out.Lambda})
	if err != nil {
		return out, fmt.Errorf("batch SVM: %w", err)
	}
	out.TrainSeconds = time.Since(t0).Seconds()
	out.TrainError = model.ErrorRate(w, train.X, train.Y)
	out.TestError = model.ErrorRate(w, test.X, test.Y)
	out.TestErrorEval = model.ErrorRate(w, evalSet.X, evalSet.Y)
	e.tick()
	return out, nil
}

// crossValidate picks η and λ for each policy (Bernoulli selection, the
// default window) and for the non-private baseline, by the validation
// error averaged over 1/4, 1/2, 3/4 and all of both Fig. 2's update range
// and Fig. 3's label range, and over CVReps stream orders of the fit part.
// The exponential selector and the other windows reuse their policy's
// choice.
func (e *experiment) crossValidate(fit, val *data.Dataset, seed uint64) (CV, error) {
	out := CV{
		EtaGrid: e.opt.EtaGrid, LambdaGrid: e.opt.LambdaGrid, Reps: e.opt.CVReps,
		FitRows: fit.Len(), ValRows: val.Len(), Seed: seed,
		Criterion: "mean validation error at 1/4, 1/2, 3/4 and 1 x the update range (Fig. 2) and the label range (Fig. 3); Bernoulli selector, default window",
		Chosen:    map[string]hyper{},
	}
	eval := func(w []float64) float64 { return model.ErrorRate(w, val.X, val.Y) }
	stop := stopRule{Updates: e.set.Updates, Labels: e.set.Labels}
	for _, m := range cvMethods(e.opt.Window) {
		best := math.Inf(1)
		for _, eta := range e.opt.EtaGrid {
			for _, lambda := range e.opt.LambdaGrid {
				h := hyper{eta, lambda}
				var score float64
				for rep := range e.opt.CVReps {
					s := mix(seed, uint64(rep))
					t, err := runLearner(e.opt.config(fit.Dim(), m, h), mix(s, 1), fit, data.Permutation(fit.Len(), s), stop, eval)
					if err != nil {
						return out, fmt.Errorf("cross-validation %s %+v: %w", m.name(e.opt.Window), h, err)
					}
					for _, q := range []float64{0.25, 0.5, 0.75, 1} {
						score += t.errAtLabels(q*float64(stop.Labels)) + t.errAtUpdate(int(q*float64(stop.Updates)))
					}
					e.tick()
				}
				score /= float64(8 * e.opt.CVReps)
				out.Scores = append(out.Scores, CVScore{Method: m.cvKey(), Eta: eta, Lambda: lambda, ValError: score})
				if score < best {
					best, out.Chosen[m.cvKey()] = score, h
				}
			}
		}
	}
	return out, nil
}

// cvMethods are the runs whose η and λ are cross-validated.
func cvMethods(w int) []method {
	return []method{
		{Selector: stream.Bernoulli, Policy: stream.FLSW, Window: w},
		{Selector: stream.Bernoulli, Policy: stream.FLMB, Window: w},
		nonPrivateMethod(w),
	}
}

// runAll runs every planned method on every permutation.
func (e *experiment) runAll(evalSet *data.Dataset, chosen map[string]hyper) (map[method][]runResult, error) {
	ms, stops := plan(e.opt, e.set)
	train := e.set.Train
	eval := func(w []float64) float64 { return model.ErrorRate(w, evalSet.X, evalSet.Y) }
	out := map[method][]runResult{}
	for pi, ps := range e.permSeeds {
		perm := data.Permutation(train.Len(), ps)
		for mi, m := range ms {
			h := chosen[m.cvKey()]
			seed := mix(ps, uint64(mi)+100)
			t, err := runLearner(e.opt.config(train.Dim(), m, h), seed, train, perm, stops[m], eval)
			if err != nil {
				return nil, fmt.Errorf("%s permutation %d: %w", m.name(e.opt.Window), pi, err)
			}
			out[m] = append(out[m], e.result(m, pi, ps, seed, h, t))
			e.tick()
		}
	}
	return out, nil
}

// result extracts a run's curves and headline numbers.
func (e *experiment) result(m method, perm int, permSeed, seed uint64, h hyper, t *trajectory) runResult {
	s := e.set
	res := runResult{RunRecord: RunRecord{
		Method: m.name(e.opt.Window), Perm: perm, StreamSeed: permSeed, LearnerSeed: seed,
		Eta: h.Eta, Lambda: h.Lambda,
		Updates: t.updates(), Labels: t.Labels[len(t.Labels)-1], Observed: len(t.LabelsAtObs),
		EpsilonPerRecord:  t.EpsRecord,
		ErrorAtFig4Labels: t.errAtLabels(float64(s.Fig4Labels)),
		ErrorAtLabels:     t.errAtLabels(float64(s.Labels)),
	}}
	if m.Window == e.opt.Window && !m.Shrinking && e.opt.wants(2) {
		res.ErrorAtUpdates = ptr(t.errAtUpdate(s.Updates))
		for k := 0; k <= s.Updates; k++ {
			res.byUpdate = append(res.byUpdate, t.errAtUpdate(k))
		}
	}
	if m.Window == e.opt.Window && (e.opt.wants(3) || e.opt.wants(5)) {
		for _, x := range labelGrid(s) {
			res.byLabels = append(res.byLabels, t.errAtLabels(x))
		}
	}
	if e.opt.wants(5) {
		for _, x := range obsGrid(s) {
			res.labelsByObs = append(res.labelsByObs, t.labelsAtObs(int(x)))
		}
	}
	return res
}

func ptr(v float64) *float64 { return &v }

func labelGrid(s Dataset) []float64 { return grid(float64(s.Labels), min(s.Labels, 100)) }
func obsGrid(s Dataset) []float64   { return grid(float64(fig5Obs(s)), min(fig5Obs(s), 100)) }

// summarise reduces one method's runs to means and standard deviations.
func summarise(name string, rs []runResult) MethodSummary {
	col := func(f func(runResult) float64) Stat {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		m, s := meanStd(v)
		return Stat{Mean: m, Std: s}
	}
	out := MethodSummary{
		Method:            name,
		Runs:              len(rs),
		ErrorAtFig4Labels: col(func(r runResult) float64 { return r.ErrorAtFig4Labels }),
		ErrorAtLabels:     col(func(r runResult) float64 { return r.ErrorAtLabels }),
		Labels:            col(func(r runResult) float64 { return float64(r.Labels) }),
		Observed:          col(func(r runResult) float64 { return float64(r.Observed) }),
		Updates:           col(func(r runResult) float64 { return float64(r.Updates) }),
	}
	if len(rs) > 0 && rs[0].ErrorAtUpdates != nil {
		st := col(func(r runResult) float64 { return *r.ErrorAtUpdates })
		out.ErrorAtUpdates = &st
	}
	for _, r := range rs {
		if r.EpsilonPerRecord != nil && (out.EpsilonPerRecord == nil || *r.EpsilonPerRecord > *out.EpsilonPerRecord) {
			out.EpsilonPerRecord = r.EpsilonPerRecord
		}
	}
	return out
}

// centred returns copies of train and test with the training mean
// subtracted from every row, each row then projected onto the unit ball.
func centred(train, test *data.Dataset) (*data.Dataset, *data.Dataset) {
	mean := make([]float64, train.Dim())
	for _, x := range train.X {
		floats.Add(mean, x)
	}
	floats.Scale(1/float64(train.Len()), mean)
	shift := func(d *data.Dataset) *data.Dataset {
		out := *d
		out.Name = d.Name + "-centred"
		out.X = make([][]float64, d.Len())
		backing := make([]float64, d.Len()*d.Dim())
		for i, x := range d.X {
			row := backing[i*len(x) : (i+1)*len(x) : (i+1)*len(x)]
			floats.SubTo(row, x, mean)
			data.ProjectUnitBall(row)
			out.X[i] = row
		}
		return &out
	}
	return shift(train), shift(test)
}
