package account

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func gaussTerm(sigma float64, k int) PLDTerm {
	return PLDTerm{Kind: PLDGaussian, NoiseMultiplier: sigma, Count: k}
}

func sgTerm(q, sigma float64, k int) PLDTerm {
	return PLDTerm{Kind: PLDSubsampledGaussian, SampleRate: q, NoiseMultiplier: sigma, Count: k}
}

func mustPair(t *testing.T, opt PLDOptions, terms ...PLDTerm) PLDPair {
	t.Helper()
	pp, err := ComposePLD(terms, opt)
	if err != nil {
		t.Fatal(err)
	}
	return pp
}

// TestPLDLaplaceClosedForm: the Laplace mechanism with scale b has
// δ(ε) = 1 − e^{(ε − 1/b)/2} for 0 ≤ ε < 1/b (and 0 beyond).
func TestPLDLaplaceClosedForm(t *testing.T) {
	for _, b := range []float64{0.3, 1, 4} {
		pp := mustPair(t, PLDOptions{}, PLDTerm{Kind: PLDLaplace, Scale: b, Count: 1})
		for _, eps := range []float64{0, 0.1, 0.5 / b, 0.9 / b, 1 / b, 2 / b} {
			want := math.Max(0, -math.Expm1((eps-1/b)/2))
			lo, up, err := pp.Delta(eps)
			if err != nil {
				t.Fatal(err)
			}
			if !(lo <= want*(1+1e-12)+1e-15 && want <= up*(1+1e-12)+1e-15) {
				t.Errorf("b=%v ε=%v: δ=%v not in [%v, %v]", b, eps, want, lo, up)
			}
			if want > 0 && relErr(up, want) > 1e-6 {
				t.Errorf("b=%v ε=%v: upper δ %v, closed form %v (rel err %.2g)", b, eps, up, want, relErr(up, want))
			}
		}
	}
}

// TestPLDRandomizedResponseExact: randomized response has
// δ(ε') = (e^ε − e^ε')/(1 + e^ε) for ε' < ε; k uses of it are exactly the
// optimal composition (KOVDelta). With ε on the grid the upper bound is
// exact for one use; for 30 it carries the certified FFT rounding
// allowance (at most 4e-8 here: the spectrum of two atoms does not decay,
// so the bound is far from the measured rounding).
func TestPLDRandomizedResponseExact(t *testing.T) {
	rr := func(k int) PLDTerm { return PLDTerm{Kind: PLDRandomizedResponse, Epsilon: 0.5, Count: k} }
	pp := mustPair(t, PLDOptions{}, rr(1))
	for _, e := range []float64{0, 0.2, 0.4999} {
		want := (math.Exp(0.5) - math.Exp(e)) / (1 + math.Exp(0.5))
		lo, up, _ := pp.Delta(e)
		if relErr(up, want) > 1e-10 || lo > want {
			t.Errorf("ε'=%v: δ in [%v, %v], exact %v", e, lo, up, want)
		}
	}
	if lo, up, err := pp.Epsilon(0); err != nil || math.Abs(up-0.5) > 1e-12 || lo > 0.5 {
		t.Errorf("ε(δ=0) in [%v, %v] (%v), want 0.5", lo, up, err)
	}
	pp = mustPair(t, PLDOptions{}, rr(30))
	for _, e := range []float64{1, 3, 6.5, 10} {
		want, err := KOVDelta(0.5, 0, 30, e)
		if err != nil {
			t.Fatal(err)
		}
		lo, up, _ := pp.Delta(e)
		if up < want*(1-1e-9) || up-want > 1e-7 || lo > want*(1+1e-12) {
			t.Errorf("30 × RR: ε=%v: δ in [%v, %v], optimal composition %v", e, lo, up, want)
		}
	}
}

