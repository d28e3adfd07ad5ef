package kanon

import "errors"

// Cell is one entry of the appendix grid: the smallest k that gives
// (Epsilon, Delta)-DP at sampling rate Beta, or Feasible = false when
// Epsilon is below −ln(1 − β), the range Li–Qardaji–Su Thm 5 covers.
type Cell struct {
	Epsilon  float64 `json:"epsilon"`
	Delta    float64 `json:"delta"`
	Beta     float64 `json:"beta"`
	Feasible bool    `json:"feasible"`
	// K is the smallest threshold meeting (Epsilon, Delta) at Beta.
	K int `json:"k,omitempty"`
	// DeltaAtK is the δ that threshold actually gives (≤ Delta).
	DeltaAtK float64 `json:"delta_at_k,omitempty"`
	// NMax is where that δ peaks.
	NMax int `json:"n_max,omitempty"`
}

// Grid is the appendix table's layout (Feyisetan et al. 2019, Table 1: a
// grid of (ε, δ) with the β and k that meet it). The copy of the paper at
// hand lost the table's body, so the values here are dpal's own grid.
type Grid struct {
	Epsilons []float64 `json:"epsilons"`
	Deltas   []float64 `json:"deltas"`
	Betas    []float64 `json:"betas"`
}

// AppendixGrid returns the grid `dpal kanon account --table` prints: ε up
// to 1.0 (the paper's largest) and δ down from 1e-6 (its largest).
func AppendixGrid() Grid {
	return Grid{
		Epsilons: []float64{0.1, 0.25, 0.5, 0.75, 1.0},
		Deltas:   []float64{1e-6, 1e-8, 1e-10, 1e-12},
		Betas:    []float64{0.01, 0.05, 0.1, 0.2, 0.3, 0.5},
	}
}

// Table computes every cell of g, δ-major then ε then β.
func Table(g Grid) ([]Cell, error) {
	var out []Cell
	for _, d := range g.Deltas {
		for _, e := range g.Epsilons {
			for _, b := range g.Betas {
				r, ok, err := feasible(SmallestK(b, e, d))
				if err != nil {
					return nil, err
				}
				out = append(out, Cell{Epsilon: e, Delta: d, Beta: b, Feasible: ok, K: r.K, DeltaAtK: r.Delta, NMax: r.NMax})
			}
		}
	}
	return out, nil
}

// Guarantee is the Li–Qardaji–Su ε of one (β, k) at a target δ, or none.
type Guarantee struct {
	Beta       float64 `json:"beta"`
	K          int     `json:"k"`
	Guaranteed bool    `json:"guaranteed"`
	Epsilon    float64 `json:"epsilon,omitempty"`
	Delta      float64 `json:"delta,omitempty"`
	NMax       int     `json:"n_max,omitempty"`
}

// Guarantees returns the smallest ε at delta for every (β, k), β-major:
// the paper's grid read as guarantees.
func Guarantees(betas []float64, ks []int, delta float64) ([]Guarantee, error) {
	var out []Guarantee
	for _, b := range betas {
		for _, k := range ks {
			r, ok, err := feasible(Epsilon(b, k, delta))
			if err != nil {
				return nil, err
			}
			out = append(out, Guarantee{Beta: b, K: k, Guaranteed: ok, Epsilon: r.Epsilon, Delta: r.Delta, NMax: r.NMax})
		}
	}
	return out, nil
}

// feasible turns ErrNoGuarantee into ok = false (and a zero result).
func feasible(r Bound, err error) (Bound, bool, error) {
	switch {
	case errors.Is(err, ErrNoGuarantee):
		return Bound{}, false, nil
	case err != nil:
		return r, false, err
	}
	return r, true, nil
}
