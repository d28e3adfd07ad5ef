package account

import (
	"strconv"
	"sync"
)

// pldCache keeps recently composed PLDs for Loss.EpsilonAt, which the
// ledger calls on every charge with a group's growing total: the one-step
// discretisation of each term (reused for any count) and the composed law
// of each term list read (so a later total that extends it by new terms
// only composes those on). Entries are immutable once stored. The cache is
// bounded by grid points held (pldCacheBins, 32 MB), least recently
// used first out.
type pldCache struct {
	mu      sync.Mutex
	entries []pldCacheEntry // least recently used first
	bins    int
}

type pldCacheEntry struct {
	key string
	pld *PLD
}

// pldCacheBins bounds the grid points the cache holds (8 bytes each).
const pldCacheBins = 1 << 22

var theCache pldCache

// get returns the PLD stored under key, marking it recently used.
func (c *pldCache) get(key string) *PLD {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, e := range c.entries {
		if e.key == key {
			c.entries = append(append(c.entries[:i:i], c.entries[i+1:]...), e)
			return e.pld
		}
	}
	return nil
}

// put stores p under key, evicting the least recently used entries beyond
// the bound; a PLD larger than the whole bound is not stored.
func (c *pldCache) put(key string, p *PLD) {
	n := p.Len()
	if n > pldCacheBins {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, e := range c.entries {
		if e.key == key {
			c.bins -= e.pld.Len()
			c.entries = append(c.entries[:i:i], c.entries[i+1:]...)
			break
		}
	}
	for len(c.entries) > 0 && c.bins+n > pldCacheBins {
		c.bins -= c.entries[0].pld.Len()
		c.entries = c.entries[1:]
	}
	c.entries = append(c.entries, pldCacheEntry{key, p})
	c.bins += n
}

// pldKey names the law of terms (in order, counts included) in one
// direction on one grid.
func pldKey(terms []PLDTerm, step float64, add, upperOnly bool) string {
	b := strconv.AppendFloat(nil, step, 'g', -1, 64)
	b = strconv.AppendBool(append(b, '|'), add)
	b = strconv.AppendBool(append(b, '|'), upperOnly)
	for _, t := range terms {
		b = append(append(b, '|'), t.Kind...)
		for _, x := range []float64{t.NoiseMultiplier, t.Scale, t.SampleRate, t.Epsilon, t.Delta} {
			b = strconv.AppendFloat(append(b, ','), x, 'g', -1, 64)
		}
		b = strconv.AppendInt(append(b, ','), int64(t.Sensitivity), 10)
		b = strconv.AppendInt(append(b, ','), int64(t.Count), 10)
	}
	return string(b)
}
