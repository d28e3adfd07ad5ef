package account

import (
	"fmt"
	"math"
	"slices"
)

// The mechanisms a PLDTerm can name.
const (
	// PLDGaussian is the Gaussian mechanism, ℓ2 sensitivity 1, noise
	// standard deviation NoiseMultiplier.
	PLDGaussian = "gaussian"
	// PLDSubsampledGaussian is the Gaussian mechanism on a Poisson sample
	// with rate SampleRate (add/remove adjacency, both directions).
	PLDSubsampledGaussian = "subsampled-gaussian"
	// PLDSubsampledGaussianReplace is the Gaussian mechanism on a Poisson
	// sample with rate SampleRate under replace-one adjacency (one record's
	// clipped gradient replaced by another's): the pair
	// (1−q)N(0,σ²) + qN(1,σ²) against (1−q)N(0,σ²) + qN(−1,σ²) (see
	// replace.go); SampleRate 1 is the Gaussian with sensitivity 2.
	PLDSubsampledGaussianReplace = "subsampled-gaussian-replace"
	// PLDLaplace is the Laplace mechanism, ℓ1 sensitivity 1, scale Scale.
	PLDLaplace = "laplace"
	// PLDSubsampledLaplace is the Laplace mechanism on a Poisson sample.
	PLDSubsampledLaplace = "subsampled-laplace"
	// PLDRandomizedResponse is binary randomized response with parameter
	// Epsilon (truth kept with probability e^ε/(1+e^ε)).
	PLDRandomizedResponse = "randomized-response"
	// PLDDiscreteLaplace is P(x) ∝ e^{−|x|/Scale} on the integers, integer
	// Sensitivity.
	PLDDiscreteLaplace = "discrete-laplace"
	// PLDDiscreteGaussian is P(x) ∝ e^{−x²/(2·Scale²)} on the integers,
	// integer Sensitivity (Canonne, Kamath & Steinke 2020).
	PLDDiscreteGaussian = "discrete-gaussian"
	// PLDApprox is any (Epsilon, Delta)-DP mechanism, through its
	// dominating pair.
	PLDApprox = "approx"
)

// Limits of the PLD accountant's inputs (beyond them the grid would be too
// long or the loss underflows; each error names the limit).
const (
	pldMaxSigma       = 1e6
	pldMaxScale       = 1e6
	pldMaxEpsilon     = 500.0
	pldMaxSensitivity = 1 << 16
	pldMaxCount       = 1 << 30
	// pldMaxDiscreteSigma keeps the discrete Gaussian's 24σ outcomes within
	// a grid's length.
	pldMaxDiscreteSigma = 1e5
)

// PLDTerm is one mechanism of a privacy-loss-distribution loss, used Count
// times. Only the fields its Kind names are read.
type PLDTerm struct {
	// Kind is one of the PLD* mechanism names.
	Kind string `json:"kind"`
	// NoiseMultiplier is σ over the ℓ2 sensitivity (Gaussian kinds).
	NoiseMultiplier float64 `json:"noise_multiplier,omitempty"`
	// Scale is the Laplace scale over the ℓ1 sensitivity, or the discrete
	// mechanisms' t or σ.
	Scale float64 `json:"scale,omitempty"`
	// SampleRate is the Poisson sampling rate q (subsampled kinds).
	SampleRate float64 `json:"sample_rate,omitempty"`
	// Sensitivity is the discrete mechanisms' integer sensitivity.
	Sensitivity int `json:"sensitivity,omitempty"`
	// Epsilon and Delta are the randomized-response and approx parameters.
	Epsilon float64 `json:"epsilon,omitempty"`
	Delta   float64 `json:"delta,omitempty"`
	// Count is the number of uses (≥ 1).
	Count int `json:"count"`
	// Part, when ≥ 1, makes the term one of a Loss's parallel
	// alternatives (see Parallel); 0 is every alternative's.
	Part int `json:"part,omitempty"`
}

// Validate reports whether t is a usable term.
func (t PLDTerm) Validate() error {
	if err := t.validate(); err != nil {
		return fmt.Errorf("PLD term %q: %w", t.Kind, err)
	}
	return nil
}

