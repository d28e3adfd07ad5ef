package account

import (
	"sync"
	"testing"
)

// TestPLDCacheSameAnswer: EpsilonAt through the cache (cold, warm, and a
// total extending a cached one by new terms) gives exactly the uncached
// PLD accountant's certified ε.
func TestPLDCacheSameAnswer(t *testing.T) {
	run := PLDTerm{Kind: PLDSubsampledGaussian, SampleRate: 0.02, NoiseMultiplier: 1.3, Count: 100}
	lap := PLDTerm{Kind: PLDLaplace, Scale: 20, Count: 3}
	for _, c := range []struct {
		name  string
		terms []PLDTerm
	}{
		{"one run", []PLDTerm{run}},
		{"same run again (warm)", []PLDTerm{run}},
		{"run then laplace (cached prefix)", []PLDTerm{run, lap}},
		{"two runs merged", []PLDTerm{run, run}},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, err := PLDLoss("test", c.terms...)
			if err != nil {
				t.Fatal(err)
			}
			got, err := l.EpsilonAt(1e-6, Balle2020)
			if err != nil {
				t.Fatal(err)
			}
			want, err := PLDEpsilon(l.PLD, 1e-6, PLDOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got != want.Epsilon {
				t.Fatalf("cached ε %v, uncached %v", got, want.Epsilon)
			}
		})
	}
}

// TestPLDCacheBound: the cache evicts least recently used laws beyond its
// bound and is safe for concurrent use.
func TestPLDCacheBound(t *testing.T) {
	var c pldCache
	big := &PLD{upper: grid{mass: make([]float64, pldCacheBins/2)}}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := string(rune('a' + i))
			c.put(key, big)
			c.get(key)
		}()
	}
	wg.Wait()
	if c.bins > pldCacheBins || len(c.entries) != 2 {
		t.Fatalf("cache holds %d entries, %d points (bound %d)", len(c.entries), c.bins, pldCacheBins)
	}
	c.put("huge", &PLD{upper: grid{mass: make([]float64, pldCacheBins+1)}})
	if c.get("huge") != nil {
		t.Fatal("a law larger than the bound was cached")
	}
}
