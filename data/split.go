package data

import (
	"fmt"
	"math"
	"slices"

	"github.com/dpal-dev/dpal/dp/rng"
)

// Permutation returns a permutation of 0..n−1 determined by seed, used to
// order a training stream. The same (n, seed) always gives the same order.
func Permutation(n int, seed uint64) []int {
	return rng.Seeded(seed).Perm(n)
}

// SplitTrainTest splits 0..n−1 into a training and a test part, with
// round(testFrac·n) indices in the test part, chosen by seed. Both parts are
// returned in increasing order. It fails when testFrac is outside [0, 1] or
// n is negative.
func SplitTrainTest(n int, testFrac float64, seed uint64) (train, test []int, err error) {
	if err := CheckFraction(testFrac); err != nil {
		return nil, nil, fmt.Errorf("train/test split: test %w", err)
	}
	if n < 0 {
		return nil, nil, fmt.Errorf("train/test split: negative size %d", n)
	}
	perm := Permutation(n, seed)
	k := int(math.Round(testFrac * float64(n)))
	test, train = perm[:k], perm[k:]
	slices.Sort(test)
	slices.Sort(train)
	return train, test, nil
}

// CheckFraction returns an error unless f is a number in [0, 1].
func CheckFraction(f float64) error {
	if !(f >= 0 && f <= 1) {
		return fmt.Errorf("fraction %v is not in [0, 1]", f)
	}
	return nil
}
