package kanon_test

import (
	"fmt"
	"strings"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/kanon"
)

// Sample half of a log and keep the queries seen at least 3 times in the
// sample: which queries survive, and what the release costs at δ = 0.2.
func ExampleStage() {
	log, err := kanon.ReadLog(strings.NewReader(strings.Repeat("what time is it\n", 12) +
		strings.Repeat("volume up\n", 6) + "call my sister bob\n"))
	if err != nil {
		panic(err)
	}
	texts := make([]string, len(log))
	for i, q := range log {
		texts[i] = q.Text
	}
	kept, err := kanon.Stage(texts, 0.5, 3, 1, 4, 1024)
	if err != nil {
		panic(err)
	}
	g, err := account.KAnonEpsilon(0.5, 3, 0.2)
	if err != nil {
		panic(err)
	}
	fmt.Println(kept)
	fmt.Printf("epsilon %.3f at delta %.3f\n", g.Epsilon, g.Delta)
	// Output:
	// [what time is it]
	// epsilon 0.693 at delta 0.188
}
