package rng

import "testing"

var sink uint64

// BenchmarkUint64 is the cost of one random word, the unit the samplers in
// dp/mech spend.
func BenchmarkUint64(b *testing.B) {
	for _, c := range []struct {
		name string
		r    *Rand
	}{{"seeded", Seeded(1)}, {"secure", Secure()}, {"bulk", Seeded(1).Bulk()}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				sink += c.r.Uint64()
			}
		})
	}
}

// BenchmarkFill is the cost per word of Fill on a bulk source.
func BenchmarkFill(b *testing.B) {
	r := Seeded(1).Bulk()
	dst := make([]uint64, 256)
	b.SetBytes(8 * 256)
	for b.Loop() {
		r.Fill(dst)
	}
}
