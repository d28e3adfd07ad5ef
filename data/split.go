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
// returned in increasing order. testFrac must lie in [0, 1] and n must be
// non-negative; other values are programming errors and panic, so callers
// taking them from users must check them first (see CheckFraction).
func SplitTrainTest(n int, testFrac float64, seed uint64) (train, test []int) {
	if err := CheckFraction(testFrac); err != nil || n < 0 {
		panic(fmt.Sprintf("data.SplitTrainTest(n=%d, testFrac=%v): invalid arguments", n, testFrac))
	}
	perm := Permutation(n, seed)
	k := int(math.Round(testFrac * float64(n)))
	test, train = perm[:k], perm[k:]
	slices.Sort(test)
	slices.Sort(train)
	return train, test
}

// CheckFraction returns an error unless f is a number in [0, 1].
func CheckFraction(f float64) error {
	if !(f >= 0 && f <= 1) {
		return fmt.Errorf("fraction %v is not in [0, 1]", f)
	}
	return nil
}
