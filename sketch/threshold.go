package sketch

import "iter"

// Survivors applies the k threshold with the rule that guards it against
// over-estimation: the sketch may only reject. A key is a candidate when
// its Count-Min value is ≥ k; since that value never falls below the true
// count, no key that truly occurs k or more times is lost. A candidate is
// kept only on its exact count, taken in a second pass over the same
// sample that counts candidates alone (at most N/k keys truly pass; the
// rest are the sketch's false positives). So the kept set is exactly the
// set of keys with true count ≥ k, for every stream and whatever the
// collisions: the sketch saves memory, never privacy. The Count-Mean-Min
// Estimate, which can under- and over-shoot, never takes part.
//
// s must summarise exactly the sample that pass yields. The returned map
// (key → exact count) is trusted-side state, like the sketch.
func Survivors(s *CMM, k uint64, pass iter.Seq[string]) map[string]uint64 {
	exact := make(map[string]uint64)
	for key := range pass {
		if c, ok := exact[key]; ok {
			exact[key] = c + 1
			continue
		}
		if s.Min(key) >= k {
			exact[key] = 1
		}
	}
	for key, c := range exact {
		if c < k {
			delete(exact, key)
		}
	}
	return exact
}
