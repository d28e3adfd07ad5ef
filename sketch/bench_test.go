package sketch

import (
	"strconv"
	"testing"
)

// BenchmarkCMMAddHash measures adds per second per core at d = 4,
// w = 2^16 on pre-hashed keys (the sketch's own cost), and reports the
// counters' bytes per distinct key for 10^6 distinct keys.
func BenchmarkCMMAddHash(b *testing.B) {
	for _, cu := range []bool{false, true} {
		name := "plain"
		if cu {
			name = "conservative"
		}
		b.Run(name, func(b *testing.B) {
			s, _ := NewCMM(4, 1<<16, 1, cu)
			x := uint64(0x9e3779b97f4a7c15)
			for i := 0; b.Loop(); i++ {
				s.AddHash(x*uint64(i), 1)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/1e6, "Madds/s")
			b.ReportMetric(float64(s.Bytes())/1e6, "bytes/distinct@1e6")
		})
	}
}

// BenchmarkCMMAdd includes hashing a 30-byte query string.
func BenchmarkCMMAdd(b *testing.B) {
	s, _ := NewCMM(4, 1<<16, 1, true)
	keys := make([]string, 1024)
	for i := range keys {
		keys[i] = "set an alarm for seven " + strconv.Itoa(100000+i)
	}
	for i := 0; b.Loop(); i++ {
		s.Add(keys[i&1023])
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/1e6, "Madds/s")
}

// BenchmarkHLLInsert measures distinct-counter inserts and reports its
// serialised bytes per distinct key at 10^6 distinct keys.
func BenchmarkHLLInsert(b *testing.B) {
	h, _ := NewHLL(14)
	keys := make([]string, 1<<20)
	for i := range keys {
		keys[i] = "set an alarm for seven " + strconv.Itoa(i)
	}
	for i := 0; b.Loop(); i++ {
		h.Insert(keys[i&(1<<20-1)])
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/1e6, "Minserts/s")
	b.ReportMetric(float64(h.Bytes())/float64(min(b.N, 1<<20)), "bytes/distinct")
}
