package kanon

import (
	"slices"

	"github.com/dpal-dev/dpal/dp/mech"
	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/sketch"
)

// SampleKeep reports whether occurrence number index of a log belongs to
// the Bernoulli(β) sample drawn from seed. The draw is an exact Bernoulli
// (mech.BernoulliFloat) from a ChaCha8 stream keyed by (seed, index), so a
// worker of a distributed pipeline, seeing occurrences in any order, makes
// the same choice as a single process. Seeded: for experiments and the
// equivalence test of the distributed stage; production sampling uses the
// secure source (Run with rng.Secure()).
func SampleKeep(seed, index uint64, beta float64) bool {
	if beta >= 1 {
		return true
	}
	// SplitMix64 of the index, so neighbouring indices key unrelated streams.
	z := index + 0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return mech.BernoulliFloat(rng.Seeded(seed^z^z>>31), beta)
}

// Stage is the sampling + sketching + exact-k stage on one machine: the
// occurrences SampleKeep keeps, a Count-Mean-Min sketch of them
// (rows × width, conservative update) as the pre-filter, and the exact
// recount that decides (sketch.Survivors). It returns the surviving
// queries, sorted; a distributed pipeline must return the same set. The
// result is trusted-side until it is charged and released.
func Stage(log []string, beta float64, k int, seed uint64, rows, width int) ([]string, error) {
	s, err := sketch.NewCMM(rows, width, SketchSeed, true)
	if err != nil {
		return nil, err
	}
	var sample []string
	for i, q := range log {
		if SampleKeep(seed, uint64(i), beta) {
			sample = append(sample, q)
			s.Add(q)
		}
	}
	var out []string
	for q := range sketch.Survivors(s, uint64(k), slices.Values(sample)) {
		out = append(out, q)
	}
	slices.Sort(out)
	return out, nil
}

// SketchSeed keys the hash parameters of the pipeline's sketches; every
// worker uses it so that their sketches merge.
const SketchSeed = 0x6b616e6f6e
