package online

import (
	"fmt"
	"math"

	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/mech"
	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/vec"
)

// Offline is the result of private offline learning (Algorithm 6).
type Offline struct {
	// Model is the released x̂ = Π_C(x̃ + b).
	Model []float64 `json:"model"`
	// Sensitivity is Δ = λ(H_T − 1)/T, the ℓ2 sensitivity of the average.
	Sensitivity float64 `json:"sensitivity"`
	// Sigma is the noise standard deviation β per coordinate.
	Sigma float64 `json:"sigma"`
	// Privacy is the guarantee of the release.
	Privacy Privacy `json:"privacy"`
	// PrintedSigma is eq. (37)'s β, which lacks the factor 1/α (spec N12),
	// and PrintedEpsilon the ε it would really give at the target δ.
	PrintedSigma   float64 `json:"printed_sigma"`
	PrintedEpsilon float64 `json:"printed_epsilon"`
}

// POL is private offline learning by online-to-batch conversion
// (Algorithm 6, Kakade–Tewari 2008): IGD runs once over the T records
// (regularised, on the ball C of radius r ≥ ‖x*‖), the average
// x̃ = (1/T)Σ_{t=1}^T x_t of its iterates gets Gaussian noise, and
// x̂ = Π_C(x̃ + b) is released.
//
// Neighbouring relation: one record replaced. Sensitivity (corrected, spec
// N12): x_t moves by at most λ/t with λ = (1+κ)·2L'/α (Lemma 4, IGD's
// Stability), so the average moves by Δ = λ(H_T − 1)/T ≤ λ ln T/T; eq.
// (37) sums 2L'/(t−1) without the 1/α. Noise: the exact discrete Gaussian
// vector mechanism with clipping norm Δ, σ = Δ/ChargedMu(ε, δ), whose
// charge is the target (Exact), or the paper's corrected β =
// 2√2·L'·ln T/(α T ε)·√(ln(1/δ) + ε). The ledger is charged ρ = (Δ/σ)²/2
// before the release; Privacy reports the exact μ-GDP ε beside it.
func POL(r *rng.Rand, cost Cost, records []Example, cal Calibration, l *ledger.Ledger, groups []string) (Offline, error) {
	var out Offline
	if err := cal.validate(); err != nil {
		return out, fmt.Errorf("pol: %w", err)
	}
	steps := len(records)
	if steps < 2 {
		return out, fmt.Errorf("pol: needs at least 2 records, got %d", steps)
	}
	igd, err := NewIGD(cost, steps)
	if err != nil {
		return out, fmt.Errorf("pol: %w", err)
	}
	avg := make([]float64, cost.Dim) // x_1 = 0 contributes nothing
	for t, ex := range records[:steps-1] {
		x, err := igd.Update(t+1, ex)
		if err != nil {
			return out, fmt.Errorf("pol: %w", err)
		}
		for j, v := range x {
			avg[j] += v
		}
	}
	// The last record only defines x_{T+1}, which the average omits; it is
	// still validated so that a bad record is never silently skipped.
	if err := cost.Check(steps, records[steps-1]); err != nil {
		return out, fmt.Errorf("pol: %w", err)
	}
	T := float64(steps)
	for j := range avg {
		avg[j] /= T
	}
	harmonic := 0.0
	for t := 2; t <= steps; t++ {
		harmonic += 1 / float64(t)
	}
	out.Sensitivity = igd.Stability() * harmonic / T
	lp := cost.Lipschitz()
	out.PrintedSigma = 2 * math.Sqrt2 * lp * math.Log(T) / (T * cal.Epsilon) * math.Sqrt(math.Log(1/cal.Delta)+cal.Epsilon)
	if out.PrintedEpsilon, err = mech.GaussianEpsilon(out.Sensitivity/out.PrintedSigma, cal.Delta); err != nil {
		return out, fmt.Errorf("pol: %w", err)
	}
	if cal.Exact {
		mu, err := ChargedMu(cal)
		if err != nil {
			return out, fmt.Errorf("pol: %w", err)
		}
		out.Sigma = out.Sensitivity / mu
	} else {
		out.Sigma = out.PrintedSigma / cost.Alpha
	}
	if out.Privacy, err = newPrivacy("pol(igd)", out.Sensitivity/out.Sigma, cal.Delta); err != nil {
		return out, fmt.Errorf("pol: %w", err)
	}
	out.Privacy.NominalEpsilon, out.Privacy.NominalDelta = cal.Epsilon, cal.Delta
	noise, err := mech.NewGaussianVector(out.Sigma/out.Sensitivity, out.Sensitivity, cost.Dim)
	if err != nil {
		return out, fmt.Errorf("pol: %w", err)
	}
	model, err := ledger.ReleaseCharge(l, ledger.Charge{Groups: groups, Loss: out.Privacy.Loss()}, func() ([]float64, error) {
		if err := noise.AddTo(r, avg); err != nil {
			return nil, err
		}
		vec.ProjectBall(avg, cost.Radius)
		return avg, nil
	})
	if err != nil {
		return out, fmt.Errorf("pol: %w", err)
	}
	out.Model = model
	return out, nil
}
