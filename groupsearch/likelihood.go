package groupsearch

import (
	"errors"
	"fmt"
	"math"

	"github.com/dpal-dev/dpal/dp/mech"
)

// Likelihood turns a response into the log-likelihoods of "i* ∈ Q" and
// "i* ∈ Q̄" (up to a shared constant). It uses public parameters only.
type Likelihood interface {
	// LogLik returns log φ(r | i* ∈ Q) and log φ(r | i* ∉ Q) for a query of
	// sizeQ members out of size.
	LogLik(r Response, sizeQ, size int) (in, out float64, err error)
}

// BitLikelihood reads a bit that says "the anomaly is in Q" and is wrong
// with probability P < 1/2: the Bayes rule of eq. 6 with R_t = Q_t when the
// bit is 1 and Q̄_t when it is 0.
type BitLikelihood struct {
	// P is the probability that the bit is wrong.
	P float64
}

// LogLik implements Likelihood (eq. 6).
func (l BitLikelihood) LogLik(r Response, _, _ int) (in, out float64, err error) {
	right, wrong := math.Log1p(-l.P), math.Log(l.P)
	if r.Bit {
		return right, wrong, nil
	}
	return wrong, right, nil
}

// MaxLikelihood is eq. 11: the noisy maxima are read as Laplace(t_ℓ/ε)
// around t_h on the anomaly's side and t_ℓ on the other. The shared factor
// ε²/(4t_ℓ²) cancels in eq. 12 and is left out.
type MaxLikelihood struct {
	// TLow and THigh are t_ℓ and t_h; Epsilon is the per-answer ε.
	TLow, THigh, Epsilon float64
}

// LogLik implements Likelihood (eq. 11).
func (l MaxLikelihood) LogLik(r Response, _, _ int) (in, out float64, err error) {
	if !r.HasPair {
		return 0, 0, errors.New("noisy-max likelihood needs a (Y, Ȳ) response")
	}
	k := l.Epsilon / l.TLow
	in = -k * (math.Abs(r.Y-l.THigh) + math.Abs(r.YBar-l.TLow))
	out = -k * (math.Abs(r.Y-l.TLow) + math.Abs(r.YBar-l.THigh))
	return in, out, nil
}

// MeanLikelihood is this package's analogue of eq. 11 for the mean oracle
// (the paper gives none): each noisy mean is read as Laplace(t_ℓ/(|group|ε))
// around Level on the clean side and Level + (t_h − Level)/|group| on the
// anomaly's side, where Level is a public guess of the non-anomalous mean.
// The anomaly's pull on its group's mean shrinks as 1/|group| ("dilution",
// §4.2), exactly as fast as the noise scale, so the evidence per answer is
// comparable to eq. 11's only when Level is a good guess.
type MeanLikelihood struct {
	// TLow and THigh are t_ℓ and t_h; Epsilon is the per-answer ε; Level
	// is the public guess of the non-anomalous mean.
	TLow, THigh, Epsilon, Level float64
}

// LogLik implements Likelihood.
func (l MeanLikelihood) LogLik(r Response, sizeQ, size int) (in, out float64, err error) {
	if !r.HasPair {
		return 0, 0, errors.New("mean likelihood needs a (Y, Ȳ) response")
	}
	nq, nbar := float64(max(sizeQ, 1)), float64(max(size-sizeQ, 1))
	kq, kbar := l.Epsilon*nq/l.TLow, l.Epsilon*nbar/l.TLow
	hiQ, hiBar := l.Level+(l.THigh-l.Level)/nq, l.Level+(l.THigh-l.Level)/nbar
	in = -kq*math.Abs(r.Y-hiQ) - kbar*math.Abs(r.YBar-l.Level)
	out = -kq*math.Abs(r.Y-l.Level) - kbar*math.Abs(r.YBar-hiBar)
	return in, out, nil
}

// BinarizedErrorProb is eq. 24: p = (1/2 + rε/4)·exp(−rε) with
// r = (t_h − t_ℓ)/t_ℓ, the tail P(Z̄ − Z > t_h − t_ℓ) of the difference of
// two Lap(t_ℓ/ε) variables (eq. 23). It bounds the probability that
// Z = 1(Y > Ȳ) points away from the anomaly when the data obey eq. 1
// (Lemma 2); it is below 1/2 for every rε > 0.
func BinarizedErrorProb(p Params) float64 {
	x := p.Ratio() * p.Epsilon
	return (0.5 + x/4) * math.Exp(-x)
}

// Likelihood returns the searcher's reading of kind's responses under p.
func (p Params) Likelihood(kind Kind) (Likelihood, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	switch kind {
	case RR:
		return BitLikelihood{P: mech.RRFlipProb(p.Epsilon)}, nil
	case Binarized:
		return BitLikelihood{P: BinarizedErrorProb(p)}, nil
	case NoisyMax:
		return MaxLikelihood{TLow: p.TLow, THigh: p.THigh, Epsilon: p.Epsilon}, nil
	case Mean:
		level := p.MeanLevel
		if level == 0 {
			level = p.TLow / 2
		}
		return MeanLikelihood{TLow: p.TLow, THigh: p.THigh, Epsilon: p.Epsilon, Level: level}, nil
	}
	return nil, fmt.Errorf("unknown oracle kind %q", kind)
}
