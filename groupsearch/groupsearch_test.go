package groupsearch

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/rng"
)

// fixedOracle returns canned responses and records the queries it saw.
type fixedOracle struct {
	size    int
	resp    []Response
	queries [][]int32
	eps     float64
}

func (f *fixedOracle) Len() int           { return f.size }
func (f *fixedOracle) Loss() account.Loss { return account.Pure("fixed", f.eps) }
func (f *fixedOracle) Spent() float64     { return float64(len(f.queries)) * f.eps }
func (f *fixedOracle) Ask(q []int32) (Response, error) {
	f.queries = append(f.queries, append([]int32(nil), q...))
	r := f.resp[0]
	f.resp = f.resp[1:]
	return r, nil
}

func newLedger(t testing.TB, eps float64) *ledger.Ledger {
	t.Helper()
	l, err := ledger.New(account.Budget{Epsilon: eps})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// TestBayesUpdateHandComputed checks eq. 6 and eq. 11–12 on four points in
// index order: the first query is {0} (mass 1/4 < 1/2, adding index 1
// reaches 1/2).
func TestBayesUpdateHandComputed(t *testing.T) {
	e1, e3 := math.Exp(-1), math.Exp(-3)
	cases := []struct {
		name string
		lik  Likelihood
		resp Response
		want []float64
	}{
		{"eq6 rr bit=1 p=0.2", BitLikelihood{P: 0.2}, Response{Bit: true},
			[]float64{0.2 / 0.35, 0.05 / 0.35, 0.05 / 0.35, 0.05 / 0.35}},
		{"eq6 rr bit=0 p=0.2", BitLikelihood{P: 0.2}, Response{Bit: false},
			[]float64{0.05 / 0.65, 0.2 / 0.65, 0.2 / 0.65, 0.2 / 0.65}},
		// eq. 11 with t_ℓ=1, t_h=2, ε=1, Y=2.5, Ȳ=0.5: log φ_in = −(0.5+0.5),
		// log φ_out = −(1.5+1.5).
		{"eq11-12 noisy max", MaxLikelihood{TLow: 1, THigh: 2, Epsilon: 1}, Response{Y: 2.5, YBar: 0.5, HasPair: true},
			[]float64{e1 / (e1 + 3*e3), e3 / (e1 + 3*e3), e3 / (e1 + 3*e3), e3 / (e1 + 3*e3)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := NewSearcher(4, c.lik, rng.Seeded(1), WithoutPermutation(), StrictMedian())
			if err != nil {
				t.Fatal(err)
			}
			o := &fixedOracle{size: 4, resp: []Response{c.resp}, eps: 1}
			if err := s.Step(o); err != nil {
				t.Fatal(err)
			}
			if got := o.queries[0]; len(got) != 1 || got[0] != 0 {
				t.Fatalf("query %v, want [0] (eq. 10 median of the uniform prior)", got)
			}
			for i, f := range s.Posterior() {
				if !near(f, c.want[i], 1e-12) {
					t.Errorf("f(%d) = %v, want %v", i, f, c.want[i])
				}
			}
		})
	}
}

// TestTwoStepsHandComputed follows eq. 6 over two rounds in index order.
func TestTwoStepsHandComputed(t *testing.T) {
	s, _ := NewSearcher(4, BitLikelihood{P: 0.2}, rng.Seeded(1), WithoutPermutation(), StrictMedian())
	o := &fixedOracle{size: 4, resp: []Response{{Bit: false}, {Bit: true}}, eps: 1}
	for range 2 {
		if err := s.Step(o); err != nil {
			t.Fatal(err)
		}
	}
	// After round 1: (1, 4, 4, 4)/13. Round 2 splits at mass < 1/2 in
	// index order: {0, 1} has 5/13 < 1/2, {0,1,2} has 9/13; bit 1 favours Q.
	if got := o.queries[1]; len(got) != 2 || got[0] != 0 || got[1] != 1 {
		t.Fatalf("second query %v, want [0 1]", o.queries[1])
	}
	w := []float64{1 * 0.8, 4 * 0.8, 4 * 0.2, 4 * 0.2}
	z := w[0] + w[1] + w[2] + w[3]
	for i, f := range s.Posterior() {
		if !near(f, w[i]/z, 1e-12) {
			t.Errorf("f(%d) = %v, want %v", i, f, w[i]/z)
		}
	}
}

// TestSplitIsMedianPrefix checks eq. 10 on a random posterior: the query's
// mass is below 1/2 and the uniform prior gives every index the same chance
// of being queried.
func TestSplitIsMedianPrefix(t *testing.T) {
	const size, rounds = 8, 20000
	for _, c := range []struct {
		name string
		opts []SearcherOption
		q    int
	}{{"eq10 strict", []SearcherOption{StrictMedian()}, 3}, {"closest to half", nil, 4}} {
		s, _ := NewSearcher(size, BitLikelihood{P: 0.3}, rng.Seeded(2), c.opts...)
		counts := make([]int, size)
		for range rounds {
			if mass := s.split(); mass > 0.5 {
				t.Fatalf("%s: query mass %v > 1/2", c.name, mass)
			}
			if len(s.q) != c.q { // strict: 3/8 < 1/2 ≤ 4/8
				t.Fatalf("%s: |Q| = %d, want %d", c.name, len(s.q), c.q)
			}
			for _, i := range s.q {
				counts[i]++
			}
		}
		for i, n := range counts {
			if want := rounds * c.q / size; math.Abs(float64(n-want)) > 5*math.Sqrt(float64(want)) {
				t.Errorf("%s: index %d queried %d times, want about %d", c.name, i, n, want)
			}
		}
	}
	// Two points holding half the mass each: eq. 10 never separates them,
	// the default split does.
	for _, strict := range []bool{true, false} {
		var opts []SearcherOption
		if strict {
			opts = append(opts, StrictMedian())
		}
		s, _ := NewSearcher(1000, BitLikelihood{P: 0.3}, rng.Seeded(3), opts...)
		for i := range s.u {
			s.u[i] = -2000
		}
		s.u[10], s.u[20], s.topU, s.topI = 0, 0, 0, 10
		s.renormalise()
		separated := 0
		for range 200 {
			s.split()
			if s.inQ[10] != s.inQ[20] {
				separated++
			}
		}
		if strict != (separated < 5) {
			t.Errorf("strict=%v: separated the two heavy points %d of 200 times", strict, separated)
		}
	}
}

// TestEq24MatchesSimulation compares eq. 24 with the binarised oracle's
// error rate when the data sit exactly on the thresholds (the worst case of
// Lemma 2), and checks that a wider gap errs less.
func TestEq24MatchesSimulation(t *testing.T) {
	const trials = 40000
	r := rng.Seeded(3)
	for _, c := range []struct{ eps, tl, th float64 }{{1, 1, 2}, {0.5, 2, 3}, {2, 1, 1.5}} {
		p := Params{TLow: c.tl, THigh: c.th, Epsilon: c.eps}
		xs := []float64{c.th, c.tl, 0.3 * c.tl, 0}
		o, err := NewOracle(Binarized, xs, p, newLedger(t, 1e9), "g", r)
		if err != nil {
			t.Fatal(err)
		}
		wrong := 0
		for range trials {
			resp, err := o.Ask([]int32{0, 2})
			if err != nil {
				t.Fatal(err)
			}
			if !resp.Bit {
				wrong++
			}
		}
		want := BinarizedErrorProb(p)
		got := float64(wrong) / trials
		if sd := math.Sqrt(want * (1 - want) / trials); math.Abs(got-want) > 4*sd {
			t.Errorf("ε=%v ratio=%v: error rate %v, eq. 24 gives %v (±%v)", c.eps, p.Ratio(), got, want, 4*sd)
		}
	}
}

func TestBadInput(t *testing.T) {
	good := Params{TLow: 1, THigh: 2, Epsilon: 1}
	cases := []struct {
		name   string
		scores []float64
		p      Params
		want   string
	}{
		{"t_low >= t_high", []float64{0, 3}, Params{TLow: 2, THigh: 2, Epsilon: 1}, "t_low < t_high"},
		{"t_low <= 0", []float64{0, 3}, Params{TLow: 0, THigh: 2, Epsilon: 1}, "t_low must be > 0"},
		{"NaN threshold", []float64{0, 3}, Params{TLow: math.NaN(), THigh: 2, Epsilon: 1}, "finite"},
		{"epsilon 0", []float64{0, 3}, Params{TLow: 1, THigh: 2}, "epsilon"},
		{"epsilon negative", []float64{0, 3}, Params{TLow: 1, THigh: 2, Epsilon: -1}, "epsilon"},
		{"negative score", []float64{0, -0.5, 3}, good, "score 1 (-0.5): negative"},
		{"NaN score", []float64{math.NaN(), 3}, good, "score 0 (NaN)"},
		{"Inf score", []float64{0, math.Inf(1)}, good, "score 1 (+Inf)"},
		{"gap score", []float64{0, 1.5, 3}, good, "score 1 (1.5): between"},
		{"too few", []float64{3}, good, "at least 2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewOracle(NoisyMax, c.scores, c.p, newLedger(t, 1), "g", rng.Seeded(1))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want it to mention %q", err, c.want)
			}
		})
	}
	clipped, _, err := CheckScores([]float64{0, 1.5, 3}, Params{TLow: 1, THigh: 2, Epsilon: 1, Clip: true})
	if err != nil || clipped[1] != 1 {
		t.Fatalf("clip: %v %v", clipped, err)
	}
	if _, err := NewOracle(RR, []float64{0, 1}, good, newLedger(t, 1), "g", rng.Seeded(1)); !errors.Is(err, ErrNoAnomaly) {
		t.Fatalf("rr without anomaly: %v", err)
	}
	if _, err := ParseKind("exp"); err == nil {
		t.Fatal("ParseKind accepted an unknown oracle")
	}
	if err := (Halting{Posterior: 1}).Validate(); err == nil {
		t.Fatal("α = 1 accepted")
	}
}