// TestPLDBelowRDP runs the RDP test grid (TestPrunedSearchEqualsFullScan):
// the PLD upper ε never exceeds the RDP one and the lower never exceeds
// the upper. A grid too long for the default step is retried coarser.
func TestPLDBelowRDP(t *testing.T) {
	for _, q := range []float64{1e-4, 0.003, 0.05, 0.3, 0.9, 1} {
		for _, sigma := range []float64{0.4, 0.8, 1.5, 5, 30} {
			for _, steps := range []int{1, 100, 10000} {
				phases := []Phase{{SampleRate: q, NoiseMultiplier: sigma, Steps: steps}}
				rdp, err := Epsilon(phases, 1e-6, Options{})
				if err != nil {
					t.Fatal(err)
				}
				var res PLDResult
				// A coarser grid where ε is large keeps the test fast; any
				// grid gives an upper bound.
				grids := []float64{1e-4, 1e-3, 1e-2, 1e-1}
				if rdp.Epsilon > 20 {
					grids = grids[2:]
				} else if rdp.Epsilon > 2 {
					grids = grids[1:]
				}
				for _, step := range grids {
					if res, err = PLDEpsilon([]PLDTerm{sgTerm(q, sigma, steps)}, 1e-6, PLDOptions{Step: step}); err == nil {
						break
					}
				}
				if err != nil {
					t.Errorf("q=%v σ=%v steps=%d: %v", q, sigma, steps, err)
					continue
				}
				if !(res.EpsilonLower <= res.Epsilon && res.Epsilon <= rdp.Epsilon) {
					t.Errorf("q=%v σ=%v steps=%d: PLD [%v, %v], RDP %v", q, sigma, steps, res.EpsilonLower, res.Epsilon, rdp.Epsilon)
				}
			}
		}
	}
}

// TestPLDGapShrinks: the gap between the bounds falls as Δ falls.
func TestPLDGapShrinks(t *testing.T) {
	for _, tc := range []PLDTerm{sgTerm(0.01, 1, 500), gaussTerm(2, 10), {Kind: PLDLaplace, Scale: 2, Count: 20}} {
		prev := math.Inf(1)
		for _, step := range []float64{1e-2, 1e-3, 1e-4} {
			res, err := PLDEpsilon([]PLDTerm{tc}, 1e-6, PLDOptions{Step: step})
			if err != nil {
				t.Fatal(err)
			}
			gap := res.Epsilon - res.EpsilonLower
			if !(gap >= 0 && gap < prev) {
				t.Errorf("%s: gap %v at Δ=%v after %v", tc.Kind, gap, step, prev)
			}
			prev = gap
		}
	}
}

// tabulated is a function tabulated on an even grid, read by cubic
// (Catmull–Rom) interpolation; below the grid it is below(x), above it 0.
type tabulated struct {
	lo, h float64
	v     []float64
	below func(float64) float64
}

func (f tabulated) at(x float64) float64 {
	u := (x - f.lo) / f.h
	i := int(math.Floor(u))
	if i < 1 {
		return f.below(x)
	}
	if i >= len(f.v)-2 {
		return 0
	}
	t := u - float64(i)
	p0, p1, p2, p3 := f.v[i-1], f.v[i], f.v[i+1], f.v[i+2]
	return p1 + 0.5*t*(p2-p0+t*(2*p0-5*p1+4*p2-p3+t*(3*(p1-p2)+p3-p0)))
}