func (t PLDTerm) validate() error {
	if t.Count < 1 || t.Count > pldMaxCount {
		return fmt.Errorf("count must lie in [1, %d], got %d", pldMaxCount, t.Count)
	}
	if t.Part < 0 || t.Part > pldMaxParts {
		return fmt.Errorf("part must lie in [0, %d], got %d", pldMaxParts, t.Part)
	}
	rate := func() error {
		if !(t.SampleRate > 0 && t.SampleRate <= 1) {
			return fmt.Errorf("sample rate must satisfy 0 < q <= 1, got %v", t.SampleRate)
		}
		return nil
	}
	switch t.Kind {
	case PLDSubsampledGaussian, PLDSubsampledGaussianReplace:
		if err := rate(); err != nil {
			return err
		}
		fallthrough
	case PLDGaussian:
		return checkRange("noise multiplier", t.NoiseMultiplier, pldMaxSigma)
	case PLDSubsampledLaplace:
		if err := rate(); err != nil {
			return err
		}
		fallthrough
	case PLDLaplace:
		return checkRange("laplace scale", t.Scale, pldMaxScale)
	case PLDDiscreteLaplace, PLDDiscreteGaussian:
		if t.Sensitivity < 1 || t.Sensitivity > pldMaxSensitivity {
			return fmt.Errorf("sensitivity must be an integer in [1, %d], got %d", pldMaxSensitivity, t.Sensitivity)
		}
		if t.Kind == PLDDiscreteGaussian {
			return checkRange("discrete gaussian sigma", t.Scale, pldMaxDiscreteSigma)
		}
		return checkRange("scale", t.Scale, pldMaxScale)
	case PLDRandomizedResponse, PLDApprox:
		if !(t.Epsilon >= 0 && t.Epsilon <= pldMaxEpsilon) {
			return fmt.Errorf("epsilon must lie in [0, %v], got %v", pldMaxEpsilon, t.Epsilon)
		}
		if t.Kind == PLDRandomizedResponse && t.Delta != 0 {
			return fmt.Errorf("randomized response has delta 0, got %v", t.Delta)
		}
		return ValidateDelta(t.Delta)
	}
	return fmt.Errorf("unknown PLD mechanism (want %s, %s, %s, %s, %s, %s, %s, %s or %s)", PLDGaussian, PLDSubsampledGaussian,
		PLDSubsampledGaussianReplace, PLDLaplace, PLDSubsampledLaplace, PLDRandomizedResponse, PLDDiscreteLaplace, PLDDiscreteGaussian, PLDApprox)
}

// checkRange accepts finite v in (0, limit].
func checkRange(name string, v, limit float64) error {
	if err := checkFinitePositive(name, v); err != nil {
		return err
	}
	if v > limit {
		return fmt.Errorf("%s must be <= %v for the PLD accountant, got %v", name, limit, v)
	}
	return nil
}

// symmetric reports whether the term's add and remove directions have the
// same loss distribution.
func (t PLDTerm) symmetric() bool {
	switch t.Kind {
	case PLDSubsampledGaussian, PLDSubsampledLaplace:
		return t.SampleRate == 1
	}
	return true
}

// dist returns the term's loss distribution in one direction.
func (t PLDTerm) dist(add bool) lossDist {
	switch t.Kind {
	case PLDGaussian:
		return lossDist{cont: subGauss{q: 1, sigma: t.NoiseMultiplier}}
	case PLDSubsampledGaussian:
		return lossDist{cont: subGauss{q: t.SampleRate, sigma: t.NoiseMultiplier, add: add}}
	case PLDSubsampledGaussianReplace:
		return lossDist{cont: replaceDist{replacePair{q: t.SampleRate, sigma: t.NoiseMultiplier}}}
	case PLDLaplace:
		return subLaplace{q: 1, b: t.Scale}.dist()
	case PLDSubsampledLaplace:
		return subLaplace{q: t.SampleRate, b: t.Scale, add: add}.dist()
	case PLDDiscreteLaplace:
		return discreteLaplaceDist(t.Scale, t.Sensitivity)
	case PLDDiscreteGaussian:
		return discreteGaussianDist(t.Scale, t.Sensitivity)
	}
	return approxDist(t.Epsilon, t.Delta) // randomized response, approx
}

// PLDOptions configures the PLD accountant; the zero value is the default
// grid.
type PLDOptions struct {
	// Step is the grid width Δ (0 means DefaultPLDStep).
	Step float64
	// upperOnly skips the lower grid (its bound is then 0), for searches
	// that read only the certified ε.
	upperOnly bool
	// cache reuses and stores composed laws (see pldCache).
	cache bool
}

func (o PLDOptions) step() float64 {
	if o.Step == 0 {
		return DefaultPLDStep
	}
	return o.Step
}

// PLDPair holds the composed PLDs of both directions of add/remove
// adjacency; for symmetric mechanisms they are one.
type PLDPair struct {
	Remove, Add *PLD
}

