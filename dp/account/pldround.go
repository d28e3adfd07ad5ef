package account

import (
	"math"
	"math/cmplx"
)

// Certified bounds on the floating-point error of the FFT convolutions
// (see docs/accounting-pld.md, "Floating point", for the proof sketch).
//
// gonum's dsp/fourier is FFTPACK's mixed-radix real FFT: L passes (one per
// factor of the length, radix 4, 2, 3 or 5), each a set of butterflies
// that multiply their inputs by twiddle factors and add them with
// coefficients of modulus ≤ 1. Every Cooley–Tukey factorisation has one
// path from each input to each output, with unit-modulus weights, so a
// pass whose computed outputs are within η·Σ|inputs of the butterfly| of
// the exact ones leaves each computed coefficient within
// ((1+η)^L − 1)·‖x‖₁ of the exact DFT (the componentwise form of Higham,
// Accuracy and Stability of Numerical Algorithms, 2nd ed., §24.1, Thm 24.2).
const (
	// unitRoundoff is u = 2⁻⁵³ of float64.
	unitRoundoff = 0x1p-53
	// fftTwiddleErr bounds |ŵ − w| for gonum's twiddles, computed as
	// cos/sin(fi·(ld·(2π/n))): the argument θ ∈ [0, 2π) carries four
	// roundings (π, /n, ·ld, ·fi), |Δθ| ≤ 2π·γ₄, and math.Cos/Sin add at
	// most 4u absolutely (Cephes' polynomials after Cody–Waite reduction;
	// an assumption, checked in the tests against math/big), so
	// |ŵ − w| ≤ √2·(2πγ₄ + 4u) < 42u.
	fftTwiddleErr = 42 * unitRoundoff
	// fftConstErr bounds the error of the butterfly constants FFTPACK
	// writes as 15-digit literals (√3/2, cos and sin of 2π/5 and 4π/5):
	// at most 4.5e-16 each.
	fftConstErr = 5e-16
	// fftMulErr bounds the relative error of a complex product in Go
	// (with or without fused multiply-add, ≤ √5·u; Brent, Percival &
	// Zimmermann 2007).
	fftMulErr = 3 * unitRoundoff
)

// gamma is γ_n = nu/(1 − nu) (Higham §3.1).
func gamma(n int) float64 {
	nu := float64(n) * unitRoundoff
	return nu / (1 - nu)
}

// fftPasses returns the number of passes gonum's FFTPACK makes for length
// n: its factorisation into 4s, then 2, 3, 5 and larger factors.
func fftPasses(n int) int {
	passes := 0
	for _, f := range []int{4, 2, 3, 5} {
		for n%f == 0 && n > 1 {
			n /= f
			passes++
		}
	}
	for f := 7; n > 1; f += 2 {
		for n%f == 0 {
			n /= f
			passes++
		}
	}
	return passes
}

// fftCoeffErr returns ρ: each Fourier coefficient (unnormalised, forward
// or inverse) that gonum computes for a sequence x of length n is within
// ρ·‖x‖₁ of the exact one. A pass's error is η = μ + μ_c + γ₁₂·(1 + μ +
// μ_c) per unit of input: a twiddle product (rounded twiddle μ, complex
// product ≤ 2γ₂) then a radix-≤5 butterfly (at most seven roundings in
// sequence, constants off by μ_c); γ₁₂ covers both with room.
func fftCoeffErr(n int) float64 {
	mu := fftTwiddleErr + fftConstErr
	eta := mu + gamma(12)*(1+mu)
	return math.Expm1(float64(fftPasses(n)) * math.Log1p(eta))
}

// fftSafety absorbs the rounding of the bounds' own sums (relative error
// at most γ_n ≈ 5e-10 for the longest grid).
const fftSafety = 1 + 1e-6

// underflowErr bounds, per Fourier coefficient, the absolute error that
// underflow adds to products of numbers of modulus ≤ 1 (at most 2⁻¹⁰⁷⁴
// per operation, amplified at most by the count of operations).
const underflowErr = 1e-290

