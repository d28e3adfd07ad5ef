package account

import (
	"slices"
)

// Parallel composition of PLD parts.
//
// A loss made of mechanisms each run on one part of a partition of the
// data (Parallel) is, for a record of part p, the loss of part p alone:
// its privacy curve is the worst over the parts, δ(ε) = max_p δ_p(ε), which
// no single loss distribution has. A Loss keeps it as alternatives: terms
// with PLDTerm.Part = 0 belong to every alternative (they were composed
// after, or before, the parallel step), terms with Part = p ≥ 1 to
// alternative p only, and its ε at δ is the largest of the alternatives'.
// This is sound whatever the other parts of the Loss: a record in part p
// suffers that part's approximate and Rényi parts too, which Parallel
// bounds by the maximum (McSherry 2009, Thm 4).
//
// Sequential composition of two such losses is the cross product of their
// alternatives (a record may fall in part p of one and part r of the
// other). An alternative that is a sub-multiset of another is dropped (its
// mechanisms are a post-processing of the other's, so it loses less), and
// more than pldMaxParts alternatives are joined into one: per mechanism the
// largest count, which contains every alternative and so bounds them all
// (sound, less tight).

// pldMaxParts caps the alternatives a Loss keeps.
const pldMaxParts = 16

// hasParts reports whether terms has parallel alternatives.
func hasParts(terms []PLDTerm) bool {
	return slices.ContainsFunc(terms, func(t PLDTerm) bool { return t.Part != 0 })
}

// alternatives returns the term lists (Part cleared, merged) whose ε the
// loss is the largest of; without parts, terms itself.
func alternatives(terms []PLDTerm) [][]PLDTerm {
	if !hasParts(terms) {
		return [][]PLDTerm{terms}
	}
	var common []PLDTerm
	parts := map[int][]PLDTerm{}
	var order []int
	for _, t := range terms {
		p := t.Part
		t.Part = 0
		if p == 0 {
			common = append(common, t)
			continue
		}
		if _, ok := parts[p]; !ok {
			order = append(order, p)
		}
		parts[p] = append(parts[p], t)
	}
	slices.Sort(order)
	out := make([][]PLDTerm, len(order))
	for i, p := range order {
		out[i] = mergeTerms(append(slices.Clone(common), parts[p]...))
	}
	return out
}

// fromAlternatives returns the terms of the largest of alts (each merged,
// Part 0): dominated alternatives dropped, too many joined, and the counts
// every alternative shares kept once with Part 0.
func fromAlternatives(alts [][]PLDTerm) []PLDTerm {
	var keep [][]PLDTerm
	for i, a := range alts {
		dominated := false
		for j, b := range alts {
			if i != j && contains(b, a) && (!contains(a, b) || j < i) {
				dominated = true
				break
			}
		}
		if !dominated {
			keep = append(keep, a)
		}
	}
	switch {
	case len(keep) == 0:
		return nil
	case len(keep) > pldMaxParts:
		keep = [][]PLDTerm{join(keep)}
	}
	if len(keep) == 1 {
		return keep[0]
	}
	common := shared(keep)
	out := slices.Clone(common)
	for i, a := range keep {
		for _, t := range a {
			t.Count -= countOf(common, t)
			if t.Count > 0 {
				t.Part = i + 1
				out = append(out, t)
			}
		}
	}
	return out
}

// mechKey is t without its count and part: the mechanism and its
// parameters.
func mechKey(t PLDTerm) PLDTerm {
	t.Count, t.Part = 0, 0
	return t
}

// countOf returns the count of t's mechanism in terms (merged).
func countOf(terms []PLDTerm, t PLDTerm) int {
	k := mechKey(t)
	for _, u := range terms {
		if mechKey(u) == k {
			return u.Count
		}
	}
	return 0
}

// contains reports whether the multiset a holds b (every mechanism of b
// with at least its count).
func contains(a, b []PLDTerm) bool {
	for _, t := range b {
		if countOf(a, t) < t.Count {
			return false
		}
	}
	return true
}

// shared returns, per mechanism every alternative has, the smallest count.
func shared(alts [][]PLDTerm) []PLDTerm {
	var out []PLDTerm
	for _, t := range alts[0] {
		c := t.Count
		for _, a := range alts[1:] {
			c = min(c, countOf(a, t))
		}
		if c > 0 {
			t.Count = c
			out = append(out, t)
		}
	}
	return out
}

// join returns, per mechanism, the largest count over the alternatives.
func join(alts [][]PLDTerm) []PLDTerm {
	var out []PLDTerm
	for _, a := range alts {
		for _, t := range a {
			if c := countOf(out, t); c == 0 {
				out = append(out, t)
			} else if t.Count > c {
				out[slices.IndexFunc(out, func(u PLDTerm) bool { return mechKey(u) == mechKey(t) })].Count = t.Count
			}
		}
	}
	return out
}

// composeTerms is the PLD part of Compose: concatenation, or with
// alternatives on either side their cross product.
func composeTerms(a, b []PLDTerm) ([]PLDTerm, error) {
	if len(b) == 0 {
		return a, nil
	}
	if !hasParts(a) && !hasParts(b) {
		return mergeTerms(append(slices.Clone(a), b...)), nil
	}
	var alts [][]PLDTerm
	for _, x := range alternatives(a) {
		for _, y := range alternatives(b) {
			alts = append(alts, mergeTerms(append(slices.Clone(x), y...)))
		}
	}
	return fromAlternatives(alts), nil
}

// parallelTerms is the PLD part of Parallel: the alternatives of both.
func parallelTerms(a, b []PLDTerm) ([]PLDTerm, error) {
	if slices.Equal(a, b) {
		return a, nil
	}
	return fromAlternatives(append(alternatives(a), alternatives(b)...)), nil
}

// timesTerms is the PLD part of n sequential copies: every count times n,
// or with alternatives n cross products (while there are few) or the join
// of the alternatives n times.
func timesTerms(terms []PLDTerm, n int) []PLDTerm {
	if !hasParts(terms) {
		out := slices.Clone(terms)
		for i := range out {
			out[i].Count *= n
		}
		return out
	}
	if n <= pldMaxParts {
		out := terms
		for range n - 1 {
			out, _ = composeTerms(out, terms)
		}
		return out
	}
	return timesTerms(join(alternatives(terms)), n)
}
