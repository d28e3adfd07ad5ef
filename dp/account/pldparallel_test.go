package account

import (
	"encoding/json"
	"slices"
	"testing"
)

func mustPLDLoss(t *testing.T, terms ...PLDTerm) Loss {
	t.Helper()
	l, err := PLDLoss("test", terms...)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func mustEps(t *testing.T, l Loss) float64 {
	t.Helper()
	eps, err := l.EpsilonAt(1e-6, Balle2020)
	if err != nil {
		t.Fatal(err)
	}
	return eps
}

// TestParallelPLD: parallel composition of different PLD parts is the
// worst part, composes on as the worst of each part followed by what
// comes next, and lies between the worst part alone and charging every
// part sequentially.
func TestParallelPLD(t *testing.T) {
	gauss := PLDTerm{Kind: PLDGaussian, NoiseMultiplier: 4, Count: 10}
	lap := PLDTerm{Kind: PLDLaplace, Scale: 5, Count: 10}
	rr := PLDTerm{Kind: PLDRandomizedResponse, Epsilon: 0.2, Count: 3}
	a, b, c := mustPLDLoss(t, gauss), mustPLDLoss(t, lap), mustPLDLoss(t, rr)
	ea, eb := mustEps(t, a), mustEps(t, b)
	par, err := Parallel(a, b)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("worst part", func(t *testing.T) {
		if got := mustEps(t, par); got != max(ea, eb) {
			t.Errorf("Parallel ε %v, parts %v and %v", got, ea, eb)
		}
	})
	t.Run("then sequential", func(t *testing.T) {
		then, err := Compose(par, c)
		if err != nil {
			t.Fatal(err)
		}
		ac, _ := Compose(a, c)
		bc, _ := Compose(b, c)
		all, _ := Compose(a, b, c)
		got := mustEps(t, then)
		if want := max(mustEps(t, ac), mustEps(t, bc)); relErr(got, want) > 1e-9 { // terms in another order
			t.Errorf("Parallel then RR: ε %v, want %v", got, want)
		}
		if seq := mustEps(t, all); !(got < seq) {
			t.Errorf("Parallel then RR: ε %v not below sequential %v", got, seq)
		}
	})
	t.Run("dominated part dropped", func(t *testing.T) {
		more := mustPLDLoss(t, gauss, lap)
		p, err := Parallel(a, more)
		if err != nil || hasParts(p.PLD) || len(p.PLD) != 2 {
			t.Errorf("Parallel(A, A∘B) = %+v, %v; want A∘B", p.PLD, err)
		}
	})
	t.Run("cross product and join", func(t *testing.T) {
		twice, err := Compose(par, par)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(alternatives(twice.PLD)); n != 3 {
			t.Errorf("Parallel∘Parallel has %d alternatives, want 3 (AA, AB, BB)", n)
		}
		many, err := par.Times(100)
		if err != nil {
			t.Fatal(err)
		}
		if hasParts(many.PLD) || countOf(many.PLD, gauss) != 1000 || countOf(many.PLD, lap) != 1000 {
			t.Errorf("100 × Parallel: %+v, want the join (every part) 100 times", many.PLD)
		}
	})
	t.Run("json round trip", func(t *testing.T) {
		raw, err := json.Marshal(par)
		if err != nil {
			t.Fatal(err)
		}
		var back Loss
		if err := json.Unmarshal(raw, &back); err != nil || back.Validate() != nil || mustEps(t, back) != max(ea, eb) {
			t.Errorf("round trip %s: %+v, %v", raw, back, err)
		}
	})
	t.Run("ComposePLD refuses parts", func(t *testing.T) {
		if _, err := ComposePLD(par.PLD, PLDOptions{}); err == nil {
			t.Error("ComposePLD accepted parallel parts")
		}
	})
}

// termsFrom decodes fuzz bytes into a term list: three bytes a term
// (mechanism, count, part), mechanisms from a fixed few.
func termsFrom(b []byte) []PLDTerm {
	mechs := []PLDTerm{
		{Kind: PLDRandomizedResponse, Epsilon: 0.1},
		{Kind: PLDRandomizedResponse, Epsilon: 0.2},
		{Kind: PLDLaplace, Scale: 3},
		{Kind: PLDGaussian, NoiseMultiplier: 2},
	}
	var out []PLDTerm
	for i := 0; i+2 < len(b) && len(out) < 12; i += 3 {
		t := mechs[int(b[i])%len(mechs)]
		t.Count = 1 + int(b[i+1])%5
		t.Part = int(b[i+2]) % 4
		out = append(out, t)
	}
	return mergeTerms(out)
}

// coveredBy reports whether every alternative of want is contained in
// some alternative of got: got bounds want (soundness).
func coveredBy(want, got [][]PLDTerm) bool {
	for _, w := range want {
		if !slices.ContainsFunc(got, func(g []PLDTerm) bool { return contains(g, w) }) {
			return false
		}
	}
	return true
}

// FuzzPLDParallelAlgebra: Compose, Parallel and Times on terms with parts
// give valid terms whose alternatives cover every alternative the exact
// operation has (cross products, unions, n-fold products), so the ε read
// from them is never below the true one.
func FuzzPLDParallelAlgebra(f *testing.F) {
	f.Add([]byte{0, 1, 1, 2, 2, 2}, []byte{1, 0, 0, 3, 4, 1}, uint8(3))
	f.Add([]byte{0, 1, 1, 1, 1, 2, 2, 1, 3, 3, 1, 0}, []byte{}, uint8(20))
	f.Fuzz(func(t *testing.T, ab, bb []byte, n uint8) {
		a, b := termsFrom(ab), termsFrom(bb)
		altsA, altsB := alternatives(a), alternatives(b)
		check := func(name string, got []PLDTerm, want [][]PLDTerm) {
			for _, term := range got {
				if err := term.Validate(); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
			}
			if alts := alternatives(got); len(alts) > pldMaxParts || !coveredBy(want, alts) {
				t.Fatalf("%s of %+v and %+v: %+v does not cover %+v", name, a, b, alts, want)
			}
		}
		var cross [][]PLDTerm
		for _, x := range altsA {
			for _, y := range altsB {
				cross = append(cross, mergeTerms(append(slices.Clone(x), y...)))
			}
		}
		got, _ := composeTerms(a, b)
		check("compose", got, cross)
		got, _ = parallelTerms(a, b)
		check("parallel", got, append(slices.Clone(altsA), altsB...))
		k := 1 + int(n)%20
		want := altsA
		for range k - 1 {
			var next [][]PLDTerm
			for _, x := range want {
				for _, y := range altsA {
					next = append(next, mergeTerms(append(slices.Clone(x), y...)))
				}
			}
			if len(next) > 256 { // enough for the check: keep the first
				next = next[:256]
			}
			want = next
		}
		check("times", timesTerms(a, k), want)
	})
}