// runSearch searches xs with a fresh ledger of the given budget.
func runSearch(t *testing.T, kind Kind, xs []float64, p Params, ledgerBudget float64, h Halting, seed uint64) (Result, *ledger.Ledger, error) {
	t.Helper()
	r := rng.Seeded(seed)
	l := newLedger(t, ledgerBudget)
	o, err := NewOracle(kind, xs, p, l, "search", r)
	if err != nil {
		t.Fatal(err)
	}
	lik, err := p.Likelihood(kind)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSearcher(len(xs), lik, r)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(o, h, 4)
	return res, l, err
}

func TestHaltingRules(t *testing.T) {
	r := rng.Seeded(4)
	xs, star := benchScores(1000, 1, 2, r)
	p := Params{TLow: 1, THigh: 2, Epsilon: 0.3}

	res, l, err := runSearch(t, NoisyMax, xs, p, 10, Halting{Budget: 1}, 1)
	if err != nil || res.HaltedBy != HaltBudget || res.Queries != 3 {
		t.Fatalf("budget rule: %+v %v (want 3 queries: 4·0.3 > 1)", res, err)
	}
	if spent, _ := l.Spent("search"); !near(spent, 0.9, 1e-12) || !near(res.EpsilonSpent, spent, 1e-12) {
		t.Fatalf("ledger %v, result %v, want 0.9", spent, res.EpsilonSpent)
	}

	// The ledger refuses the third answer: the search stops with the error.
	res, _, err = runSearch(t, NoisyMax, xs, p, 0.7, Halting{Posterior: 0.99}, 1)
	if !errors.Is(err, account.ErrBudgetExceeded) || res.HaltedBy != HaltBudget || res.Queries != 2 {
		t.Fatalf("ledger exhaustion: %+v %v", res, err)
	}

	p.Epsilon = 2
	res, _, err = runSearch(t, NoisyMax, xs, p, 1e6, Halting{Posterior: 0.9}, 2)
	if err != nil || res.HaltedBy != HaltPosterior || !(res.MaxPosterior > 0.9) || res.Top[0] != star {
		t.Fatalf("posterior rule: %+v %v (anomaly %d)", res, err, star)
	}
	res, _, err = runSearch(t, Binarized, xs, p, 1e6, Halting{Delta: 0.01}, 3)
	if lo := math.Log(res.MaxPosterior / (1 - res.MaxPosterior)); err != nil || res.HaltedBy != HaltDelta || !(lo > math.Log(100)) {
		t.Fatalf("eq. 25 rule: %+v %v", res, err)
	}
	res, _, err = runSearch(t, RR, xs, p, 1e6, Halting{BenOrHassidim: true}, 4)
	if err != nil || res.HaltedBy != HaltBenOrHassidim || !(res.MaxPosterior > EpsPar(1000)) {
		t.Fatalf("ε_par rule: %+v %v", res, err)
	}
	if got, want := EpsPar(1_000_001), 1/math.Sqrt(24*math.Log(1e6)); !near(got, want, 1e-15) {
		t.Fatalf("ε_par = %v, want %v", got, want)
	}
	res, _, err = runSearch(t, NoisyMax, xs, p, 1e6, Halting{Posterior: 0.999999, MaxQueries: 5}, 5)
	if err != nil || res.HaltedBy != HaltMaxQueries || res.Queries != 5 {
		t.Fatalf("max queries: %+v %v", res, err)
	}
}