// TestPLDAgainstIntegration checks k ≤ 20 Poisson-subsampled Gaussians
// (remove direction) against δ from numerical integration of the exact
// loss, independent of the grid code: δ₁(ε) = P(x > x*) − e^ε Q(x > x*)
// at the outcome x* where the loss is ε, and δ_k(ε) = ∫ p(x)·δ_{k−1}(ε −
// L(x)) dx, each δ_{k−1} tabulated and interpolated.
func TestPLDAgainstIntegration(t *testing.T) {
	const q, sigma = 0.1, 1.0
	s2 := sigma * sigma
	phic := func(x float64) float64 { return 0.5 * math.Erfc(x/math.Sqrt2) }
	loss := func(x float64) float64 { return math.Log(1 - q + q*math.Exp((2*x-1)/(2*s2))) }
	density := func(x float64) float64 {
		n := func(m float64) float64 { return math.Exp(-(x-m)*(x-m)/(2*s2)) / (sigma * math.Sqrt(2*math.Pi)) }
		return (1-q)*n(0) + q*n(1)
	}
	delta1 := func(e float64) float64 {
		if e <= math.Log(1-q) {
			return -math.Expm1(e)
		}
		x := s2*math.Log((math.Exp(e)-1+q)/q) + 0.5
		return (1-q)*phic(x/sigma) + q*phic((x-1)/sigma) - math.Exp(e)*phic(x/sigma)
	}
	// δ₂ from the closed form, then a tabulated recursion to k = 20.
	one, err := discretise(sgTerm(q, sigma, 1).dist(false), DefaultPLDStep)
	if err != nil {
		t.Fatal(err)
	}
	check := func(k int, eps float64, want float64) {
		t.Helper()
		p, err := one.Times(k)
		if err != nil {
			t.Fatal(err)
		}
		lo, up, _ := p.Delta(eps)
		if !(lo <= want*(1+1e-6) && want <= up*(1+1e-6)) {
			t.Errorf("k=%d ε=%v: integral δ=%.10g not in [%.10g, %.10g]", k, eps, want, lo, up)
		}
	}
	for _, e := range []float64{0.5, 1, 2} {
		check(2, e, integrate(func(x float64) float64 { return density(x) * delta1(e-loss(x)) }, -9*sigma, 1+9*sigma, 0.1))
	}
	const h, lo, hi = 1.5e-2, -2.0, 4.0
	n := int((hi-lo)/h) + 1
	below := func(e float64) float64 { return -math.Expm1(e) } // ε below every loss
	prev := tabulated{lo: lo, h: h, below: below}
	for i := 0; i < n; i++ {
		prev.v = append(prev.v, delta1(lo+float64(i)*h))
	}
	for k := 2; k <= 20; k++ {
		next := tabulated{lo: lo, h: h, below: below, v: make([]float64, n)}
		for i := range next.v {
			e := lo + float64(i)*h
			next.v[i] = integrate(func(x float64) float64 { return density(x) * prev.at(e-loss(x)) }, -9*sigma, 1+9*sigma, 0.25)
		}
		prev = next
		if k == 10 || k == 20 {
			for _, e := range []float64{0.5, 1, 2} {
				check(k, e, prev.at(e))
			}
		}
	}
}

