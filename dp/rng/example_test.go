package rng_test

import (
	"fmt"

	"github.com/dpal-dev/dpal/dp/rng"
)

// A bulk child of a seeded source is reproducible and reports the seed;
// Fill hands out its words a block at a time, the same words Uint64 would.
func ExampleRand_Bulk() {
	a, b := rng.Seeded(7).Bulk(), rng.Seeded(7).Bulk()
	words := make([]uint64, 3)
	a.Fill(words)
	seed, seeded := a.Seed()
	fmt.Println(words[0] == b.Uint64(), words[1] == b.Uint64(), seed, seeded)
	// Output: true true 7 true
}
