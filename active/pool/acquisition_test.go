package pool

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/dpal-dev/dpal/dp/audit"
	"github.com/dpal-dev/dpal/dp/audit/audittest"
	"github.com/dpal-dev/dpal/dp/mech"
	"github.com/dpal-dev/dpal/dp/rng"
)

func onePass(p ...float64) [][]float64 { return [][]float64{p} }

func TestAcquisitionScores(t *testing.T) {
	third := 1.0 / 3
	for _, c := range []struct {
		name   string
		kind   Acquisition
		passes [][]float64
		want   float64
	}{
		{"lc one-hot", LeastConfidence, onePass(1, 0, 0), 0},
		{"lc uniform", LeastConfidence, onePass(third, third, third), 2.0 / 3},
		{"lc", LeastConfidence, onePass(0.7, 0.2, 0.1), 0.3},
		{"margin one-hot", MinimumMargin, onePass(0, 1, 0), 0},
		{"margin tie", MinimumMargin, onePass(0.45, 0.45, 0.1), 1},
		{"margin", MinimumMargin, onePass(0.6, 0.3, 0.1), 0.7},
		{"entropy one-hot", Entropy, onePass(1, 0), 0},
		{"entropy uniform", Entropy, onePass(0.25, 0.25, 0.25, 0.25), 1},
		{"entropy", Entropy, onePass(0.5, 0.25, 0.25), 1.5 * math.Ln2 / math.Log(3)},
		{"bald agreement", BALD, [][]float64{{0.5, 0.5}, {0.5, 0.5}}, 0},
		{"bald disagreement", BALD, [][]float64{{1, 0}, {0, 1}}, 1},
		{"mean of passes", LeastConfidence, [][]float64{{1, 0}, {0, 1}}, 0.5},
		{"random", Random, onePass(1, 0), 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.kind.Score(c.passes)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(got-c.want) > 1e-12 {
				t.Errorf("score %v, want %v", got, c.want)
			}
			if got < 0 || got > c.kind.Range(len(c.passes[0])) {
				t.Errorf("score %v outside [0, %v]", got, c.kind.Range(len(c.passes[0])))
			}
		})
	}
}

