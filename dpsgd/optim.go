package dpsgd

import (
	"fmt"
	"math"
)

// Optimizer names for Config.Optimizer.
const (
	SGD      = "sgd"
	Momentum = "momentum"
	Adam     = "adam"
	NAdam    = "nadam"
)

// Learning-rate schedules for Config.Schedule.
const (
	Constant = "constant"
	Cosine   = "cosine"
)

// optimizer applies a noisy gradient to the parameters. Every update is
// post-processing of the released noisy gradients, so its state is free.
type optimizer struct {
	kind         string
	lr, mu       float64
	beta1, beta2 float64
	eps, decay   float64
	schedule     string
	total        int
	m, v         []float64
	t            int
}

func newOptimizer(c Config, dim int) (*optimizer, error) {
	o := &optimizer{kind: c.Optimizer, lr: c.LR, mu: c.Momentum, beta1: 0.9, beta2: 0.999, eps: 1e-8,
		decay: c.WeightDecay, schedule: c.Schedule, total: c.TotalSteps}
	if o.kind == "" {
		o.kind = SGD
	}
	if o.schedule == "" {
		o.schedule = Constant
	}
	if !(o.lr > 0) || math.IsInf(o.lr, 0) {
		return nil, fmt.Errorf("dpsgd: learning rate must be finite and > 0, got %v", o.lr)
	}
	if !(o.decay >= 0) || math.IsInf(o.decay, 0) {
		return nil, fmt.Errorf("dpsgd: weight decay must be finite and >= 0, got %v", o.decay)
	}
	switch o.kind {
	case SGD:
	case Momentum:
		if o.mu == 0 {
			o.mu = 0.9
		}
		if !(o.mu > 0 && o.mu < 1) {
			return nil, fmt.Errorf("dpsgd: momentum must be in (0, 1), got %v", o.mu)
		}
		o.m = make([]float64, dim)
	case Adam, NAdam:
		o.m, o.v = make([]float64, dim), make([]float64, dim)
	default:
		return nil, fmt.Errorf("dpsgd: optimizer %q: want sgd, momentum, adam or nadam", o.kind)
	}
	switch o.schedule {
	case Constant:
	case Cosine:
		if o.total < 1 {
			return nil, fmt.Errorf("dpsgd: the cosine schedule needs TotalSteps >= 1")
		}
	default:
		return nil, fmt.Errorf("dpsgd: schedule %q: want constant or cosine", o.schedule)
	}
	return o, nil
}

// rate is the learning rate at the current step.
func (o *optimizer) rate() float64 {
	if o.schedule == Cosine {
		f := min(float64(o.t)/float64(o.total), 1)
		return o.lr * 0.5 * (1 + math.Cos(math.Pi*f))
	}
	return o.lr
}

// begin starts a step and returns its learning rate.
func (o *optimizer) begin() float64 {
	lr := o.rate()
	o.t++
	return lr
}

// update applies gradient g (which it may modify) to theta, the
// coordinates lo… of the parameter vector, at rate lr: a step may update
// its coordinates chunk by chunk, in any order, since every optimiser here
// is coordinate-wise. SGD and momentum add the weight decay in their own
// pass.
func (o *optimizer) update(theta, g []float64, lo int, lr float64) {
	theta = theta[:len(g)]
	switch o.kind {
	case SGD:
		for i, gi := range g {
			theta[i] -= lr * (gi + o.decay*theta[i])
		}
	case Momentum:
		m := o.m[lo : lo+len(g)]
		for i, gi := range g {
			m[i] = o.mu*m[i] + (gi + o.decay*theta[i])
			theta[i] -= lr * m[i]
		}
	case Adam, NAdam:
		if o.decay > 0 {
			for i, w := range theta {
				g[i] += o.decay * w
			}
		}
		o.adam(theta, g, o.m[lo:lo+len(g)], o.v[lo:lo+len(g)], lr)
	}
}

// adam is Adam (Kingma & Ba 2015) or, for NAdam, Dozat's 2016 Nesterov
// variant with a constant β1: the first moment is looked one step ahead.
// m and v are the moments of theta's coordinates.
func (o *optimizer) adam(theta, g, m, v []float64, lr float64) {
	t := float64(o.t)
	c1, c2 := 1-math.Pow(o.beta1, t), 1-math.Pow(o.beta2, t)
	c1next := 1 - math.Pow(o.beta1, t+1)
	m, v = m[:len(g)], v[:len(g)]
	for i, gi := range g {
		m[i] = o.beta1*m[i] + (1-o.beta1)*gi
		v[i] = o.beta2*v[i] + (1-o.beta2)*gi*gi
		mhat := m[i] / c1
		if o.kind == NAdam {
			mhat = o.beta1*m[i]/c1next + (1-o.beta1)*gi/c1
		}
		theta[i] -= lr * mhat / (math.Sqrt(v[i]/c2) + o.eps)
	}
}