// TestLogSpaceStableAtMillion runs a strong oracle on 10^6 points long
// enough that a linear-domain posterior would underflow (log weights far
// below −745) and checks the posterior stays a finite distribution.
func TestLogSpaceStableAtMillion(t *testing.T) {
	const size = 1_000_000
	r := rng.Seeded(5)
	xs, star := benchScores(size, 1, 2, r)
	p := Params{TLow: 1, THigh: 2, Epsilon: 15}
	o, err := NewOracle(NoisyMax, xs, p, newLedger(t, 1e9), "g", r)
	if err != nil {
		t.Fatal(err)
	}
	lik, _ := p.Likelihood(NoisyMax)
	s, _ := NewSearcher(size, lik, r)
	res, err := s.Run(o, Halting{MaxQueries: 30}, 4)
	if err != nil {
		t.Fatal(err)
	}
	lowest := math.Inf(1)
	for _, u := range s.u {
		if math.IsNaN(u) || math.IsInf(u, 0) {
			t.Fatalf("log weight %v", u)
		}
		lowest = min(lowest, u-s.topU)
	}
	if lowest > -745 {
		t.Fatalf("lowest log weight %v: the test no longer exercises underflow", lowest)
	}
	sum := 0.0
	for _, f := range s.Posterior() {
		sum += f
	}
	if !near(sum, 1, 1e-9) || res.Top[0] != star || !(res.PosteriorTop[0] > 0.99) {
		t.Fatalf("sum %v, result %+v, anomaly %d", sum, res, star)
	}
}

