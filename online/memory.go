package online

import "github.com/dpal-dev/dpal/dp/mech"

// Synthetic data's defaults in LoadData: SyntheticRecords records (and a
// tenth more as test) of dimension SyntheticDim.
const (
	SyntheticRecords = 100000
	SyntheticDim     = 10
)

// SyntheticBytes estimates what LoadData("synthetic", …) allocates for n
// records of dimension d (the defaults when n or d ≤ 0): n + n/10 rows of
// d floats, each with its slice header, label and Example, and d feature
// names.
func SyntheticBytes(n, d int) float64 {
	if n <= 0 {
		n = SyntheticRecords
	}
	if d <= 0 {
		d = SyntheticDim
	}
	rows := float64(n + n/10)
	return rows*(8*float64(d)+64) + 24*float64(d)
}

// MemoryBytes estimates what a run of spec (Cost.Dim and Steps set)
// allocates for its learner and, for the squared loss, for Run's offline
// optimum; the data are left out. Private FTL keeps a packed d×d sum in
// each of its V tree's TreeLevels(leaves) levels twice (exact and noisy)
// and in its prefix and pending sums; every FTL solver (the learner's and
// the offline optimum's QFTL) holds a dense d×d work matrix, a packed floor
// factor and, when an eigenvalue is floored, an eigendecomposition (a
// copy, the vectors and their transpose); IGD and GIGA keep a few
// d-vectors. This counts allocations: the process's resident size can be
// up to about twice as large under Go's collector.
func MemoryBytes(spec Spec) float64 {
	d := float64(spec.Cost.Dim)
	sq := d * d // a packed symmetric d×d matrix is sq/2 floats
	const solver = 1 + 0.5 + 3
	vectors := 16.0
	var floats float64
	switch {
	case spec.Algorithm == "ftl" && spec.NonPrivate:
		floats = (1 + solver) * sq // QFTL: v and atom, packed
	case spec.Algorithm == "ftl":
		batch := max(spec.Batch, 1)
		levels := float64(mech.TreeLevels(max(1, (spec.Steps-1+batch-1)/batch)))
		floats = (1 + levels + solver) * sq // V tree: 2 + 2·levels packed sums
		vectors += 2 + 2*levels             // u tree
	}
	if spec.Cost.Loss == Squared {
		floats += (1 + solver) * sq // Run's offline optimum, a QFTL
	}
	return 8 * (floats + vectors*d)
}