// TestPLDSmallDeltaAndSigma: δ down to 1e-15 and σ down to 0.3 give finite
// bounds, in order, quickly.
func TestPLDSmallDeltaAndSigma(t *testing.T) {
	// σ = 0.3 at δ = 1e-15 spans losses up to ~400: a coarser grid keeps
	// the test light (the default one takes 3 s and 465 MB, see the doc).
	for _, tc := range []struct {
		name  string
		terms []PLDTerm
		delta float64
		step  float64
	}{
		{"gaussian σ=0.3", []PLDTerm{gaussTerm(0.3, 1)}, 1e-15, 0},
		{"subsampled σ=0.3", []PLDTerm{sgTerm(0.01, 0.3, 100)}, 1e-5, 0},
		{"subsampled σ=0.3 δ=1e-15", []PLDTerm{sgTerm(0.01, 0.3, 100)}, 1e-15, 1e-3},
		{"dpsgd δ=1e-15", []PLDTerm{sgTerm(0.01, 1, 1000)}, 1e-15, 0},
		{"mnist δ=1e-15", []PLDTerm{sgTerm(256.0/60000, 1.1, 14062)}, 1e-15, 0},
		{"gaussian δ=1e-15", []PLDTerm{gaussTerm(1, 1)}, 1e-15, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := PLDEpsilon(tc.terms, tc.delta, PLDOptions{Step: tc.step})
			if err != nil {
				t.Fatal(err)
			}
			if !(res.EpsilonLower > 0 && res.EpsilonLower <= res.Epsilon && !math.IsInf(res.Epsilon, 0)) {
				t.Errorf("%+v", res)
			}
			// The lower bound stays below RDP's ε, an upper bound, even
			// where FFT rounding dominates the PLD's own upper bound.
			if tc.terms[0].Kind == PLDSubsampledGaussian {
				tm := tc.terms[0]
				rdp, err := Epsilon([]Phase{{SampleRate: tm.SampleRate, NoiseMultiplier: tm.NoiseMultiplier, Steps: tm.Count}}, tc.delta, Options{})
				if err != nil || res.EpsilonLower > rdp.Epsilon {
					t.Errorf("PLD lower %v above RDP ε %v (%v)", res.EpsilonLower, rdp.Epsilon, err)
				}
				// Tilting keeps rounding out of the way: the certified ε
				// beats RDP's at δ = 1e-15 too.
				if res.Epsilon > rdp.Epsilon || res.Warning != "" {
					t.Errorf("PLD ε %v above RDP ε %v (%s)", res.Epsilon, rdp.Epsilon, res.Warning)
				}
			}
		})
	}
}

func TestPLDErrors(t *testing.T) {
	for _, tc := range []struct {
		terms []PLDTerm
		delta float64
		opt   PLDOptions
		want  string
	}{
		{[]PLDTerm{gaussTerm(1, 1)}, 1e-5, PLDOptions{Step: 1e-9}, "[1e-07, 1]"},
		{[]PLDTerm{gaussTerm(1e7, 1)}, 1e-5, PLDOptions{}, "<= 1e+06"},
		{[]PLDTerm{gaussTerm(0.003, 1)}, 1e-5, PLDOptions{}, "limit 4194304"},
		{[]PLDTerm{gaussTerm(1, 0)}, 1e-5, PLDOptions{}, "count must lie in [1, 1073741824]"},
		{[]PLDTerm{{Kind: PLDDiscreteGaussian, Scale: 1e6, Sensitivity: 1, Count: 1}}, 1e-5, PLDOptions{}, "<= 100000"},
		{[]PLDTerm{sgTerm(0, 1, 1)}, 1e-5, PLDOptions{}, "0 < q <= 1"},
		{[]PLDTerm{{Kind: PLDApprox, Epsilon: 1, Delta: 1e-3, Count: 1}}, 1e-5, PLDOptions{}, "below the probability"},
		{[]PLDTerm{{Kind: "bogus", Count: 1}}, 1e-5, PLDOptions{}, "unknown PLD mechanism"},
		{[]PLDTerm{{Kind: PLDDiscreteGaussian, Scale: 2, Count: 1}}, 1e-5, PLDOptions{}, "sensitivity must be"},
		{nil, 1e-5, PLDOptions{}, "no mechanisms"},
		{[]PLDTerm{gaussTerm(1, 1)}, 1, PLDOptions{}, "0 <= delta < 1"},
	} {
		_, err := PLDEpsilon(tc.terms, tc.delta, tc.opt)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want it to mention %q", tc.terms, err, tc.want)
		}
	}
}

