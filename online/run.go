package online

import (
	"fmt"
	"math"

	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/mech"
	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/vec"
)

// Learner is an online learner as a run drives it: Point is x̂_t, the point
// played in round t, and Observe takes f_t.
type Learner interface {
	Point() []float64
	Observe(r *rng.Rand, ex Example) error
}

// Plain runs a non-private Algorithm as a Learner (x_1 = 0).
type Plain struct {
	alg   Algorithm
	point []float64
	t     int
}

// NewPlain wraps alg.
func NewPlain(alg Algorithm) *Plain { return &Plain{alg: alg, point: make([]float64, alg.Cost().Dim)} }

// Point is x_t.
func (p *Plain) Point() []float64 { return p.point }

// Observe takes f_t and moves to x_{t+1}.
func (p *Plain) Observe(_ *rng.Rand, ex Example) error {
	x, err := p.alg.Update(p.t+1, ex)
	if err != nil {
		return err
	}
	p.t++
	p.point = x
	return nil
}

// PlainFTL is QFTL as a Learner.
type PlainFTL struct{ *QFTL }

// Observe takes f_t.
func (p PlainFTL) Observe(_ *rng.Rand, ex Example) error { return p.QFTL.Observe(ex) }

// Checkpoint is the state of a run after t rounds.
type Checkpoint struct {
	// T is the number of rounds played.
	T int `json:"t"`
	// Loss is Σ_{τ≤t} f_τ(x̂_τ), the cost paid.
	Loss float64 `json:"loss"`
	// Best is min_x∈C Σ_{τ≤t} f_τ(x) when it is computable (the squared
	// loss, by ridge regression, when the ridge minimiser lies in C); NaN
	// otherwise.
	Best float64 `json:"best"`
}

// AverageRegret is (Loss − Best)/T, the quantity of Figure 2(a, b).
func (c Checkpoint) AverageRegret() float64 { return (c.Loss - c.Best) / float64(c.T) }

// Run plays learner on records (f_t = records[t−1]) and reports the cost
// paid, and the offline optimum when computable, after each round listed
// in at (increasing). Costs are eq. (3)'s normalisation,
// ½(y − vᵀx)² + (α/2)‖x‖² for the squared loss. progress, if not nil, is
// called after every round.
func Run(r *rng.Rand, learner Learner, cost Cost, records []Example, at []int, progress func(int)) ([]Checkpoint, error) {
	var leader *QFTL
	if cost.Loss == Squared {
		var err error
		if leader, err = NewQFTL(cost); err != nil {
			return nil, err
		}
	}
	var out []Checkpoint
	var loss, sumY2 float64
	next := 0
	for i, ex := range records {
		if err := cost.Check(i+1, ex); err != nil {
			return out, err
		}
		loss += cost.Value(learner.Point(), ex)
		if i < len(records)-1 { // f_T is paid, x̂_{T+1} is never played
			if err := learner.Observe(r, ex); err != nil {
				return out, err
			}
		}
		sumY2 += ex.Y * ex.Y
		t := i + 1
		if leader != nil && next < len(at) && at[next] == t {
			if err := leader.Observe(ex); err != nil {
				return out, err
			}
		} else if leader != nil {
			leader.accumulate(ex)
		}
		for next < len(at) && at[next] == t {
			c := Checkpoint{T: t, Loss: loss, Best: math.NaN()}
			if leader != nil && vec.Norm(leader.Point()) <= cost.Radius {
				// The ridge minimiser lies in C, so it is C's minimiser too.
				c.Best = leader.value(sumY2)
			}
			out = append(out, c)
			next++
		}
		if progress != nil {
			progress(t)
		}
	}
	return out, nil
}

// accumulate adds f_t to V and u without solving.
func (a *QFTL) accumulate(ex Example) {
	a.t++
	mech.PackOuter(a.atom, ex.V, 1)
	for k, x := range a.atom {
		a.v[k] += x
	}
	for j, x := range ex.V {
		a.u[j] += ex.Y * x
	}
}