func TestAcquisitionInputErrors(t *testing.T) {
	for _, c := range []struct {
		name   string
		kind   Acquisition
		passes [][]float64
		want   string
	}{
		{"no passes", Entropy, nil, "no forward passes"},
		{"one class", Entropy, onePass(1), "2 classes"},
		{"NaN", Entropy, onePass(math.NaN(), 1), "class 0"},
		{"negative", MinimumMargin, onePass(-0.1, 1.1), "class 0"},
		{"sum", LeastConfidence, onePass(0.5, 0.4), "sum"},
		{"ragged passes", BALD, [][]float64{{0.5, 0.5}, {1, 0, 0}}, "pass 2"},
		{"bald one pass", BALD, onePass(0.5, 0.5), "at least 2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := c.kind.Score(c.passes); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
	a, _ := NewAcquire(Entropy, 1, 1, 2, EntropyClip)
	if _, err := a.Scores([][][]float64{onePass(0.5, 0.5), onePass(2, -1)}); err == nil || !strings.Contains(err.Error(), "record 1") {
		t.Errorf("error %v does not name record 1", err)
	}
}

func TestNewAcquire(t *testing.T) {
	for _, c := range []struct {
		name     string
		kind     Acquisition
		classes  int
		clip     float64
		wantSens float64
	}{
		{"lc", LeastConfidence, 10, 0, 0.9},
		{"margin", MinimumMargin, 10, 0, 1},
		{"entropy clipped", Entropy, 10, EntropyClip, 0.8},
		{"bald clipped", BALD, 10, BALDClip, 0.5},
		{"random", Random, 10, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, err := NewAcquire(c.kind, 0.5, 3, c.classes, c.clip)
			if err != nil {
				t.Fatal(err)
			}
			if a.Sensitivity() != c.wantSens {
				t.Errorf("Δ = %v, want %v", a.Sensitivity(), c.wantSens)
			}
			wantEps := 0.5
			if c.kind == Random {
				wantEps = 0
			}
			if a.Loss().Epsilon != wantEps || a.Loss().Validate() != nil {
				t.Errorf("loss %+v", a.Loss())
			}
		})
	}
	for _, bad := range []func() (*Acquire, error){
		func() (*Acquire, error) { return NewAcquire(Entropy, 0, 1, 2, 0) },
		func() (*Acquire, error) { return NewAcquire(Entropy, 1, 0, 2, 0) },
		func() (*Acquire, error) { return NewAcquire(Entropy, 1, 1, 1, 0) },
		func() (*Acquire, error) { return NewAcquire(Entropy, 1, 1, 2, 1.5) },
		func() (*Acquire, error) { return NewAcquire(Acquisition(9), 1, 1, 2, 0) },
	} {
		if _, err := bad(); err == nil {
			t.Error("bad acquisition accepted")
		}
	}
}

// TestAcquireSelects checks that selection favours uncertain records when
// the noise is small, and that random selection draws distinct records.
func TestAcquireSelects(t *testing.T) {
	r := rng.Seeded(3)
	a, _ := NewAcquire(MinimumMargin, 1000, 2, 2, 0)
	scores := []float64{0.1, 0.9, 0.2, 0.95, 0.3}
	got, err := a.Select(r, scores)
	if err != nil || !slices.Equal(got, []int{3, 1}) {
		t.Errorf("selected %v (%v), want [3 1]", got, err)
	}
	if exact, _ := TopKNotDP(scores, 2); !slices.Equal(exact, []int{3, 1}) {
		t.Errorf("not-DP top-k %v", exact)
	}
	rnd, _ := NewAcquire(Random, 0, 3, 2, 0)
	seen := map[int]int{}
	for range 2000 {
		idx, err := rnd.Select(r, scores)
		if err != nil {
			t.Fatal(err)
		}
		if s := slices.Clone(idx); len(slices.Compact(slices.Sorted(slices.Values(s)))) != 3 {
			t.Fatalf("repeated record in %v", idx)
		}
		for _, i := range idx {
			seen[i]++
		}
	}
	for i := range scores {
		if seen[i] < 1000 || seen[i] > 1400 { // expected 1200
			t.Errorf("record %d selected %d times of 2000, want ≈ 1200", i, seen[i])
		}
	}
	if _, err := a.Select(r, scores[:1]); err == nil {
		t.Error("k above the pool accepted")
	}
}

// TestAuditAcquisitions audits every private acquisition on a pool of two
// records: the audited record's probabilities move its score from 0 to Δ
// (the extremes of its range after clipping) while the other record sits at
// Δ, and the event is "the audited record is selected". The mutant halves
// the Laplace scale.
func TestAuditAcquisitions(t *testing.T) {
	const eps = 1
	third := 1.0 / 3
	cases := []struct {
		kind     Acquisition
		clip     float64
		low, top [][]float64
	}{
		{LeastConfidence, 0, onePass(1, 0, 0), onePass(third, third, third)},
		{MinimumMargin, 0, onePass(1, 0, 0), onePass(0.5, 0.5, 0)},
		{Entropy, EntropyClip, onePass(1, 0, 0), onePass(third, third, third)},
		{BALD, BALDClip, [][]float64{{1, 0, 0}, {1, 0, 0}}, [][]float64{{1, 0, 0}, {0, 1, 0}}},
	}
	var audits []audittest.Case
	for i, c := range cases {
		a, err := NewAcquire(c.kind, eps, 1, 3, c.clip)
		if err != nil {
			t.Fatal(err)
		}
		mut := *a
		mut.top, _ = mech.NewNoisyTopK(2*eps, a.sens, 1) // half the noise scale
		run := func(seed uint64, m *Acquire) func() (audit.Result, error) {
			sel := func(rec [][]float64) func(*rng.Rand) bool {
				scores, err := m.Scores([][][]float64{rec, c.top})
				if err != nil {
					t.Fatal(err)
				}
				return func(r *rng.Rand) bool { idx, _ := m.Select(r, scores); return idx[0] == 0 }
			}
			return func() (audit.Result, error) {
				return audit.Bool(rng.Seeded(seed), sel(c.top), sel(c.low), audittest.Config(0))
			}
		}
		audits = append(audits, audittest.Case{Name: "acquisition " + c.kind.String(), Epsilon: eps,
			Genuine: run(uint64(100+2*i), a), Mutant: run(uint64(101+2*i), &mut), Mechanism: a})
	}
	audittest.Run(t, audits)
}
