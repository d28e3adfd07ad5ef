package kanon

import (
	"fmt"
	"math"

	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/model/nn"
)

// Rankers: how the learner scores uncertainty.
const (
	// RankMCDropout ranks by the entropy of the mean of T dropout passes
	// of an MLP (Gal & Ghahramani 2016), as the paper does.
	RankMCDropout = "mc-dropout"
	// RankBootstrap ranks by the entropy of the mean prediction of a
	// bootstrap ensemble of linear models (Ensemble).
	RankBootstrap = "bootstrap"
)

// mlpBits sets the MLP's input width, 2^11: Featurize's 2^13 hashed
// indices folded onto their low 11 bits (the same hash, fewer buckets). The
// MLP's first layer is dense, so its cost grows with the width; 2^11 keeps
// the MLP's training and ranking at a few seconds per cell.
const mlpBits = 11

// Adam's settings for the MLP (Kingma & Ba 2015; the usual β₁, β₂, ε).
const (
	mlpLR      = 0.003
	mlpBatch   = 32
	adamBeta1  = 0.9
	adamBeta2  = 0.999
	adamEps    = 1e-8
	mlpNoClip  = 1e300 // ClippedGrad's clip: training here is not DP-SGD
	mlpL2      = 1e-4
	mlpMinStep = 200 // steps at least, so a 100-query golden set is fitted
)

// MLP is a text intent classifier: hashed word and character n-grams into
// an nn.MLP with one hidden ReLU layer and dropout. It is trained without
// noise: it sees only released queries and their annotations (post-
// processing of the charged release) and the public golden set.
type MLP struct {
	net     *nn.Net
	classes int
	passes  int
}

// NewMLP returns an untrained MLP with hidden units, dropout rate drop and
// passes MC-dropout passes for Probs.
func NewMLP(classes, hidden int, drop float64, passes int, r *rng.Rand) (*MLP, error) {
	if passes < 1 {
		return nil, fmt.Errorf("MC-dropout passes must be >= 1, got %d", passes)
	}
	net, err := nn.New(nn.Spec{Arch: nn.MLP, Inputs: 1 << mlpBits, Classes: classes,
		Hidden: []int{hidden}, Activation: nn.ReLU, Dropout: drop}, r)
	if err != nil {
		return nil, err
	}
	return &MLP{net: net, classes: classes, passes: passes}, nil
}

// dense unfolds sparse features into rows of width 2^mlpBits.
func dense(xs []Features) [][]float64 {
	const w = 1 << mlpBits
	flat := make([]float64, len(xs)*w)
	rows := make([][]float64, len(xs))
	for i, x := range xs {
		rows[i] = flat[i*w : (i+1)*w : (i+1)*w]
		for k, j := range x.Idx {
			rows[i][j&(w-1)] += x.Val[k]
		}
	}
	return rows
}

// denseChunk bounds how many dense rows exist at once (2^11 floats each).
const denseChunk = 1024

// Train runs epochs of minibatch Adam with L2 over (xs, ys), dropout on,
// order and masks drawn from r; at least mlpMinStep steps.
func (m *MLP) Train(xs []Features, ys []int, epochs int, r *rng.Rand) error {
	rows := dense(xs)
	params := m.net.Params()
	mom, vel := make([]float64, len(params)), make([]float64, len(params))
	order := make([]int, len(rows))
	for i := range order {
		order[i] = i
	}
	bx, by := make([][]float64, 0, mlpBatch), make([]int, 0, mlpBatch)
	steps := max(epochs*((len(rows)+mlpBatch-1)/mlpBatch), mlpMinStep)
	for t := 1; t <= steps; {
		r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for lo := 0; lo < len(order) && t <= steps; lo, t = lo+mlpBatch, t+1 {
			bx, by = bx[:0], by[:0]
			for _, i := range order[lo:min(lo+mlpBatch, len(order))] {
				bx, by = append(bx, rows[i]), append(by, ys[i])
			}
			g, err := m.net.ClippedGrad(bx, by, mlpNoClip, r)
			if err != nil {
				return err
			}
			c1, c2 := 1-math.Pow(adamBeta1, float64(t)), 1-math.Pow(adamBeta2, float64(t))
			for j, gj := range g {
				gj = gj/float64(len(bx)) + mlpL2*params[j]
				mom[j] = adamBeta1*mom[j] + (1-adamBeta1)*gj
				vel[j] = adamBeta2*vel[j] + (1-adamBeta2)*gj*gj
				params[j] -= mlpLR * (mom[j] / c1) / (math.Sqrt(vel[j]/c2) + adamEps)
			}
		}
	}
	return nil
}

// Probs returns each query's MC-dropout predictive mean: the class
// probabilities averaged over the model's T dropout passes, masks from r.
func (m *MLP) Probs(xs []Features, r *rng.Rand) ([][]float64, error) {
	return chunked(xs, func(rows [][]float64) ([][]float64, error) {
		return m.net.PredictDropout(rows, m.passes, r)
	})
}

// Predict returns each query's most probable class, dropout off.
func (m *MLP) Predict(xs []Features) ([]int, error) {
	probs, err := chunked(xs, m.net.Predict)
	if err != nil {
		return nil, err
	}
	out := make([]int, len(probs))
	for i, p := range probs {
		out[i] = nn.Argmax(p)
	}
	return out, nil
}

// chunked applies f to xs unfolded denseChunk rows at a time.
func chunked(xs []Features, f func([][]float64) ([][]float64, error)) ([][]float64, error) {
	out := make([][]float64, 0, len(xs))
	for lo := 0; lo < len(xs); lo += denseChunk {
		p, err := f(dense(xs[lo:min(lo+denseChunk, len(xs))]))
		if err != nil {
			return nil, err
		}
		out = append(out, p...)
	}
	return out, nil
}

// entropy is the Shannon entropy (nats) of p.
func entropy(p []float64) float64 {
	var h float64
	for _, v := range p {
		if v > 0 {
			h -= v * math.Log(v)
		}
	}
	return h
}
