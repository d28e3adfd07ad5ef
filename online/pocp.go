package online

import (
	"fmt"
	"math"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/mech"
	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/vec"
)

// Algorithm is a non-private OCP algorithm A that POCP can wrap: its
// iterate after f_t, x_{t+1}, moves by at most λ_A/t when one cost is
// replaced (condition (1) of §3).
type Algorithm interface {
	// Update consumes f_t (t = 1, 2, …, in order) and returns x_{t+1}; the
	// slice is the algorithm's own and changes at the next Update.
	Update(t int, ex Example) ([]float64, error)
	// Stability is λ_A.
	Stability() float64
	// Warmup is the number of leading rounds whose iterates do not depend
	// on the data (GIGA's burn-in, t_q − 1; 0 otherwise): x_2..x_{Warmup+1}
	// are released without noise and cost nothing.
	Warmup() int
	// Cost is the cost family A runs on.
	Cost() Cost
	// Name names A in ledger entries ("igd", "giga").
	Name() string
}

// Calibration chooses POCP's noise β for a target (ε, δ).
type Calibration struct {
	// Exact, when set, picks the smallest noise whose ledger charge is the
	// target: the largest ρ-zCDP that the ledger's conversion turns into at
	// most ε at δ (ChargedMu), so the charged ε is the target to a relative
	// 1e-9 and the continuous-noise exact ε is below it. Otherwise the noise
	// is the paper's formula (for POCP, Algorithm 1's β, whose claimed
	// guarantee is (3ε, 2δ) by Theorem 1).
	Exact bool `json:"exact"`
	// Epsilon and Delta are the target.
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
}

func (c Calibration) validate() error {
	if err := account.ValidateEpsilon(c.Epsilon); err != nil {
		return err
	}
	if !(c.Delta > 0 && c.Delta < 1) {
		return fmt.Errorf("delta must satisfy 0 < delta < 1 for Gaussian noise, got %v", c.Delta)
	}
	return nil
}

// PaperBeta is Algorithm 1's β = λ·T^{0.5+c}·√((2/ε)(ln(T/δ) + √ε/T^{0.5+c}))
// with c = ln(ln(2/δ)/(2ε))/(2 ln T), using T^{0.5+c} = √(T ln(2/δ)/(2ε));
// it also returns c, which the proof of Theorem 1 needs ≥ 0 (spec N7).
func PaperBeta(lambda float64, steps int, eps, delta float64) (beta, c float64) {
	T := float64(steps)
	c = math.Log(math.Log(2/delta)/(2*eps)) / (2 * math.Log(T))
	p := math.Sqrt(T * math.Log(2/delta) / (2 * eps))
	beta = lambda * p * math.Sqrt((2/eps)*(math.Log(T/delta)+math.Sqrt(eps)/p))
	return beta, c
}

// Privacy is what a private run reports about its guarantee.
type Privacy struct {
	// Mechanism names the construction.
	Mechanism string `json:"mechanism"`
	// NominalEpsilon and NominalDelta are the paper's claim for the
	// calibration used (for an exact calibration, the target).
	NominalEpsilon float64 `json:"nominal_epsilon"`
	NominalDelta   float64 `json:"nominal_delta"`
	// ProofNote says when the paper's own proof does not cover its claim.
	ProofNote string `json:"proof_note,omitempty"`
	// Mu is the whole release's μ under μ-GDP (continuous noise).
	Mu float64 `json:"mu"`
	// Delta is the δ the exact and charged ε are read at.
	Delta float64 `json:"delta"`
	// ExactEpsilon is the tight ε at Delta: mech.GaussianEpsilon(Mu, Delta).
	ExactEpsilon float64 `json:"exact_epsilon"`
	// Rho is the zCDP ρ = μ²/2 charged to the ledger: the bound proven for
	// the discrete Gaussian noise actually drawn (CKS 2020, Thm 4).
	Rho float64 `json:"rho"`
	// ChargedEpsilon is ρ converted by the ledger at Delta (≥ ExactEpsilon).
	ChargedEpsilon float64 `json:"charged_epsilon"`
}