func TestProp3Bound(t *testing.T) {
	bits, nats := Prop3Bound(1024, 1.0/1024, 1, 0.11)
	// h_b(0.11) ≈ 0.4999 bits, so the bound is about (10+10+1)/0.5 = 42.
	if !near(bits, 42, 0.1) || !(nats < bits) {
		t.Fatalf("Prop3Bound = %v bits, %v nats", bits, nats)
	}
	if b, _ := Prop3Bound(10, 0.1, 1, 0.5); !math.IsInf(b, 1) {
		t.Fatalf("p = 1/2 gives %v, want +Inf", b)
	}
}

func TestSearchSplit(t *testing.T) {
	r := rng.Seeded(6)
	xs, _ := benchScores(4000, 1, 2, r)
	anomalies := map[int]bool{}
	for _, i := range []int{10, 2000, 3999} {
		xs[i], anomalies[i] = 2.5, true
	}
	m, err := SubsetsFor(3, 0.05)
	if err != nil || m != 60 {
		t.Fatalf("SubsetsFor = %d, %v", m, err)
	}
	l := newLedger(t, 20)
	p := Params{TLow: 1, THigh: 2, Epsilon: 1}
	out, err := SearchSplit(xs, NoisyMax, p, m, Halting{Posterior: 0.9, Budget: 20}, 1, l, "split", r)
	if err != nil {
		t.Fatal(err)
	}
	found, seen := 0, map[int]bool{}
	for _, s := range out.Subsets {
		if anomalies[s.Top[0]] {
			found++
		}
		for _, i := range s.Top {
			if seen[i] {
				t.Fatalf("index %d in two subsets", i)
			}
			seen[i] = true
		}
	}
	if _, worst := l.MaxEpsilon(); found < 2 || !near(out.Epsilon, worst, 1e-12) || out.Epsilon > 20 {
		t.Fatalf("found %d of 3, ε %v vs ledger %v", found, out.Epsilon, worst)
	}
}

// TestBudgetBelowOneAnswer: a budget that buys no answer is an error, not
// a "top set" drawn from the prior.
func TestBudgetBelowOneAnswer(t *testing.T) {
	xs, _ := benchScores(100, 1, 2, rng.Seeded(7))
	p := Params{TLow: 1, THigh: 2, Epsilon: 1}
	res, l, err := runSearch(t, NoisyMax, xs, p, 10, Halting{Budget: 0.5}, 1)
	if !errors.Is(err, account.ErrBudgetExceeded) || res.Queries != 0 || res.HaltedBy != HaltBudget {
		t.Errorf("Run: %+v, %v; want ErrBudgetExceeded", res, err)
	}
	if spent, _ := l.Spent("search"); spent != 0 {
		t.Errorf("spent %v, want 0", spent)
	}
	if _, err := SearchSplit(xs, NoisyMax, p, 2, Halting{Budget: 0.5}, 1, newLedger(t, 10), "split", rng.Seeded(1)); !errors.Is(err, account.ErrBudgetExceeded) {
		t.Errorf("SearchSplit: %v; want ErrBudgetExceeded", err)
	}
}

