package sketch_test

import (
	"fmt"
	"maps"
	"slices"

	"github.com/dpal-dev/dpal/sketch"
)

// The k threshold with the sketch as a pre-filter: an exact recount of
// the sketch's candidates decides, so over-estimates cannot let a rare
// query through.
func ExampleSurvivors() {
	log := []string{"what time is it", "what time is it", "what time is it", "call my sister bob", "volume up", "volume up"}
	s, err := sketch.NewCMM(4, 1<<10, 1, true)
	if err != nil {
		panic(err)
	}
	for _, q := range log {
		s.Add(q)
	}
	kept := sketch.Survivors(s, 2, slices.Values(log))
	for _, q := range slices.Sorted(maps.Keys(kept)) {
		fmt.Println(q, kept[q])
	}
	// Output:
	// volume up 2
	// what time is it 3
}
