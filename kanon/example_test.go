package kanon_test

import (
	"fmt"
	"strings"

	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/kanon"
)

// Hold out one query as the golden set, sample half of the rest of the
// log and keep the queries seen at least 3 times in the sample: which
// queries survive, and what the release costs at δ = 0.2.
func ExampleStage_Release() {
	log, err := kanon.ReadLog(strings.NewReader(strings.Repeat("what time is it\n", 12) +
		strings.Repeat("volume up\n", 6) + "call my sister bob\n"))
	if err != nil {
		panic(err)
	}
	texts := make([]string, len(log))
	for i, q := range log {
		texts[i] = q.Text
	}
	cfg := kanon.DefaultConfig()
	cfg.Beta, cfg.K, cfg.Golden, cfg.TestFraction = 0.5, 3, 1, 0.01
	st, err := kanon.NewStage(cfg, kanon.SeededCoins(1))
	if err != nil {
		panic(err)
	}
	split, err := st.Release(texts)
	if err != nil {
		panic(err)
	}
	g, err := kanon.Epsilon(0.5, 3, 0.2)
	if err != nil {
		panic(err)
	}
	fmt.Println("golden", split.Golden, "released", split.Released)
	fmt.Printf("epsilon %.3f at delta %.3f\n", g.Epsilon, g.Delta)
	// Output:
	// golden [call my sister bob] released [what time is it]
	// epsilon 0.693 at delta 0.188
}

// Train the MC-dropout intent classifier on four labelled queries and rank
// three unlabelled ones by the entropy of the mean of 10 dropout passes:
// the query unlike any training query is the most uncertain.
func ExampleRank() {
	r := rng.Seeded(1)
	train := []string{"set an alarm for seven", "wake me up at six", "will it rain today", "weather for tomorrow"}
	var xs []kanon.Features
	for _, t := range train {
		xs = append(xs, kanon.Featurize(t))
	}
	m, err := kanon.NewMLP(2, 16, 0.5, 10, r)
	if err != nil {
		panic(err)
	}
	if err := m.Train(xs, []int{0, 0, 1, 1}, 50, r); err != nil {
		panic(err)
	}
	texts := []string{"alarm at seven", "rain tomorrow", "play jazz"}
	var pool []kanon.Features
	for _, t := range texts {
		pool = append(pool, kanon.Featurize(t))
	}
	order, err := kanon.Rank(m, pool, r)
	if err != nil {
		panic(err)
	}
	fmt.Println("most uncertain:", texts[order[0]])
	// Output:
	// most uncertain: play jazz
}
