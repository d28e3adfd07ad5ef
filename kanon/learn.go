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

// vote asks copies annotators about one query and returns the majority
// answer (ties go to the earliest of the tied answers).
func (a *annotators) vote(truth, copies int) int {
	count := map[int]int{}
	best := -1
	for range copies {
		c := a.label(truth)
		if count[c]++; best < 0 || count[c] > count[best] {
			best = c
		}
	}
	return best
}

// Classifier is what the learner trains each round: *MLP (MC dropout) or
// *Ensemble (bootstrap).
type Classifier interface {
	// Probs is the predictive distribution whose entropy ranks: the mean
	// over dropout passes or ensemble members, randomness from r.
	Probs(xs []Features, r *rng.Rand) ([][]float64, error)
	// Predict is the class used for test accuracy.
	Predict(xs []Features) ([]int, error)
}

// train fits cfg.Ranker's model to (xs, ys).
func train(cfg Config, xs []Features, ys []int, classes int, r *rng.Rand) (Classifier, error) {
	if cfg.Ranker == RankBootstrap {
		return TrainEnsemble(xs, ys, classes, cfg.Members, cfg.Epochs, r), nil
	}
	m, err := NewMLP(classes, cfg.Hidden, cfg.Dropout, cfg.Passes, r)
	if err != nil {
		return nil, err
	}
	return m, m.Train(xs, ys, cfg.Epochs, r)
}

// Rank returns the indices of pool ordered by decreasing entropy of m's
// predictive distribution (ties keep pool order).
func Rank(m Classifier, pool []Features, r *rng.Rand) ([]int, error) {
	probs, err := m.Probs(pool, r)
	if err != nil {
		return nil, err
	}
	h := make([]float64, len(pool))
	order := make([]int, len(pool))
	for i, p := range probs {
		h[i], order[i] = entropy(p), i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(h[b], h[a]) })
	return order, nil
}

// learn runs uncertainty-sampling active learning: train on the labelled
// set, send the Rounds-th part of the budget of most uncertain released
// queries to annotators, retrain, and record test accuracy after each
// round.
func learn(cfg Config, golden, pool, test []example, classes int, r *rng.Rand, res *Result) error {
	xs, ys := make([]Features, 0, len(golden)+cfg.LabelsBudget), make([]int, 0, len(golden)+cfg.LabelsBudget)
	for _, e := range golden {
		xs, ys = append(xs, e.x), append(ys, e.class)
	}
	ann := newAnnotators(cfg, classes, r)
	// The budget counts annotations; each chosen query costs Copies.
	budget := min(cfg.LabelsBudget/cfg.Copies, len(pool))
	per := (budget + cfg.Rounds - 1) / cfg.Rounds
	m, err := train(cfg, xs, ys, classes, r)
	if err != nil {
		return err
	}
	if err := record(res, m, 0, test); err != nil {
		return err
	}
	for used := 0; used < budget; {
		n := min(per, budget-used)
		px := make([]Features, len(pool))
		for i, e := range pool {
			px[i] = e.x
		}
		order, err := Rank(m, px, r)
		if err != nil {
			return err
		}
		chosen := map[int]bool{}
		for _, i := range order[:n] {
			chosen[i] = true
			xs, ys = append(xs, pool[i].x), append(ys, ann.vote(pool[i].class, cfg.Copies))
		}
		rest := pool[:0:0]
		for i, e := range pool {
			if !chosen[i] {
				rest = append(rest, e)
			}
		}
		pool = rest
		used += n
		if m, err = train(cfg, xs, ys, classes, r); err != nil {
			return err
		}
		if err := record(res, m, used*cfg.Copies, test); err != nil {
			return err
		}
	}
	res.LabelsUsed = budget * cfg.Copies
	res.Accuracy = res.Curve[len(res.Curve)-1].Accuracy
	if ann.asked > 0 {
		res.AnnotationAccuracy = float64(ann.right) / float64(ann.asked)
	}
	return nil
}

// record appends m's test accuracy after labels annotations to the curve:
// the share of test queries predicted as their true class.
func record(res *Result, m Classifier, labels int, test []example) error {
	acc := 0.0
	if len(test) > 0 {
		xs := make([]Features, len(test))
		for i, t := range test {
			xs[i] = t.x
		}
		pred, err := m.Predict(xs)
		if err != nil {
			return err
		}
		right := 0
		for i, c := range pred {
			if c == test[i].class {
				right++
			}
		}
		acc = float64(right) / float64(len(test))
	}
	res.Curve = append(res.Curve, Point{labels, acc})
	return nil
}
