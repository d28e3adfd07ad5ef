package kanon

import (
	"math"
	"slices"
	"testing"

	"github.com/dpal-dev/dpal/dp/rng"
)

// trainedMLP fits an MLP with passes MC-dropout passes to synthLog.
func trainedMLP(t *testing.T, passes int) (*MLP, []Features) {
	t.Helper()
	log := synthLog()
	labels := Labels(log)
	class := map[string]int{}
	for i, l := range labels {
		class[l] = i
	}
	var xs []Features
	var ys []int
	seen := map[string]bool{}
	for _, q := range log {
		if !seen[q.Text] {
			seen[q.Text] = true
			xs, ys = append(xs, Featurize(q.Text)), append(ys, class[q.Label])
		}
	}
	m, err := NewMLP(len(labels), 16, 0.5, passes, rng.Seeded(1))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Train(xs[:20], ys[:20], 5, rng.Seeded(2)); err != nil {
		t.Fatal(err)
	}
	return m, xs
}

func TestMCDropoutRanking(t *testing.T) {
	const passes = 8
	m, xs := trainedMLP(t, passes)
	t.Run("probs-are-the-mean-of-T-passes", func(t *testing.T) {
		got, err := m.Probs(xs, rng.Seeded(3))
		if err != nil {
			t.Fatal(err)
		}
		one := &MLP{net: m.net, classes: m.classes, passes: 1}
		r := rng.Seeded(3)
		want := make([][]float64, len(xs))
		for range passes {
			p, _ := one.Probs(xs, r)
			for i := range p {
				if want[i] == nil {
					want[i] = make([]float64, len(p[i]))
				}
				for c, v := range p[i] {
					want[i][c] += v / passes
				}
			}
		}
		differs := false
		for i := range want {
			for c := range want[i] {
				if math.Abs(got[i][c]-want[i][c]) > 1e-12 {
					t.Fatalf("query %d class %d: %v, want the %d-pass mean %v", i, c, got[i][c], passes, want[i][c])
				}
			}
			p1, _ := one.Probs(xs[i:i+1], rng.Seeded(3))
			differs = differs || math.Abs(p1[0][0]-got[i][0]) > 1e-9
		}
		if !differs {
			t.Error("one pass gives the same probabilities as eight: dropout is not on")
		}
	})
	t.Run("ranked-by-entropy", func(t *testing.T) {
		order, err := Rank(m, xs, rng.Seeded(4))
		if err != nil {
			t.Fatal(err)
		}
		probs, _ := m.Probs(xs, rng.Seeded(4))
		for j := 1; j < len(order); j++ {
			if entropy(probs[order[j]]) > entropy(probs[order[j-1]]) {
				t.Fatalf("rank %d has entropy above rank %d", j, j-1)
			}
		}
	})
	t.Run("deterministic-under-a-seed", func(t *testing.T) {
		a, _ := Rank(m, xs, rng.Seeded(5))
		b, _ := Rank(m, xs, rng.Seeded(5))
		m2, _ := trainedMLP(t, passes)
		c, _ := Rank(m2, xs, rng.Seeded(5))
		if !slices.Equal(a, b) || !slices.Equal(a, c) {
			t.Fatal("the same seeds gave different rankings")
		}
	})
	t.Run("bad-passes", func(t *testing.T) {
		if _, err := NewMLP(3, 4, 0.5, 0, rng.Seeded(1)); err == nil {
			t.Fatal("passes = 0 accepted")
		}
	})
}

func TestRunRankers(t *testing.T) {
	for _, ranker := range []string{RankMCDropout, RankBootstrap} {
		t.Run(ranker, func(t *testing.T) {
			cfg := smallConfig()
			cfg.Ranker, cfg.Beta, cfg.K = ranker, 1, 1
			cfg.Baseline = true
			a, err := Run(cfg, synthLog(), rng.Seeded(7), nil)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := Run(cfg, synthLog(), rng.Seeded(7), nil)
			if !slices.Equal(a.Curve, b.Curve) {
				t.Fatalf("one seed, two curves: %v, %v", a.Curve, b.Curve)
			}
			if a.LabelsUsed != cfg.LabelsBudget || len(a.Curve) != cfg.Rounds+1 {
				t.Fatalf("labels used %d, curve %v", a.LabelsUsed, a.Curve)
			}
		})
	}
}

func TestVote(t *testing.T) {
	cfg := DefaultConfig()
	a := newAnnotators(cfg, 2, rng.Seeded(1))
	right := map[int]int{}
	const n = 4000
	for _, copies := range []int{1, 5} {
		for range n {
			if a.vote(1, copies) == 1 {
				right[copies]++
			}
		}
	}
	// P(majority of 5 right) at p = 0.65 is 0.765; one answer, 0.65.
	for copies, want := range map[int]float64{1: 0.65, 5: 0.765} {
		if got := float64(right[copies]) / n; math.Abs(got-want) > 0.03 {
			t.Errorf("copies %d: right %.3f, want %.3f", copies, got, want)
		}
	}
}