// TestHugeAnomalyScore: an anomaly's score far beyond the Laplace range
// (1e300 at t_ℓ = 1) is capped, so no charged answer fails; thresholds
// whose cap is itself out of range are refused before any charge.
func TestHugeAnomalyScore(t *testing.T) {
	xs, star := benchScores(100, 1, 2, rng.Seeded(8))
	xs[star] = 1e300
	p := Params{TLow: 1, THigh: 2, Epsilon: 0.5}
	for _, kind := range []Kind{NoisyMax, Binarized, Mean} {
		t.Run(string(kind), func(t *testing.T) {
			res, l, err := runSearch(t, kind, xs, p, 100, Halting{Posterior: 0.9, Budget: 100}, 2)
			spent, _ := l.Spent("search")
			if err != nil || res.Queries == 0 || res.EpsilonSpent != spent || res.Top[0] != star {
				t.Errorf("%+v, %v (ledger %v, anomaly %d)", res, err, spent, star)
			}
			if _, err := NewOracle(kind, []float64{0.5, 1e300}, Params{TLow: 1, THigh: 1e300, Epsilon: 0.5}, l, "g", rng.Seeded(1)); err == nil {
				t.Error("t_high = 1e300 at t_low = 1 accepted")
			}
		})
	}
}

// failingOracle charges its ledger, then fails to release.
type failingOracle struct {
	fixedOracle
	led *ledger.Ledger
}

func (f *failingOracle) Spent() float64 { s, _ := f.led.Spent("g"); return s }
func (f *failingOracle) Ask([]int32) (Response, error) {
	return ledger.Release(f.led, f, []string{"g"}, func() (Response, error) {
		return Response{}, errors.New("release failed")
	})
}

// TestSpentCountsFailedAnswer: an answer charged whose release then
// failed counts in the result's spend, as it does in the ledger.
func TestSpentCountsFailedAnswer(t *testing.T) {
	o := &failingOracle{fixedOracle{size: 4, eps: 0.5}, newLedger(t, 10)}
	lik, err := Params{TLow: 1, THigh: 2, Epsilon: 0.5}.Likelihood(NoisyMax)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSearcher(4, lik, rng.Seeded(1))
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(o, Halting{Budget: 10}, 1)
	if err == nil || res.HaltedBy != HaltError || res.EpsilonSpent != 0.5 || res.Queries != 0 {
		t.Errorf("%+v, %v; want the failed answer's 0.5 counted", res, err)
	}
}

// TestFieldError: Params and Halting name a bad setting by its JSON name
// (what the service answers as params.<name> or halting.<name>).
func TestFieldError(t *testing.T) {
	good := Params{TLow: 1, THigh: 2, Epsilon: 1}
	for _, tc := range []struct {
		name, field string
		err         error
	}{
		{"t_low NaN", "t_low", Params{TLow: math.NaN(), THigh: 2, Epsilon: 1}.Validate()},
		{"t_high Inf", "t_high", Params{TLow: 1, THigh: math.Inf(1), Epsilon: 1}.Validate()},
		{"t_low", "t_low", Params{TLow: -1, THigh: 2, Epsilon: 1}.Validate()},
		{"t_high", "t_high", Params{TLow: 2, THigh: 1, Epsilon: 1}.Validate()},
		{"epsilon", "epsilon", Params{TLow: 1, THigh: 2}.Validate()},
		{"mean level", "mean_level", Params{TLow: 1, THigh: 2, Epsilon: 1, MeanLevel: 3}.Validate()},
		{"budget", "budget", Halting{Budget: -1}.Validate()},
		{"posterior", "posterior", Halting{Posterior: 1}.Validate()},
		{"delta", "delta", Halting{Delta: -1}.Validate()},
		{"max queries", "max_queries", Halting{MaxQueries: -1}.Validate()},
	} {
		var fe *FieldError
		if !errors.As(tc.err, &fe) || fe.Field != tc.field || fe.Error() != tc.err.Error() {
			t.Errorf("%s: %v, want a FieldError for %q", tc.name, tc.err, tc.field)
		}
	}
	if err := good.Validate(); err != nil {
		t.Errorf("good params: %v", err)
	}
}
