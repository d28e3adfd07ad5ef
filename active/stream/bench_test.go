package stream

import (
	"testing"

	"github.com/dpal-dev/dpal/dp/rng"
)

// BenchmarkStreamEvent measures the per-event path at d = 120 (KDD Cup 99's
// dimension): validation, the private selection decision, the oracle's
// label for a requested event (or its decline), and the mini-batch update
// amortised over the events between updates. One op is one event.
//
// Every event gets a decision. What varies is how many requests the expert
// answers, which sets how often updates happen:
//   - labels-all: every request is labelled (≈ 0.73 labels/event at the
//     paper's ε_s = 1), the worst case for the update;
//   - labels-1in7, labels-1in73: about 10 % and 1 % labels per event;
//   - labels-paper: 1 in 1800 requests, ≈ 4.05e-4 labels/event, the rate of
//     the paper's KDD run (200 labels over 494,021 events);
//   - decision-only: no labels, no updates, the selector alone;
//   - budget200: a label budget of 200, after which events are only
//     validated (no selection is drawn once no label can be asked).
func BenchmarkStreamEvent(b *testing.B) {
	const d, n = 120, 1 << 10
	X, Y := synthStream(n, d, 0.05, 7)
	for _, bc := range []struct {
		name       string
		labelEvery int // label one request in labelEvery; 0 labels none
		cfg        func(*Config)
	}{
		{"bernoulli-flmb5-labels-all", 1, nil},
		{"bernoulli-flsw5-labels-all", 1, func(c *Config) { c.Policy = FLSW }},
		{"exponential-flmb5-labels-all", 1, func(c *Config) { c.Selector = Exponential }},
		{"bernoulli-flmb5-labels-1in7", 7, nil},
		{"bernoulli-flmb5-labels-1in73", 73, nil},
		{"bernoulli-flmb5-labels-paper", 1800, nil},
		{"exponential-flmb5-labels-paper", 1800, func(c *Config) { c.Selector = Exponential }},
		{"bernoulli-decision-only", 0, nil},
		{"exponential-decision-only", 0, func(c *Config) { c.Selector = Exponential }},
		{"bernoulli-flmb5-budget200", 1, func(c *Config) { c.LabelBudget = 200 }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			cfg := DefaultConfig(d)
			if bc.cfg != nil {
				bc.cfg(&cfg)
			}
			l, err := New(cfg, rng.Seeded(1), nil)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			i, requests := 0, 0
			for b.Loop() {
				dec, err := l.Observe(X[i])
				if err != nil {
					b.Fatal(err)
				}
				if dec.Request {
					requests++
					if bc.labelEvery > 0 && requests%bc.labelEvery == 0 {
						err = l.Label(dec.ID, Y[i])
					} else {
						err = l.Decline(dec.ID)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				if i++; i == n {
					i = 0
					l.DropReleases()
				}
			}
			s := l.Stats()
			b.ReportMetric(float64(s.Requested)/float64(s.Observed), "requests/event")
			b.ReportMetric(float64(s.Labelled)/float64(s.Observed), "labels/event")
			b.ReportMetric(float64(s.Updates)/float64(s.Observed), "updates/event")
		})
	}
}

// BenchmarkUpdate measures one eq. 10 update at d = 120 with B = 5: the
// gradient and the gamma noise (dp/mech), which dominate the amortised cost.
func BenchmarkUpdate(b *testing.B) {
	const d = 120
	X, Y := synthStream(5, d, 0, 3)
	l, err := New(DefaultConfig(d), rng.Seeded(1), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		for i, x := range X {
			l.batch = append(l.batch, point{id: uint64(i), x: x, y: Y[i]})
		}
		if err := l.update(); err != nil {
			b.Fatal(err)
		}
		l.free = l.free[:0]
		if len(l.releases) > 1024 {
			l.DropReleases()
		}
	}
}
