package pool

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/rng"
)

// randomPasses returns one random 3-class probability vector per record.
func randomPasses(r *rng.Rand, n int) [][][]float64 {
	out := make([][][]float64, n)
	for i := range out {
		a, b := float64(r.Uint64()>>11)/(1<<53), float64(r.Uint64()>>11)/(1<<53)
		lo, hi := min(a, b), max(a, b)
		out[i] = [][]float64{{lo, hi - lo, 1 - hi}}
	}
	return out
}

func ids(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i)
	}
	return out
}

// TestLedgerMatchesPlan runs the pool loop's privacy side without a model:
// every phase's planned DP-SGD loss is charged to its groups' records and
// every selection goes through Select, with per-record ledger groups. Each
// record's ledger total must be its group's planned ε (and the plan's
// never-selected ε for the rest of the pool).
func TestLedgerMatchesPlan(t *testing.T) {
	for _, acc := range []Accounting{Basic, RDP} {
		t.Run(acc.String(), func(t *testing.T) {
			cfg := Config{Epsilon: 4, EpsilonSelect: 1, Delta: 1e-4, Batch: 64, Epochs: 5, Initial: 300,
				Queries: []int{100, 50, 50}, Mode: StepAmplification, Accounting: acc}
			plan, err := Build(cfg)
			if err != nil {
				t.Fatal(err)
			}
			l, err := ledger.New(account.Budget{Epsilon: cfg.Epsilon, Delta: cfg.Delta})
			if err != nil {
				t.Fatal(err)
			}
			r := rng.Seeded(7)
			groups := [][]string{ids("initial-", cfg.Initial)}
			unlabelled := ids("pool-", 600)
			T := len(cfg.Queries)
			for e, ph := range plan.Phases {
				for g := range ph.Groups {
					loss, ok, err := plan.PhaseLoss(e, g)
					if err != nil {
						t.Fatal(err)
					}
					if ok {
						if _, err := l.Record(ledger.Charge{Groups: groups[g], Loss: loss}); err != nil {
							t.Fatal(err)
						}
					}
				}
				if e+1 < len(plan.Phases) && plan.Phases[e+1].Round == ph.Round || ph.Round > T {
					continue
				}
				a, err := NewAcquire(Entropy, cfg.EpsilonSelect/float64(T), cfg.Queries[ph.Round-1], 3, EntropyClip)
				if err != nil {
					t.Fatal(err)
				}
				sel, err := Select(l, r, a, acc, unlabelled, randomPasses(r, len(unlabelled)), "selection")
				if err != nil {
					t.Fatal(err)
				}
				groups = append(groups, sel)
				unlabelled = slices.DeleteFunc(unlabelled, func(id string) bool { return slices.Contains(sel, id) })
			}
			for g, members := range groups {
				want := plan.Groups[g].EpsilonTotal
				for _, id := range members {
					if got, _ := l.Spent(id); math.Abs(got-want) > 1e-9*want {
						t.Fatalf("%s (group %s): ledger ε %.12g, plan %.12g", id, plan.Groups[g].Group, got, want)
					}
				}
			}
			want, err := plan.UnselectedEpsilon()
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range unlabelled {
				if got, _ := l.Spent(id); math.Abs(got-want) > 1e-9 {
					t.Fatalf("%s: ledger ε %v, plan %v", id, got, want)
				}
			}
		})
	}
}

func TestSelectRefuses(t *testing.T) {
	l, _ := ledger.New(account.Budget{Epsilon: 1, Delta: 1e-5})
	r := rng.Seeded(1)
	a, _ := NewAcquire(LeastConfidence, 0.6, 2, 3, 0)
	pool := ids("x", 5)
	t.Run("invalid record charges nothing", func(t *testing.T) {
		passes := randomPasses(r, 5)
		passes[3] = [][]float64{{0.5, 0.6, 0}}
		if _, err := Select(l, r, a, Basic, pool, passes, ""); err == nil || !strings.Contains(err.Error(), "record 3") {
			t.Errorf("error %v does not name record 3", err)
		}
		if l.Len() != 0 {
			t.Errorf("%d entries after a refused selection", l.Len())
		}
	})
	t.Run("budget", func(t *testing.T) {
		sel, err := Select(l, r, a, Basic, pool, randomPasses(r, 5), "")
		if err != nil || len(sel) != 2 {
			t.Fatalf("first selection: %v %v", sel, err)
		}
		if _, err := Select(l, r, a, Basic, pool, randomPasses(r, 5), ""); !errors.Is(err, account.ErrBudgetExceeded) {
			t.Errorf("second selection: %v, want ErrBudgetExceeded", err)
		}
		if l.Len() != 1 {
			t.Errorf("%d entries, want 1", l.Len())
		}
	})
	t.Run("random", func(t *testing.T) {
		rnd, _ := NewAcquire(Random, 0, 3, 3, 0)
		sel, err := Select(l, r, rnd, Basic, pool, nil, "")
		if err != nil || len(sel) != 3 {
			t.Errorf("random selection: %v %v", sel, err)
		}
	})
}

// BenchmarkSelect is one private entropy selection of 1 000 records from a
// pool of 50 000, charged per record to an in-memory ledger (a fresh
// ledger each time, so the budget never runs out).
func BenchmarkSelect(b *testing.B) {
	r := rng.Seeded(1)
	pool := ids("x", 50000)
	passes := randomPasses(r, len(pool))
	a, err := NewAcquire(Entropy, 0.5, 1000, 3, EntropyClip)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		b.StopTimer()
		l, _ := ledger.New(account.Budget{Epsilon: 8, Delta: 1e-5})
		b.StartTimer()
		if _, err := Select(l, r, a, Basic, pool, passes, ""); err != nil {
			b.Fatal(err)
		}
	}
}
