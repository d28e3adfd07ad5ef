package stream_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"

	"github.com/dpal-dev/dpal/active/stream"
	"github.com/dpal-dev/dpal/dp/rng"
)

// A learner screens a stream one event at a time; the oracle answers the
// requests (here at once, from known labels), and FLMB publishes a model
// after every L = 2 labels. Production code passes rng.Secure().
func ExampleLearner() {
	cfg := stream.DefaultConfig(2)
	cfg.Window = 2
	l, err := stream.New(cfg, rng.Seeded(1), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	events := [][]float64{{0.5, 0.1}, {-0.4, 0.2}, {0.3, -0.3}, {-0.2, -0.6}, {0.6, 0.6}, {-0.7, 0}}
	labels := []float64{1, -1, 1, -1, 1, -1}
	for i, x := range events {
		dec, err := l.Observe(x)
		if err != nil {
			fmt.Println(err)
			return
		}
		if dec.Request {
			if err := l.Label(dec.ID, labels[i]); err != nil {
				fmt.Println(err)
				return
			}
		}
	}
	s := l.Stats()
	fmt.Printf("observed %d, requested %d, updates %d\n", s.Observed, s.Requested, s.Updates)
	fmt.Printf("every record's ε ≤ %.0f (ε_s + ε_g)\n", s.MaxEpsilonPerRecord)
	for _, r := range l.Releases() {
		fmt.Printf("release %d after event %d\n", r.Update, r.Observation)
	}
	// Output:
	// observed 6, requested 4, updates 2
	// every record's ε ≤ 2 (ε_s + ε_g)
	// release 1 after event 2
	// release 2 after event 6
}

// SaveState writes everything a resume needs, including the requests still
// waiting for a label; the state holds private data (the buffered events)
// and must be stored like the stream itself.
func ExampleLearner_SaveState() {
	l, err := stream.New(stream.DefaultConfig(2), rng.Seeded(2), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, x := range [][]float64{{0.5, 0.1}, {-0.4, 0.2}, {0.3, -0.3}} {
		if _, err := l.Observe(x); err != nil {
			fmt.Println(err)
			return
		}
	}
	var state bytes.Buffer
	if err := l.SaveState(&state); err != nil {
		fmt.Println(err)
		return
	}
	back, err := stream.Restore(&state, rng.Seeded(2), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	seed, _ := back.Seed()
	fmt.Printf("resumed after %d events, %d requested, pending %v, seed %d\n", back.Stats().Observed, back.Stats().Requested, back.Pending(), seed)
	// Output:
	// resumed after 3 events, 3 requested, pending [1 2 3], seed 2
}

// Restore continues a seeded state only under its own seed (a seeded run
// must record the seed that drives it); rng.Secure() instead replaces the
// saved random stream with fresh secure randomness.
func ExampleRestore() {
	l, err := stream.New(stream.DefaultConfig(2), rng.Seeded(7), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	var state bytes.Buffer
	if err := l.SaveState(&state); err != nil {
		fmt.Println(err)
		return
	}
	saved := state.Bytes()
	_, err = stream.Restore(bytes.NewReader(saved), rng.Seeded(8), nil)
	fmt.Println(errors.Is(err, stream.ErrSeedMismatch))
	back, err := stream.Restore(bytes.NewReader(saved), rng.Secure(), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	_, seeded := back.Seed()
	fmt.Println(seeded)
	// Output:
	// true
	// false
}

// DetectorConfig sets the Gaussian update's batch size, radius and
// regulariser from public quantities only (ε_g, δ, clipping norm, d); the
// per-record ε is ε_s + ε_g at δ, as the learner's ledger reports it.
func ExampleDetectorConfig() {
	cfg := stream.DetectorConfig(116) // KDD Cup 99's dimension
	eps, err := cfg.RecordEpsilon()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("update %s, window %d, radius %.2f, lambda %.5f\n", cfg.Update, cfg.Window, cfg.Radius, cfg.Lambda)
	fmt.Printf("every record's ε ≤ %g at δ = %g\n", eps, cfg.Delta)
	// Output:
	// update gaussian, window 200, radius 10.77, lambda 0.00862
	// every record's ε ≤ 2 at δ = 1e-05
}

func ExampleSlabRR() {
	// Stream active learning, Bernoulli selection (Lemma 1): ask for the
	// label with probability 1 − p inside the slab c = exp(−d) ≥ τ, p outside.
	s, err := stream.NewSlabRR(1)
	if err != nil {
		fmt.Println(err)
		return
	}
	d, tau := 0.1, math.Exp(-0.2) // distance to the hyperplane, threshold
	inside := math.Exp(-d) >= tau
	_ = s.Select(rng.Seeded(5), inside)
	fmt.Printf("p_in %.4f p_out %.4f %s eps %v\n", s.PIn(), s.POut(), s.Loss().Mechanism, s.Loss().Epsilon)
	// Output: p_in 0.7311 p_out 0.2689 slab-randomized-response eps 1
}

func ExampleExpSelector() {
	// Eq. 7 as written, with the paper's §5 settings, leaks more than ε = 1
	// through the non-selection event; the selector charges the true ε_s.
	paper, err := stream.NewExpSelector(1, 0.2, 1, stream.PaperScale)
	if err != nil {
		fmt.Println(err)
		return
	}
	// Widening the slab brings the true ε_s down to the target.
	slab, err := stream.NewExpSelector(1, 0.2, 1, stream.CalibrateSlab)
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = slab.Select(rng.Seeded(6), 0.7) // a point at distance 0.7
	fmt.Printf("paper: kappa %.4f eps_s %.4f\n", paper.Kappa(), paper.Epsilon())
	fmt.Printf("slab:  b %.4f kappa %.4f eps_s %.4f q(0.7) %.4f\n", slab.B(), slab.Kappa(), slab.Epsilon(), slab.Prob(0.7))
	// Output:
	// paper: kappa 1.2500 eps_s 1.1711
	// slab:  b 0.2385 kappa 1.3133 eps_s 1.0000 q(0.7) 0.3988
}
