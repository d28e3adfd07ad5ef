package kanon

import (
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/model/nn"
	"github.com/dpal-dev/dpal/sketch"
)

// featureBits sets the hashed feature space: 2^13 dimensions.
const featureBits = 13

// Features hashes a query's word unigrams and bigrams and its character
// trigrams (with boundary marks) into 2^13 dimensions, L2-normalised: a
// sparse vector as (index, value) pairs, indices increasing.
type Features struct {
	Idx []int
	Val []float64
}

// Featurize returns text's hashed n-gram features.
func Featurize(text string) Features {
	counts := map[int]float64{}
	add := func(s string) { counts[int(sketch.Fingerprint(s)&(1<<featureBits-1))]++ }
	words := strings.Fields(strings.ToLower(text))
	for i, w := range words {
		add("w:" + w)
		if i > 0 {
			add("b:" + words[i-1] + " " + w)
		}
	}
	rs := []rune("^" + strings.Join(words, " ") + "$")
	for i := 0; i+3 <= len(rs); i++ {
		add("c:" + string(rs[i:i+3]))
	}
	// Indices in increasing order: map order would change float sums
	// from run to run, and seeded runs must repeat exactly.
	var f Features
	var norm float64
	f.Idx = slices.Sorted(maps.Keys(counts))
	for _, i := range f.Idx {
		f.Val = append(f.Val, counts[i])
		norm += counts[i] * counts[i]
	}
	norm = math.Sqrt(norm)
	for i := range f.Val {
		f.Val[i] /= norm
	}
	return f
}

// Softmax is multinomial logistic regression on hashed features, trained
// by SGD with L2 regularisation.
type Softmax struct {
	classes int
	w       [][]float64 // classes × 2^featureBits
	b       []float64
}

// NewSoftmax returns an untrained model over classes labels.
func NewSoftmax(classes int) *Softmax {
	m := &Softmax{classes: classes, w: make([][]float64, classes), b: make([]float64, classes)}
	for c := range m.w {
		m.w[c] = make([]float64, 1<<featureBits)
	}
	return m
}

// Probs writes the class probabilities of x into p (len classes).
func (m *Softmax) Probs(x Features, p []float64) {
	mx := math.Inf(-1)
	for c := range m.classes {
		s := m.b[c]
		wc := m.w[c]
		for i, j := range x.Idx {
			s += wc[j] * x.Val[i]
		}
		p[c] = s
		mx = math.Max(mx, s)
	}
	var z float64
	for c := range p {
		p[c] = math.Exp(p[c] - mx)
		z += p[c]
	}
	for c := range p {
		p[c] /= z
	}
}

// Train runs epochs of SGD over (xs, ys) in an order drawn from r.
func (m *Softmax) Train(xs []Features, ys []int, epochs int, r *rng.Rand) {
	const lr0, l2 = 0.5, 1e-5
	p := make([]float64, m.classes)
	order := make([]int, len(xs))
	for i := range order {
		order[i] = i
	}
	step := 0
	for range epochs {
		r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, n := range order {
			step++
			lr := lr0 / math.Sqrt(1+float64(step)/float64(len(xs)))
			x := xs[n]
			m.Probs(x, p)
			for c := range m.classes {
				g := p[c]
				if c == ys[n] {
					g--
				}
				m.b[c] -= lr * g
				wc := m.w[c]
				for i, j := range x.Idx {
					wc[j] -= lr * (g*x.Val[i] + l2*wc[j])
				}
			}
		}
	}
}

// Ensemble is M softmax models each trained on a bootstrap resample of
// the labelled set: the RankBootstrap ranker. A linear model has no
// dropout; the entropy of the ensemble's mean prediction is the same
// quantity as MC dropout's (Shannon entropy of averaged class
// probabilities) with bootstrap members in place of dropout masks.
type Ensemble struct {
	members []*Softmax
}

// TrainEnsemble trains members models on bootstrap resamples of (xs, ys).
func TrainEnsemble(xs []Features, ys []int, classes, members, epochs int, r *rng.Rand) *Ensemble {
	e := &Ensemble{}
	for range members {
		bx, by := make([]Features, len(xs)), make([]int, len(xs))
		for i := range bx {
			j := r.IntN(len(xs))
			bx[i], by[i] = xs[j], ys[j]
		}
		m := NewSoftmax(classes)
		m.Train(bx, by, epochs, r)
		e.members = append(e.members, m)
	}
	return e
}

// mean returns the members' mean class probabilities for x.
func (e *Ensemble) mean(x Features) []float64 {
	classes := e.members[0].classes
	mean, p := make([]float64, classes), make([]float64, classes)
	for _, m := range e.members {
		m.Probs(x, p)
		for c, v := range p {
			mean[c] += v / float64(len(e.members))
		}
	}
	return mean
}

// Probs returns each query's mean class probabilities over the members
// (r is unused: the ensemble is deterministic once trained).
func (e *Ensemble) Probs(xs []Features, _ *rng.Rand) ([][]float64, error) {
	out := make([][]float64, len(xs))
	for i, x := range xs {
		out[i] = e.mean(x)
	}
	return out, nil
}

// Predict returns each query's class with the highest mean probability.
func (e *Ensemble) Predict(xs []Features) ([]int, error) {
	out := make([]int, len(xs))
	for i, x := range xs {
		out[i] = nn.Argmax(e.mean(x))
	}
	return out, nil
}
