package kanon

import (
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/dpal-dev/dpal/dp/rng"
)

// TestKeepIndependentOfOrder checks, in both threshold modes, that the
// per-query decision (Stage.Keep) depends only on the key, the query and
// its count: the log shuffled, split into shards whose counts are merged,
// and the queries decided in reverse order, concurrently, each on its own
// Stage (as Beam workers do), give exactly Release's set. In dp mode it
// also checks that nothing was pre-filtered: some released query was seen
// fewer than k times.
func TestKeepIndependentOfOrder(t *testing.T) {
	var log []string
	for _, q := range synthLog() {
		log = append(log, q.Text)
	}
	for _, mode := range []string{ThresholdExact, ThresholdDP} {
		t.Run(mode, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Beta, cfg.K, cfg.Golden, cfg.SketchWidth = 0.6, 6, 5, 64
			cfg.Threshold, cfg.NoiseEpsilon = mode, 0.5
			coins := SeededCoins(11)
			st, err := NewStage(cfg, coins)
			if err != nil {
				t.Fatal(err)
			}
			want, err := st.Release(log)
			if err != nil {
				t.Fatal(err)
			}
			got := shardedRelease(t, cfg, coins, log, want)
			if !slices.Equal(got, want.Released) || len(got) == 0 {
				t.Fatalf("sharded, reversed, concurrent decisions kept %v, Release %v", got, want.Released)
			}
			counts := map[string]int{}
			for _, q := range log {
				counts[q]++
			}
			low := slices.ContainsFunc(want.Released, func(q string) bool { return counts[q] < cfg.K })
			if low != (mode == ThresholdDP) {
				t.Fatalf("%s mode: released a query seen fewer than k times: %v", mode, low)
			}
		})
	}
}

// shardedRelease decides the pool of log the way a distributed run does:
// the shuffled log cut into three shards, per-shard counts merged, the
// held-out queries of sp dropped, and each query decided by a fresh Stage
// on its own goroutine, in reverse order. It returns the kept set, sorted.
func shardedRelease(t *testing.T, cfg Config, coins Coins, log []string, sp Split) []string {
	t.Helper()
	shuffled := slices.Clone(log)
	rng.Seeded(5).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	counts := map[string]uint64{}
	for s := range 3 {
		shard := map[string]uint64{}
		for _, q := range shuffled[s*len(shuffled)/3 : (s+1)*len(shuffled)/3] {
			shard[q]++
		}
		for q, n := range shard {
			counts[q] += n
		}
	}
	for _, q := range slices.Concat(sp.Test, sp.Golden) {
		delete(counts, q)
	}
	pool := slices.Sorted(maps.Keys(counts))
	slices.Reverse(pool)
	var (
		mu   sync.Mutex
		kept []string
		wg   sync.WaitGroup
	)
	for _, q := range pool {
		wg.Go(func() {
			st, err := NewStage(cfg, coins)
			if err != nil {
				t.Error(err)
				return
			}
			ok, err := st.Keep(q, counts[q])
			if err != nil {
				t.Error(err)
			}
			if ok {
				mu.Lock()
				kept = append(kept, q)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	slices.Sort(kept)
	return kept
}

// TestNewStageRefuses checks the stage's own validation: an unknown
// threshold, and a dp threshold without a usable noise ε' or with k < 2.
func TestNewStageRefuses(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"unknown threshold", func(c *Config) { c.Threshold = "noisy" }, "threshold must be"},
		{"zero noise epsilon", func(c *Config) { c.Threshold, c.NoiseEpsilon = ThresholdDP, 0 }, "epsilon"},
		{"negative noise epsilon", func(c *Config) { c.Threshold, c.NoiseEpsilon = ThresholdDP, -1 }, "epsilon"},
		{"dp with k = 1", func(c *Config) { c.Threshold, c.K = ThresholdDP, 1 }, "k must be >= 2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := DefaultConfig()
			c.edit(&cfg)
			if _, err := NewStage(cfg, SeededCoins(1)); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}