// value is Σ_{τ≤t} f_τ(x_{t+1}) = min_x Σ_{τ≤t} f_τ(x) for the current
// leader: ½(Σy² − 2uᵀx + xᵀVx) + (tα/2)‖x‖², with xᵀVx read off the
// packed V (off-diagonal entries carry √2).
func (a *QFTL) value(sumY2 float64) float64 {
	x := a.solver.x
	var quad float64
	k := 0
	for i, xi := range x {
		quad += a.v[k] * xi * xi
		k++
		for _, xj := range x[i+1:] {
			quad += math.Sqrt2 * a.v[k] * xi * xj
			k++
		}
	}
	return (sumY2-2*vec.Dot(a.u, x)+quad)/2 + float64(a.t)*a.cost.Alpha/2*vec.Dot(x, x)
}

// Accuracy is the fraction of records whose label y = ±1 has the sign of
// vᵀx (ties count as +1).
func Accuracy(x []float64, test []Example) float64 {
	if len(test) == 0 {
		return math.NaN()
	}
	hit := 0
	for _, ex := range test {
		pred := 1.0
		if vec.Dot(ex.V, x) < 0 {
			pred = -1
		}
		if pred == ex.Y {
			hit++
		}
	}
	return float64(hit) / float64(len(test))
}

// MSE is the mean of (y − vᵀx)² over test.
func MSE(x []float64, test []Example) float64 {
	if len(test) == 0 {
		return math.NaN()
	}
	var s float64
	for _, ex := range test {
		e := ex.Y - vec.Dot(ex.V, x)
		s += e * e
	}
	return s / float64(len(test))
}

// Checkpoints returns about n log-spaced rounds in 1..T, always with T.
func Checkpoints(T, n int) []int {
	var out []int
	for i := range n {
		t := int(math.Round(math.Pow(float64(T), float64(i+1)/float64(n))))
		if len(out) == 0 || t > out[len(out)-1] {
			out = append(out, t)
		}
	}
	if out[len(out)-1] != T {
		out = append(out, T)
	}
	return out
}

// Spec describes a run for NewLearner.
type Spec struct {
	// Algorithm is "igd", "giga" or "ftl".
	Algorithm string `json:"algorithm"`
	// Cost is the cost family and its declared bounds.
	Cost Cost `json:"cost"`
	// Steps is T, the number of records of the run.
	Steps int `json:"steps"`
	// Batch is FTL's leaf size (records per tree leaf and per solve; 1 is
	// Algorithm 4).
	Batch int `json:"batch,omitempty"`
	// Calibration is the privacy target and how β is chosen.
	Calibration Calibration `json:"calibration"`
	// NonPrivate runs the plain algorithm: no noise, no ledger.
	NonPrivate bool `json:"non_private,omitempty"`
}

// NewLearner builds the learner spec describes and, when private, charges
// its whole run to groups in l; it returns the run's Privacy (nil when
// non-private).
func NewLearner(spec Spec, l *ledger.Ledger, groups []string) (Learner, *Privacy, error) {
	switch spec.Algorithm {
	case "igd", "giga":
		var alg Algorithm
		var err error
		if spec.Algorithm == "igd" {
			alg, err = NewIGD(spec.Cost, spec.Steps)
		} else {
			alg, err = NewGIGA(spec.Cost)
		}
		if err != nil {
			return nil, nil, err
		}
		if spec.NonPrivate {
			return NewPlain(alg), nil, nil
		}
		p, err := NewPOCP(alg, spec.Steps, spec.Calibration, l, groups)
		if err != nil {
			return nil, nil, err
		}
		pr := p.Privacy()
		return p, &pr, nil
	case "ftl":
		if spec.NonPrivate {
			q, err := NewQFTL(spec.Cost)
			return PlainFTL{q}, nil, err
		}
		batch := max(spec.Batch, 1)
		cal, err := CalibrateFTL(spec.Cost, spec.Steps, batch, spec.Calibration)
		if err != nil {
			return nil, nil, err
		}
		a, err := NewPFTL(spec.Cost, cal, l, groups)
		if err != nil {
			return nil, nil, err
		}
		pr := a.Privacy()
		return a, &pr, nil
	}
	return nil, nil, fmt.Errorf("unknown algorithm %q (want igd, giga or ftl)", spec.Algorithm)
}
