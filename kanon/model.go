package kanon

import (
	"math"
	"strings"

	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/sketch"
)

// featureBits sets the hashed feature space: 2^13 dimensions.
const featureBits = 13

// Features hashes a query's word unigrams and bigrams and its character
// trigrams (with boundary marks) into 2^13 dimensions, L2-normalised: a
// sparse vector as (index, value) pairs.
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
	var f Features
	var norm float64
	for i, v := range counts {
		f.Idx, f.Val = append(f.Idx, i), append(f.Val, v)
		norm += v * v
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
// the labelled set. The paper ranks by MC-dropout entropy (Gal &
// Ghahramani 2016); a linear model has no dropout, so dpal uses the
// entropy of the ensemble's mean prediction instead, the same quantity
// (Shannon entropy of the averaged class probabilities) with bootstrap
// members in place of dropout masks.
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

// Entropy returns the Shannon entropy of the members' mean prediction.
func (e *Ensemble) Entropy(x Features) float64 {
	var h float64
	for _, v := range e.mean(x) {
		if v > 0 {
			h -= v * math.Log(v)
		}
	}
	return h
}

// Predict returns the class with the highest mean probability.
func (e *Ensemble) Predict(x Features) int {
	mean := e.mean(x)
	best := 0
	for c, v := range mean {
		if v > mean[best] {
			best = c
		}
	}
	return best
}
