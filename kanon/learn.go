package kanon

import (
	"cmp"
	"slices"

	"github.com/dpal-dev/dpal/dp/rng"
)

// annotators simulates crowd workers: each has an accuracy drawn once from
// N(mean, sd²) (clamped to [0, 1]); a query goes to one worker chosen at
// random, who returns the true class with that probability and a uniformly
// random other class otherwise (Feyisetan et al. §Experiment setup, after
// Yang et al. 2018).
type annotators struct {
	acc     []float64
	classes int
	r       *rng.Rand
	right   int
	asked   int
}

func newAnnotators(cfg Config, classes int, r *rng.Rand) *annotators {
	a := &annotators{classes: classes, r: r}
	for range cfg.Annotators {
		a.acc = append(a.acc, min(1, max(0, cfg.AnnotatorAccuracy+cfg.AnnotatorSD*r.NormFloat64())))
	}
	return a
}

func (a *annotators) label(truth int) int {
	a.asked++
	if a.r.Float64() < a.acc[a.r.IntN(len(a.acc))] {
		a.right++
		return truth
	}
	other := a.r.IntN(a.classes - 1)
	if other >= truth {
		other++
	}
	return other
}

// learn runs uncertainty-sampling active learning: train on the labelled
// set, send the Rounds-th part of the budget of most uncertain released
// queries to annotators, retrain, and record test accuracy after each
// round.
func learn(cfg Config, golden, pool, test []example, classes int, r *rng.Rand, res *Result) {
	xs, ys := make([]Features, 0, len(golden)+cfg.LabelsBudget), make([]int, 0, len(golden)+cfg.LabelsBudget)
	for _, e := range golden {
		xs, ys = append(xs, e.x), append(ys, e.class)
	}
	ann := newAnnotators(cfg, classes, r)
	budget := min(cfg.LabelsBudget, len(pool))
	per := (budget + cfg.Rounds - 1) / cfg.Rounds
	ens := TrainEnsemble(xs, ys, classes, cfg.Members, cfg.Epochs, r)
	res.Curve = append(res.Curve, Point{0, accuracy(ens, test)})
	for used := 0; used < budget; {
		n := min(per, budget-used)
		type scored struct {
			i int
			h float64
		}
		s := make([]scored, len(pool))
		for i, e := range pool {
			s[i] = scored{i, ens.Entropy(e.x)}
		}
		slices.SortStableFunc(s, func(a, b scored) int { return cmp.Compare(b.h, a.h) })
		chosen := map[int]bool{}
		for _, c := range s[:n] {
			chosen[c.i] = true
			xs, ys = append(xs, pool[c.i].x), append(ys, ann.label(pool[c.i].class))
		}
		rest := pool[:0:0]
		for i, e := range pool {
			if !chosen[i] {
				rest = append(rest, e)
			}
		}
		pool = rest
		used += n
		ens = TrainEnsemble(xs, ys, classes, cfg.Members, cfg.Epochs, r)
		res.Curve = append(res.Curve, Point{used, accuracy(ens, test)})
	}
	res.LabelsUsed = budget
	res.Accuracy = res.Curve[len(res.Curve)-1].Accuracy
	if ann.asked > 0 {
		res.AnnotationAccuracy = float64(ann.right) / float64(ann.asked)
	}
}

// accuracy is the share of test queries whose ensemble-mean prediction is
// the true class.
func accuracy(e *Ensemble, test []example) float64 {
	if len(test) == 0 {
		return 0
	}
	right := 0
	for _, t := range test {
		if e.Predict(t.x) == t.class {
			right++
		}
	}
	return float64(right) / float64(len(test))
}