// TestPLDBlackBoxAndDiscrete: an (ε, δ) black box gives back (ε, δ); the
// discrete Laplace with t = 1/ε is ε-DP and δ(ε') is its closed form at
// ε' = 0; the discrete Gaussian matches a direct sum.
func TestPLDBlackBoxAndDiscrete(t *testing.T) {
	pp := mustPair(t, PLDOptions{}, PLDTerm{Kind: PLDApprox, Epsilon: 0.7, Delta: 1e-6, Count: 1})
	if lo, up, err := pp.Epsilon(1e-6); err != nil || math.Abs(up-0.7) > 1e-4 || lo > 0.7 {
		t.Errorf("black box ε(1e-6) in [%v, %v] (%v), want 0.7", lo, up, err)
	}
	pp = mustPair(t, PLDOptions{}, PLDTerm{Kind: PLDDiscreteLaplace, Scale: 2, Sensitivity: 1, Count: 1})
	if _, up, _ := pp.Epsilon(0); math.Abs(up-0.5) > 1e-4 {
		t.Errorf("discrete Laplace t=2 ε(0) = %v, want 0.5", up)
	}
	// δ(0) = TV distance = (1 − r)/(1 + r) with r = e^{−1/t} for sensitivity 1.
	r := math.Exp(-0.5)
	if lo, up, _ := pp.Delta(0); relErr(up, (1-r)/(1+r)) > 1e-9 || lo > up {
		t.Errorf("discrete Laplace δ(0) in [%v, %v], want %v", lo, up, (1-r)/(1+r))
	}
	// Discrete Gaussian: δ(ε) = Σ_x (P(x) − e^ε P(x−s))₊ summed directly.
	dg := mustPair(t, PLDOptions{}, PLDTerm{Kind: PLDDiscreteGaussian, Scale: 5, Sensitivity: 2, Count: 1})
	w := func(x int) float64 { return math.Exp(-float64(x*x) / 50) }
	var z float64
	for x := -200; x <= 200; x++ {
		z += w(x)
	}
	for _, e := range []float64{0, 0.3, 0.72} { // on the loss lattice 0.08·j, and off it
		var want float64
		for x := -200; x <= 200; x++ {
			want += math.Max(0, (w(x)-math.Exp(e)*w(x-2))/z)
		}
		lo, up, _ := dg.Delta(e)
		if !(lo <= want && want <= up*(1+1e-12)) || relErr(up, want) > 1e-6 {
			t.Errorf("discrete Gaussian ε=%v: δ=%v, bounds [%v, %v]", e, want, lo, up)
		}
	}
}