// convolveErr bounds the error of each entry of the FFT convolution of a
// and b (non-negative, total masses sa and sb) of length n, whose computed
// coefficients are ca and cb (half spectra), but for the division's
// rounding (divisionErr):
//
//	|ΔA_i| ≤ ρ·sa, |ΔB_i| ≤ ρ·sb, so the product is off by at most
//	ρ·sa·|B_i| + (|A_i| + ρ·sa)·ρ·sb + τ·|A_i B_i|;
//	the inverse adds ρ·Σ|Ĉ_i| and passes on Σ|ΔC_i|, both over n.
func convolveErr(ca, cb []complex128, n int, sa, sb float64) float64 {
	rho := fftCoeffErr(n)
	ra, rb := rho*sa, rho*sb
	var dc, cs float64
	for i := range ca {
		w := weight(i, len(ca), n)
		a, b := cmplx.Abs(ca[i]), cmplx.Abs(cb[i])
		dc += w * (ra*b + (a+ra)*rb + fftMulErr*a*b + underflowErr)
		cs += w * a * b * (1 + fftMulErr)
	}
	return fftSafety * (dc + rho*cs) / float64(n)
}

// divisionErr bounds the rounding of dividing entries of magnitude at most
// top by the FFT length.
func divisionErr(top float64) float64 {
	return fftSafety * unitRoundoff * top
}

// weight is the multiplicity of half-spectrum entry i in the full
// spectrum of a real sequence of length n: the conjugate-mirrored entries
// count twice.
func weight(i, half, n int) float64 {
	if i == 0 || (n%2 == 0 && i == half-1) {
		return 1
	}
	return 2
}

// powerErr bounds the error of each entry of the k-th convolution power of
// a non-negative sequence of total mass s and length n computed as the
// inverse FFT of the coefficients c (half spectrum, before the power)
// raised to the k-th power by repeated squaring, but for the division's
// rounding (divisionErr):
//
//	|A_i^k − (Fa)_i^k| ≤ k·ρs·(|A_i| + ρs)^{k−1} (the coefficient's error
//	carried through the power);
//	repeated squaring multiplies z^k by rounding factors whose exponents
//	sum to at most k: ((1+τ)^k − 1)·|A_i|^k;
//	then the inverse FFT as in convolveErr.
func powerErr(c []complex128, n, k int, s float64) float64 {
	rho := fftCoeffErr(n)
	rs := rho * s
	fk := float64(k)
	growth := math.Expm1(fk * math.Log1p(fftMulErr))
	var dc, cs float64
	for i, z := range c {
		w := weight(i, len(c), n)
		a := cmplx.Abs(z)
		dc += w * underflowErr
		la := math.Log(a + rs)
		if (fk-1)*la < -800 { // both terms below 1e-347: nothing
			continue
		}
		ak := math.Exp(fk * math.Log(a)) // |A_i|^k; 0 when a is 0
		dc += w * (fk*rs*math.Exp((fk-1)*la) + growth*ak)
		cs += w * ak * (1 + growth)
	}
	return fftSafety * (dc + rho*cs) / float64(n)
}

// directErr bounds the error of each entry of a direct convolution that
// sums at most terms products (γ_terms of the exact entry, itself at most
// top/(1 − γ_terms) for the computed largest entry top).
func directErr(terms int, top float64) float64 {
	g := gamma(terms + 1)
	return fftSafety * g * top / (1 - g)
}

// clipNegative sets the negative entries of m to 0: true masses are ≥ 0,
// so this only moves them closer.
func clipNegative(m []float64) {
	for i, x := range m {
		if x < 0 {
			m[i] = 0
		}
	}
}

func maxAbs(m []float64) float64 {
	var top float64
	for _, x := range m {
		top = math.Max(top, math.Abs(x))
	}
	return top
}