// ComposePLD returns the PLD pair of the terms run one after another, each
// Count times: every term discretised once, raised to its count by FFT,
// and the terms convolved (heterogeneous schedules compose exactly).
func ComposePLD(terms []PLDTerm, opt PLDOptions) (PLDPair, error) {
	if len(terms) == 0 {
		return PLDPair{}, fmt.Errorf("PLD of no mechanisms")
	}
	step := opt.step()
	if err := validateStep(step); err != nil {
		return PLDPair{}, err
	}
	if hasParts(terms) {
		return PLDPair{}, fmt.Errorf("PLD terms with parallel parts have no single distribution: read them through Loss.EpsilonAt")
	}
	terms = mergeTerms(terms)
	sym := true
	for _, t := range terms {
		if err := t.Validate(); err != nil {
			return PLDPair{}, err
		}
		sym = sym && t.symmetric()
	}
	remove, err := composeDirection(terms, step, false, opt)
	if err != nil {
		return PLDPair{}, err
	}
	if sym {
		return PLDPair{Remove: remove, Add: remove}, nil
	}
	add, err := composeDirection(terms, step, true, opt)
	if err != nil {
		return PLDPair{}, err
	}
	return PLDPair{Remove: remove, Add: add}, nil
}

func composeDirection(terms []PLDTerm, step float64, add bool, opt PLDOptions) (*PLD, error) {
	start, acc := 0, (*PLD)(nil)
	if opt.cache { // the longest cached prefix, the whole list first
		for i := len(terms); i > 0 && acc == nil; i-- {
			if acc = theCache.get(pldKey(terms[:i], step, add, opt.upperOnly)); acc != nil {
				start = i
			}
		}
	}
	for _, t := range terms[start:] {
		one, err := oneStep(t, step, add, opt)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", t.Kind, err)
		}
		p, err := one.Times(t.Count)
		if err != nil {
			return nil, fmt.Errorf("%s × %d: %w", t.Kind, t.Count, err)
		}
		if acc == nil {
			acc = p
		} else if acc, err = acc.Compose(p); err != nil {
			return nil, err
		}
	}
	if opt.cache && start < len(terms) {
		theCache.put(pldKey(terms, step, add, opt.upperOnly), acc)
	}
	return acc, nil
}

// oneStep returns the discretised law of one use of t (cached with
// opt.cache).
func oneStep(t PLDTerm, step float64, add bool, opt PLDOptions) (*PLD, error) {
	t.Count = 1
	key := pldKey([]PLDTerm{t}, step, add, opt.upperOnly)
	if opt.cache {
		if p := theCache.get(key); p != nil {
			return p, nil
		}
	}
	one, err := discretise(t.dist(add), step)
	if err != nil {
		return nil, err
	}
	if opt.upperOnly { // an empty lower grid bounds nothing: its ε is 0
		one.lower, one.mean, one.rounds = grid{}, 0, 0
	}
	if opt.cache {
		theCache.put(key, one)
	}
	return one, nil
}

// Epsilon returns lower and upper bounds on the pair's ε at δ = delta: the
// larger over the two directions.
func (pp PLDPair) Epsilon(delta float64) (lower, upper float64, err error) {
	lower, upper, _, err = pp.epsilon(delta)
	return lower, upper, err
}

// epsilon is Epsilon with the rounding allowance at the upper bound (the
// larger of the two directions').
func (pp PLDPair) epsilon(delta float64) (lower, upper, noise float64, err error) {
	lower, upper, noise, err = pp.Remove.epsilon(delta)
	if err != nil || pp.Add == pp.Remove {
		return lower, upper, noise, err
	}
	lo, up, nz, err := pp.Add.epsilon(delta)
	return math.Max(lower, lo), math.Max(upper, up), math.Max(noise, nz), err
}

// Delta returns lower and upper bounds on the pair's δ at ε = eps.
func (pp PLDPair) Delta(eps float64) (lower, upper float64, err error) {
	lower, upper, err = pp.Remove.Delta(eps)
	if err != nil || pp.Add == pp.Remove {
		return lower, upper, err
	}
	lo, up, err := pp.Add.Delta(eps)
	return math.Max(lower, lo), math.Max(upper, up), err
}

// PLDResult is an (ε, δ) guarantee from the PLD accountant, with a lower
// bound on the ε the same loss distribution truly has.
type PLDResult struct {
	// Epsilon is the certified (upper-bound) ε.
	Epsilon float64 `json:"epsilon"`
	// EpsilonLower is a lower bound on the exact ε: no accountant can
	// certify less for these mechanisms.
	EpsilonLower float64 `json:"epsilon_lower"`
	// Delta is the δ the guarantee holds for.
	Delta float64 `json:"delta"`
	// Warning is set when FFT rounding allowance makes up more than a
	// tenth of δ: the upper bound is then loose (a finer computation or
	// the RDP accountant may certify less).
	Warning string `json:"warning,omitempty"`
}