// TestPLDComposeHeterogeneous: a schedule split in two equals the single
// phase; composing different phases equals the terms composed at once;
// the Loss carries PLD terms through Compose, Times and JSON.
func TestPLDComposeHeterogeneous(t *testing.T) {
	a, err := PhaseTerms([]Phase{{SampleRate: 0.01, NoiseMultiplier: 1, Steps: 300}, {SampleRate: 0.01, NoiseMultiplier: 1, Steps: 200}, {SampleRate: 0, NoiseMultiplier: 1, Steps: 9}})
	if err != nil {
		t.Fatal(err)
	}
	la, _ := PLDLoss("split", a...)
	if len(la.PLD) != 1 || la.PLD[0].Count != 500 {
		t.Errorf("split schedule merged to %+v", la.PLD)
	}
	l1, _ := PLDLoss("phase 1", sgTerm(0.01, 1, 300))
	l2, _ := PLDLoss("phase 2", sgTerm(0.05, 2, 100))
	l3, _ := PLDLoss("laplace", PLDTerm{Kind: PLDLaplace, Scale: 10, Count: 1})
	total, err := Compose(l1, l2, Pure("count", 0.1), l3)
	if err != nil {
		t.Fatal(err)
	}
	if total.Kind() != "mixed" || len(total.PLD) != 3 {
		t.Fatalf("composed loss %+v", total)
	}
	got, err := total.EpsilonAt(1e-5, Balle2020)
	if err != nil {
		t.Fatal(err)
	}
	want, err := PLDEpsilon([]PLDTerm{sgTerm(0.01, 1, 300), sgTerm(0.05, 2, 100), {Kind: PLDApprox, Epsilon: 0.1, Count: 1}, {Kind: PLDLaplace, Scale: 10, Count: 1}}, 1e-5, PLDOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if relErr(got, want.Epsilon) > 1e-9 {
		t.Errorf("Loss.EpsilonAt %v, PLDEpsilon %v", got, want.Epsilon)
	}
	b, err := json.Marshal(total)
	if err != nil {
		t.Fatal(err)
	}
	var back Loss
	if err := json.Unmarshal(b, &back); err != nil || back.Validate() != nil || len(back.PLD) != 3 || back.PLD[1] != total.PLD[1] {
		t.Errorf("JSON round trip: %s → %+v (%v)", b, back, err)
	}
	twice, err := l1.Times(2)
	if err != nil || twice.PLD[0].Count != 600 {
		t.Errorf("Times(2): %+v, %v", twice.PLD, err)
	}
	if p, err := Parallel(l1, l1); err != nil || p.PLD[0].Count != 300 {
		t.Errorf("parallel of equal PLD parts: %+v, %v", p.PLD, err)
	}
	if _, err := AmplifyPoisson(l3, 0.1); err == nil {
		t.Error("amplifying a PLD loss should fail")
	}
	// PLD beside RDP: the δ is split, both parts count.
	rdp, _ := SubsampledGaussian([]Phase{{SampleRate: 0.01, NoiseMultiplier: 1, Steps: 300}})
	mixed, _ := Compose(rdp, l1)
	e, err := mixed.EpsilonAt(1e-5, Balle2020)
	if err != nil || !(e > got/2) {
		t.Errorf("RDP + PLD: ε=%v (%v)", e, err)
	}
}

// TestFFTMatchesDirect: FFT convolution agrees with the direct sum to
// rounding.
func TestFFTMatchesDirect(t *testing.T) {
	one, err := discretise(sgTerm(0.05, 1, 1).dist(false), 1e-3)
	if err != nil {
		t.Fatal(err)
	}
	g := one.upper
	fft, _ := convolve(g, g, 1e-3) // long enough for the FFT path
	direct := grid{lo: 2 * g.lo, mass: make([]float64, 2*len(g.mass)-1)}
	for i, x := range g.mass {
		for j, y := range g.mass {
			direct.mass[i+j] += x * y
		}
	}
	var worst float64
	for i := range direct.mass {
		worst = math.Max(worst, math.Abs(direct.mass[i]-fft.mass[i]))
	}
	if worst > 1e-15 {
		t.Errorf("FFT and direct convolution differ by %v", worst)
	}
	pw, _, _ := power(g, 2, 1e-3)
	for i := range pw.mass {
		if d := math.Abs(pw.mass[i] - direct.mass[pw.lo-direct.lo+i]); d > 1e-15 {
			t.Fatalf("power(2) differs from the direct square by %v at %d", d, i)
		}
	}
}

// TestCalibratePLD: the calibrated σ (or q) meets the target, a slightly
// smaller σ (larger q) does not, and it needs less noise (allows a larger
// rate) than RDP calibration.
func TestCalibratePLD(t *testing.T) {
	target := Budget{Epsilon: 2, Delta: 1e-5}
	phases := []Phase{{SampleRate: 0.01, Steps: 300}, {SampleRate: 0.05, Steps: 50}}
	sigma, res, err := CalibrateNoisePLD(target, phases, PLDOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rdpSigma, _, _ := CalibrateNoiseSchedule(target, phases, Options{})
	if !(res.Epsilon <= 2 && res.Epsilon > 2*(1-1e-4) && sigma < rdpSigma) {
		t.Errorf("σ=%v gives %+v (RDP σ %v)", sigma, res, rdpSigma)
	}
	for i := range phases {
		phases[i].NoiseMultiplier = sigma * (1 - 1e-5)
	}
	terms, _ := PhaseTerms(phases)
	if r, err := PLDEpsilon(terms, 1e-5, PLDOptions{}); err != nil || r.Epsilon <= 2 {
		t.Errorf("σ below the calibrated one still meets the target: %+v, %v", r, err)
	}
	q, res, err := CalibrateSampleRatePLD(target, 1, 500, PLDOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rdpQ, _, _ := CalibrateSampleRate(target, 1, 500, Options{})
	if !(res.Epsilon <= 2 && res.Epsilon > 2*(1-1e-4) && q > rdpQ) {
		t.Errorf("q=%v gives %+v (RDP q %v)", q, res, rdpQ)
	}
	if _, _, err := CalibrateNoisePLD(target, []Phase{{SampleRate: 0, Steps: 10}}, PLDOptions{}); err == nil {
		t.Error("calibrating noise for a run that samples nothing should fail")
	}
}

// FuzzPLDTerm: any term either is refused with an error or gives ordered
// bounds; nothing panics or allocates past the grid limit.
func FuzzPLDTerm(f *testing.F) {
	f.Add(uint8(0), 1.0, 0.0, 0.0, 1, 10, 1e-5)
	f.Add(uint8(1), 0.8, 0.0, 0.01, 1, 100, 1e-6)
	f.Add(uint8(2), 0.0, 0.5, 0.0, 1, 3, 1e-5)
	f.Add(uint8(3), 0.0, 2.0, 0.2, 1, 5, 1e-3)
	f.Add(uint8(4), 0.0, 0.0, 0.0, 1, 7, 0.0)
	f.Add(uint8(5), 0.0, 3.0, 0.0, 2, 4, 1e-9)
	f.Add(uint8(6), 0.0, 4.0, 0.0, 3, 2, 1e-9)
	f.Add(uint8(7), 0.0, 0.0, 0.0, 1, 1, 1e-4)
	f.Add(uint8(1), 1e-300, math.Inf(1), math.NaN(), -1, 1<<40, 2.0)
	kinds := []string{PLDGaussian, PLDSubsampledGaussian, PLDLaplace, PLDSubsampledLaplace, PLDRandomizedResponse, PLDDiscreteLaplace, PLDDiscreteGaussian, PLDApprox, PLDSubsampledGaussianReplace}
	f.Fuzz(func(t *testing.T, kind uint8, sigma, scale, q float64, sens, count int, delta float64) {
		term := PLDTerm{Kind: kinds[int(kind)%len(kinds)], NoiseMultiplier: sigma, Scale: scale, SampleRate: q,
			Sensitivity: sens, Epsilon: scale, Count: count}
		if term.Kind == PLDApprox {
			term.Delta = q
		}
		res, err := PLDEpsilon([]PLDTerm{term}, delta, PLDOptions{Step: 1e-2})
		if err != nil {
			return
		}
		if !(res.EpsilonLower >= 0 && res.EpsilonLower <= res.Epsilon) {
			t.Fatalf("%+v at δ=%v: %+v", term, delta, res)
		}
	})
}

// TestPLDMassIsKept: every discretisation keeps the total mass (upper
// grid plus its +∞ atom at least 1), including Laplace with 1/b = 80,
// whose middle losses are far below e^{−37}.
func TestPLDMassIsKept(t *testing.T) {
	for _, term := range []PLDTerm{{Kind: PLDLaplace, Scale: 0.0125, Count: 1}, sgTerm(0.01, 0.5, 1), {Kind: PLDSubsampledLaplace, Scale: 0.05, SampleRate: 0.3, Count: 1},
		{Kind: PLDSubsampledGaussianReplace, SampleRate: 0.01, NoiseMultiplier: 0.5, Count: 1}} {
		for _, add := range []bool{false, true} {
			p, err := discretise(term.dist(add), 1e-3)
			if err != nil {
				t.Fatal(err)
			}
			total := p.upper.inf + sum(p.upper.mass)
			if math.Abs(total-1) > 1e-12 {
				t.Errorf("%s add=%v: upper mass %v", term.Kind, add, total)
			}
		}
	}
}
