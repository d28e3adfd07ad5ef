package nn

import (
	"fmt"

	"github.com/dpal-dev/dpal/dp/rng"
)

// PredictDropout returns each row's class probabilities averaged over
// passes stochastic forward passes with dropout on, masks drawn from r:
// the predictive mean of MC dropout (Gal & Ghahramani 2016). The layers
// before the first dropout are deterministic, so they run once per batch
// and only the rest runs passes times; the result equals passes full
// stochastic passes. Without dropout every pass is Predict.
func (n *Net) PredictDropout(rows [][]float64, passes int, r *rng.Rand) ([][]float64, error) {
	if passes < 1 {
		return nil, fmt.Errorf("nn: MC-dropout passes must be >= 1, got %d", passes)
	}
	if err := n.checkBatch(rows, nil); err != nil {
		return nil, err
	}
	first := len(n.layers)
	for k, l := range n.layers {
		if _, ok := l.(*dropout); ok {
			first = k
			break
		}
	}
	out := make([][]float64, len(rows))
	p := make([]float64, max(n.spec.Classes, 2))
	for lo := 0; lo < len(rows); lo += predictChunk {
		hi := min(lo+predictChunk, len(rows))
		n.sync()
		n.x = n.x.resize(hi-lo, n.spec.Inputs)
		for i, x := range rows[lo:hi] {
			xi := n.x.row(i)
			for j, v := range x {
				xi[j] = float32(v)
			}
		}
		h := n.x
		for _, l := range n.layers[:first] {
			h = l.forward(h, false, nil)
		}
		for i := range hi - lo {
			out[lo+i] = make([]float64, n.spec.Classes)
		}
		for range passes {
			z := h
			for _, l := range n.layers[first:] {
				z = l.forward(z, true, r)
			}
			for i := range z.r {
				n.probs(p, z.row(i))
				for c := range n.spec.Classes {
					out[lo+i][c] += p[c] / float64(passes)
				}
			}
		}
	}
	return out, nil
}