// PLDEpsilon returns the (ε, δ) guarantee of the terms composed.
func PLDEpsilon(terms []PLDTerm, delta float64, opt PLDOptions) (PLDResult, error) {
	if err := ValidateDelta(delta); err != nil {
		return PLDResult{}, err
	}
	pp, err := ComposePLD(terms, opt)
	if err != nil {
		return PLDResult{}, err
	}
	lo, up, nd, err := pp.epsilon(delta)
	if err != nil {
		return PLDResult{}, err
	}
	res := PLDResult{Epsilon: up, EpsilonLower: lo, Delta: delta}
	if nd > delta/10 {
		res.Warning = fmt.Sprintf("FFT rounding allowance %.2g is %.0f%% of delta: the upper bound is loose at this delta", nd, 100*nd/delta)
	}
	return res, nil
}

// PhaseTerms returns the PLD terms of DP-SGD phases (Poisson-subsampled
// Gaussian steps); phases that spend nothing (q = 0 or no steps) are left
// out, so the result may be empty.
func PhaseTerms(phases []Phase) ([]PLDTerm, error) {
	return termsOf(phases, PLDSubsampledGaussian)
}

// PhaseTermsReplace is PhaseTerms under replace-one adjacency: terms of
// kind PLDSubsampledGaussianReplace, one per phase that samples records.
func PhaseTermsReplace(phases []Phase) ([]PLDTerm, error) {
	return termsOf(phases, PLDSubsampledGaussianReplace)
}

func termsOf(phases []Phase, kind string) ([]PLDTerm, error) {
	if err := validatePhases(phases); err != nil {
		return nil, err
	}
	var out []PLDTerm
	for _, p := range phases {
		if p.SampleRate == 0 || p.Steps == 0 {
			continue
		}
		out = append(out, PLDTerm{Kind: kind, SampleRate: p.SampleRate, NoiseMultiplier: p.NoiseMultiplier, Count: p.Steps})
	}
	return out, nil
}

// PLDLoss returns the loss of the mechanisms the terms name, accounted by
// privacy-loss distribution.
func PLDLoss(mechanism string, terms ...PLDTerm) (Loss, error) {
	if len(terms) == 0 {
		return Loss{}, fmt.Errorf("%s: no PLD terms", mechanism)
	}
	for _, t := range terms {
		if err := t.Validate(); err != nil {
			return Loss{}, fmt.Errorf("%s: %w", mechanism, err)
		}
	}
	return Loss{Mechanism: mechanism, PLD: mergeTerms(terms)}, nil
}

// mergeTerms returns terms with equal mechanisms merged (counts added),
// in order of first appearance; the input is not changed.
func mergeTerms(terms []PLDTerm) []PLDTerm {
	out := make([]PLDTerm, 0, len(terms))
	for _, t := range terms {
		key := t
		key.Count = 0
		i := slices.IndexFunc(out, func(o PLDTerm) bool { o.Count = 0; return o == key })
		if i >= 0 {
			out[i].Count += t.Count
			continue
		}
		out = append(out, t)
	}
	return out
}

// pldEpsilon is EpsilonAt for a loss with a PLD part: the approximate part
// joins the PLD through its dominating pair; a Rényi part, if any, gets
// half of delta and the PLD the other half (basic composition).
func (l Loss) pldEpsilon(delta float64, conv Conversion) (float64, error) {
	var renyi float64
	if l.HasRDP() {
		if !(delta > l.Delta) {
			return 0, fmt.Errorf("%s: a Rényi loss needs delta above %v, got %v", l.Mechanism, l.Delta, delta)
		}
		half := (delta - l.Delta) / 2
		renyi = Loss{Rho: l.Rho, Orders: l.Orders, RDP: l.RDP}.renyiEpsilon(half, conv)
		delta -= half
	}
	// The largest over the parallel alternatives (one without parts).
	var worst float64
	for _, terms := range alternatives(l.PLD) {
		if l.Epsilon > 0 || l.Delta > 0 {
			terms = append(slices.Clone(terms), PLDTerm{Kind: PLDApprox, Epsilon: l.Epsilon, Delta: l.Delta, Count: 1})
		}
		eps, err := certifiedEpsilon(terms, delta)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", l.Mechanism, err)
		}
		worst = max(worst, eps)
	}
	return renyi + worst, nil
}

// certifiedEpsilon is the PLD accountant's certified ε of terms at delta,
// through the cache. Only it is read, so the lower grid is skipped unless
// rounding dominates δ, where the lower bound steers the tilt.
func certifiedEpsilon(terms []PLDTerm, delta float64) (float64, error) {
	res, err := PLDEpsilon(terms, delta, PLDOptions{upperOnly: true, cache: true})
	if err == nil && res.Warning != "" {
		res, err = PLDEpsilon(terms, delta, PLDOptions{cache: true})
	}
	return res.Epsilon, err
}
