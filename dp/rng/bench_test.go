package rng

import "testing"

var sink uint64

// BenchmarkUint64 is the cost of one random word, the unit the samplers in
// dp/mech spend.
func BenchmarkUint64(b *testing.B) {
	for _, c := range []struct {
		name string
		r    *Rand
	}{{"seeded", Seeded(1)}, {"secure", Secure()}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				sink += c.r.Uint64()
			}
		})
	}
}
