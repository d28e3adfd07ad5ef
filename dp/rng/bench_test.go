package rng

import (
	"runtime"
	"testing"

	"github.com/dpal-dev/dpal/dp/internal/cputime"
)

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

// BenchmarkBulkRoutes is the cost per word of the bulk source's keystream
// on each route, crypto/aes's and VAES where the CPU has it, in one run:
// Fill over a buffer of keystream at a time, rekeys included. It reports
// the thread's CPU ns per word beside the wall's.
func BenchmarkBulkRoutes(b *testing.B) {
	for _, vaes := range []bool{false, true} {
		if vaes && !vaesOK {
			continue
		}
		name := map[bool]string{false: "crypto-aes", true: "vaes"}[vaes]
		b.Run(name, func(b *testing.B) { benchWords(b, newAESSourceRoute([32]byte{1}, vaes)) })
	}
}

// benchWords times Fill of a buffer of s's keystream per op and reports
// the wall and the thread's CPU ns per word.
func benchWords(b *testing.B, s *aesSource) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dst := make([]uint64, aesBufWords)
	cpu0 := cputime.Thread()
	for b.Loop() {
		s.fill(dst)
	}
	words := float64(b.N * len(dst))
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/words, "ns/word")
	if cpu1 := cputime.Thread(); cpu0 >= 0 && cpu1 >= 0 {
		b.ReportMetric(float64(cpu1-cpu0)/words, "cpu-ns/word")
	}
}
