package stream

import (
	"strings"
	"testing"

	"github.com/dpal-dev/dpal/dp/rng"
)

// BenchmarkStreamEvent measures the per-event path at d = 120 (KDD Cup 99's
// dimension): validation, the private selection decision, the simulated
// oracle's label for a requested event, and the mini-batch update amortised
// over the events of its window. One op is one event. The decision-only
// cases decline every request (no labels, no updates): the selector alone.
func BenchmarkStreamEvent(b *testing.B) {
	const d, n = 120, 1 << 10
	X, Y := synthStream(n, d, 0.05, 7)
	for _, bc := range []struct {
		name string
		cfg  func(*Config)
	}{
		{"bernoulli-flmb5", nil},
		{"bernoulli-flsw5", func(c *Config) { c.Policy = FLSW }},
		{"exponential-flmb5", func(c *Config) { c.Selector = Exponential }},
		{"bernoulli-flmb5-budget200", func(c *Config) { c.LabelBudget = 200 }},
		{"bernoulli-decision-only", nil},
		{"exponential-decision-only", func(c *Config) { c.Selector = Exponential }},
	} {
		decisionOnly := strings.HasSuffix(bc.name, "decision-only")
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
			i := 0
			for b.Loop() {
				dec, err := l.Observe(X[i])
				if err != nil {
					b.Fatal(err)
				}
				if dec.Request && decisionOnly {
					if err := l.Decline(dec.ID); err != nil {
						b.Fatal(err)
					}
				} else if dec.Request {
					if err := l.Label(dec.ID, Y[i]); err != nil {
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