// chargeConversion is the ledger's default conversion of a ρ-zCDP charge
// to (ε, δ) (ledger.New): ChargedEpsilon and the exact calibration use it.
const chargeConversion = account.Balle2020

// ChargedMu is the μ of the exact calibration for a target (ε, δ): μ = √(2ρ)
// for the largest ρ whose ρ-zCDP charge the ledger converts to at most ε at
// δ (account.CalibrateZCDP, relative tolerance 1e-9, rounded to the safe
// side). The charged ε then is the target; the exact ε of continuous noise,
// mech.GaussianEpsilon(μ, δ), is smaller.
func ChargedMu(cal Calibration) (float64, error) {
	if err := cal.validate(); err != nil {
		return 0, err
	}
	rho, err := account.CalibrateZCDP(account.Budget{Epsilon: cal.Epsilon, Delta: cal.Delta}, chargeConversion)
	if err != nil {
		return 0, err
	}
	return math.Sqrt(2 * rho), nil
}

// newPrivacy fills the exact and charged figures for μ at δ.
func newPrivacy(name string, mu, delta float64) (Privacy, error) {
	p := Privacy{Mechanism: name, Mu: mu, Delta: delta, Rho: mu * mu / 2}
	var err error
	if p.ExactEpsilon, err = mech.GaussianEpsilon(mu, delta); err != nil {
		return p, err
	}
	if p.ChargedEpsilon, err = p.Loss().EpsilonAt(delta, chargeConversion); err != nil {
		return p, err
	}
	return p, nil
}

// Loss is the ledger entry of the whole run: ρ-zCDP.
func (p Privacy) Loss() account.Loss {
	l := account.ZCDP(p.Mechanism, p.Rho)
	l.Params = map[string]float64{"mu": p.Mu}
	return l
}

// charge records the whole run's loss before its first release.
func (p Privacy) charge(l *ledger.Ledger, groups []string) error {
	if l == nil {
		return fmt.Errorf("%s: a private run needs a ledger", p.Mechanism)
	}
	_, err := l.Record(ledger.Charge{Groups: groups, Loss: p.Loss(),
		Note: fmt.Sprintf("whole run charged before the first release; exact ε=%.4g at δ=%g (μ-GDP, μ=%.4g)", p.ExactEpsilon, p.Delta, p.Mu)})
	return err
}

// POCP is Algorithm 1: it runs a non-private algorithm A on the costs and
// releases x̂_{t+1} = Π_C(x_{t+1} + b_{t+1}), b_{t+1} ~ N(0, (β/t)² I),
// never feeding the noise back into A.
//
// Neighbouring relation: one cost replaced. Release: x̂_2..x̂_T. Guarantee:
// by (1) the t-th noisy release's mean moves by at most λ_A/t under noise
// β/t, so the sequence is one Gaussian mechanism, μ-GDP with
// μ = λ_A√n/β over its n noisy releases (spec N7), and ρ-zCDP with ρ = μ²/2
// for the discrete noise drawn; the ledger is charged ρ for the whole run.
// The paper's Theorem 1 claims (3ε, 2δ) for its β; its proof needs
// c ≥ 0, i.e. ε ≤ ln(2/δ)/2, and its Azuma constant is 4× too strong
// (spec N7): Privacy reports the claim beside the exact figure.
//
// Noise: the release is Π_C((1/t)·M(t·x_{t+1})), M the exact discrete
// Gaussian vector mechanism with clipping norm λ_A and noise multiplier
// β/λ_A (t·x_{t+1} has sensitivity λ_A); one grid serves every t and the
// division by t is post-processing.
type POCP struct {
	alg     Algorithm
	cost    Cost
	steps   int
	beta    float64
	noise   *mech.GaussianVector
	privacy Privacy
	point   []float64 // x̂_t
	t       int       // rounds observed
}

