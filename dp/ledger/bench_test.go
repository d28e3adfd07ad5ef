package ledger_test

import (
	"path/filepath"
	"testing"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
)

// benchRelease releases from l with m's loss until the benchmark stops,
// and returns how many releases it made.
func benchRelease(b *testing.B, l *ledger.Ledger, m account.Mechanism) int {
	groups := one("g")
	draw := func() (float64, error) { return 1, nil }
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		if _, err := ledger.Release(l, m, groups, draw); err != nil {
			b.Fatal(err)
		}
		n++
	}
	return n
}

// BenchmarkReleaseMem is charge-then-release of a pure-ε loss in memory.
func BenchmarkReleaseMem(b *testing.B) {
	benchRelease(b, mustNew(b, account.Budget{Epsilon: 1e12}), mech{lap(1e-6)})
}

// BenchmarkReleaseMemRDP charges a DP-SGD step's RDP curve (151 orders),
// composed with the group's curve and converted at every release.
func BenchmarkReleaseMemRDP(b *testing.B) {
	step, err := account.SubsampledGaussian([]account.Phase{{SampleRate: 0.01, NoiseMultiplier: 1.1, Steps: 1}})
	if err != nil {
		b.Fatal(err)
	}
	benchRelease(b, mustNew(b, account.Budget{Epsilon: 1e12, Delta: 1e-5}), mech{step})
}

// BenchmarkReleaseFile is charge-then-release on the durable store: one
// fsync'd transaction per release.
func BenchmarkReleaseFile(b *testing.B) {
	l := openLedger(b, filepath.Join(b.TempDir(), "bench.db"), account.Budget{Epsilon: 1e12})
	defer l.Close()
	n := benchRelease(b, l, mech{lap(1e-6)})
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "appends/s")
}

// BenchmarkChargePLD is the PLD accountant's cost per charge: a fresh
// in-memory ledger takes three DP-SGD group charges (q = 0.01, σ ≈ 1.1,
// 1000 steps each, as PLD terms), then one Laplace release, and is
// summarised, so every charge converts the group's growing total. σ moves
// by 1e-9 per iteration so that no iteration reuses another's laws.
func BenchmarkChargePLD(b *testing.B) {
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		run, err := account.PLDLoss("dp-sgd", account.PLDTerm{Kind: account.PLDSubsampledGaussian, SampleRate: 0.01, NoiseMultiplier: 1.1 + 1e-9*float64(i), Count: 1000})
		if err != nil {
			b.Fatal(err)
		}
		l := mustNew(b, account.Budget{Epsilon: 100, Delta: 1e-5})
		for _, loss := range []account.Loss{run, run, run, lap(0.01)} {
			if _, err := l.Record(ledger.Charge{Groups: one("g"), Loss: loss}); err != nil {
				b.Fatal(err)
			}
		}
		if s := l.Summary(); len(s) != 1 || !(s[0].Epsilon > 0) {
			b.Fatalf("summary %+v", s)
		}
	}
}