// NewPOCP wraps alg for a run of steps rounds (T ≥ 2), calibrates β, and
// charges the whole run to groups in l before anything is released.
func NewPOCP(alg Algorithm, steps int, cal Calibration, l *ledger.Ledger, groups []string) (*POCP, error) {
	if steps < 2 {
		return nil, fmt.Errorf("pocp: the number of rounds T must be >= 2, got %d", steps)
	}
	if err := cal.validate(); err != nil {
		return nil, fmt.Errorf("pocp: %w", err)
	}
	lambda := alg.Stability()
	n := steps - 1 - alg.Warmup() // noisy releases: loop t = Warmup+1 .. T−1
	if n < 1 {
		return nil, fmt.Errorf("pocp: T = %d leaves no round after the %d burn-in rounds", steps, alg.Warmup())
	}
	p := &POCP{alg: alg, cost: alg.Cost(), steps: steps, point: make([]float64, alg.Cost().Dim)}
	name := "pocp(" + alg.Name() + ")"
	var err error
	if cal.Exact {
		mu, err := ChargedMu(cal)
		if err != nil {
			return nil, fmt.Errorf("pocp: %w", err)
		}
		p.beta = lambda * math.Sqrt(float64(n)) / mu
		if p.privacy, err = newPrivacy(name, mu, cal.Delta); err != nil {
			return nil, fmt.Errorf("pocp: %w", err)
		}
		p.privacy.NominalEpsilon, p.privacy.NominalDelta = cal.Epsilon, cal.Delta
	} else {
		var c float64
		p.beta, c = PaperBeta(lambda, steps, cal.Epsilon, cal.Delta)
		if p.privacy, err = newPrivacy(name, lambda*math.Sqrt(float64(n))/p.beta, 2*cal.Delta); err != nil {
			return nil, fmt.Errorf("pocp: %w", err)
		}
		p.privacy.NominalEpsilon, p.privacy.NominalDelta = 3*cal.Epsilon, 2*cal.Delta
		if c < 0 {
			p.privacy.ProofNote = fmt.Sprintf("c = %.3g < 0 (ε > ln(2/δ)/2): Theorem 1's proof does not cover this ε", c)
		}
	}
	if p.noise, err = mech.NewGaussianVector(p.beta/lambda, lambda, p.cost.Dim); err != nil {
		return nil, fmt.Errorf("pocp: %w", err)
	}
	if err := p.privacy.charge(l, groups); err != nil {
		return nil, fmt.Errorf("pocp: %w", err)
	}
	return p, nil
}

// Point is x̂_t, the released point played in the current round.
func (p *POCP) Point() []float64 { return p.point }

// Beta is the noise parameter β: the t-th release has noise β/t.
func (p *POCP) Beta() float64 { return p.beta }

// Privacy reports the run's guarantee.
func (p *POCP) Privacy() Privacy { return p.privacy }

// Observe takes f_t and releases x̂_{t+1}. A record outside the declared
// bounds is refused with an error naming it, and nothing changes.
func (p *POCP) Observe(r *rng.Rand, ex Example) error {
	t := p.t + 1
	if t >= p.steps {
		return fmt.Errorf("pocp: record %d is beyond the declared T − 1 = %d updates", t, p.steps-1)
	}
	if err := p.cost.Check(t, ex); err != nil {
		return err
	}
	x, err := p.alg.Update(t, ex)
	if err != nil {
		return err
	}
	p.t = t
	if t <= p.alg.Warmup() {
		copy(p.point, x) // data-independent burn-in iterate
		return nil
	}
	ft := float64(t)
	for j, v := range x {
		p.point[j] = ft * v
	}
	if err := p.noise.AddTo(r, p.point); err != nil {
		return fmt.Errorf("pocp: record %d: %w", t, err)
	}
	for j := range p.point {
		p.point[j] /= ft
	}
	vec.ProjectBall(p.point, p.cost.Radius)
	return nil
}
