package sketch

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// zipfStream returns n keys drawn from a Zipf law (exponent s over
// `distinct` keys) and their true counts.
func zipfStream(n int, s float64, distinct uint64, seed uint64) ([]string, map[string]uint64) {
	r := rand.New(rand.NewPCG(seed, 1))
	z := rand.NewZipf(r, s, 1, distinct-1)
	keys := make([]string, n)
	truth := make(map[string]uint64)
	for i := range keys {
		keys[i] = "q" + strconv.FormatUint(z.Uint64(), 10)
		truth[keys[i]]++
	}
	return keys, truth
}

func build(t testing.TB, d, w int, cu bool, keys []string) *CMM {
	t.Helper()
	s, err := NewCMM(d, w, 7, cu)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		s.Add(k)
	}
	return s
}

func TestCMMNeverUnderEstimates(t *testing.T) {
	keys, truth := zipfStream(50_000, 1.1, 20_000, 1)
	for _, c := range []struct {
		name string
		w    int
		cu   bool
	}{{"plain-w64", 64, false}, {"conservative-w64", 64, true}, {"conservative-w4096", 4096, true}} {
		t.Run(c.name, func(t *testing.T) {
			s := build(t, 4, c.w, c.cu, keys)
			for k, n := range truth {
				if s.Min(k) < n {
					t.Fatalf("%s: Min %d below true count %d", k, s.Min(k), n)
				}
			}
		})
	}
}

// TestCMMErrorBound checks the Count-Min bound at the sizes NewCMMFor
// picks: the share of keys over-estimated by more than eps·N is at most
// delta (with a binomial allowance), on Zipf streams of two skews.
func TestCMMErrorBound(t *testing.T) {
	const eps, delta = 0.002, 0.05
	for _, skew := range []float64{1.05, 1.5} {
		for _, cu := range []bool{false, true} {
			t.Run(fmt.Sprintf("zipf%v-cu%v", skew, cu), func(t *testing.T) {
				keys, truth := zipfStream(100_000, skew, 50_000, 2)
				s, err := NewCMMFor(eps, delta, 3, cu)
				if err != nil {
					t.Fatal(err)
				}
				for _, k := range keys {
					s.Add(k)
				}
				bound := eps * float64(s.Total())
				bad := 0
				for k, n := range truth {
					if float64(s.Min(k)-n) > bound {
						bad++
					}
				}
				allow := delta*float64(len(truth)) + 3*math.Sqrt(delta*float64(len(truth)))
				if float64(bad) > allow {
					t.Fatalf("%d of %d keys over-estimated by more than %v (allowed %v)", bad, len(truth), bound, allow)
				}
			})
		}
	}
}

// TestCMMConservativeTighter checks why the paper uses conservative
// update and the mean-min correction: on a skewed stream both lower the
// total over-estimate of Count-Min.
func TestCMMConservativeTighter(t *testing.T) {
	keys, truth := zipfStream(100_000, 1.1, 50_000, 4)
	plain, cu := build(t, 4, 1024, false, keys), build(t, 4, 1024, true, keys)
	var ePlain, eCU, eMean float64
	for k, n := range truth {
		ePlain += float64(plain.Min(k) - n)
		eCU += float64(cu.Min(k) - n)
		eMean += math.Abs(plain.Estimate(k) - float64(n))
	}
	if !(eCU < ePlain && eMean < ePlain) {
		t.Fatalf("total error: count-min %v, conservative %v, count-mean-min %v", ePlain, eCU, eMean)
	}
}

func TestCMMMerge(t *testing.T) {
	keys, truth := zipfStream(40_000, 1.2, 10_000, 5)
	a, b := keys[:15_000], keys[15_000:]
	t.Run("plain-equals-concatenation", func(t *testing.T) {
		m, whole := build(t, 4, 256, false, a), build(t, 4, 256, false, keys)
		if err := m.Merge(build(t, 4, 256, false, b)); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(m.counts, whole.counts) || !slices.Equal(m.rowSum, whole.rowSum) || m.total != whole.total {
			t.Fatal("merged sketch differs from the sketch of the concatenation")
		}
	})
	t.Run("conservative-never-under-estimates", func(t *testing.T) {
		m := build(t, 4, 256, true, a)
		if err := m.Merge(build(t, 4, 256, true, b)); err != nil {
			t.Fatal(err)
		}
		for k, n := range truth {
			if m.Min(k) < n {
				t.Fatalf("merged Min under-estimates %s", k)
			}
		}
	})
	t.Run("mismatch", func(t *testing.T) {
		x, _ := NewCMM(4, 256, 1, true)
		for _, y := range []func() (*CMM, error){
			func() (*CMM, error) { return NewCMM(3, 256, 1, true) },
			func() (*CMM, error) { return NewCMM(4, 512, 1, true) },
			func() (*CMM, error) { return NewCMM(4, 256, 2, true) },
			func() (*CMM, error) { return NewCMM(4, 256, 1, false) },
		} {
			o, _ := y()
			if x.Merge(o) == nil {
				t.Error("mismatched merge accepted")
			}
		}
		if x.Merge(nil) == nil {
			t.Error("nil merge accepted")
		}
	})
}

// TestSurvivorsExact checks the threshold rule: even a sketch so narrow
// that most keys collide keeps exactly the keys whose true count is ≥ k.
func TestSurvivorsExact(t *testing.T) {
	keys, truth := zipfStream(30_000, 1.1, 10_000, 6)
	for _, w := range []int{8, 1 << 12} {
		for _, k := range []uint64{1, 5, 20, 100} {
			t.Run(fmt.Sprintf("w%d-k%d", w, k), func(t *testing.T) {
				s := build(t, 4, w, true, keys)
				got := Survivors(s, k, slices.Values(keys))
				want := 0
				for key, n := range truth {
					if n >= k {
						want++
						if got[key] != n {
							t.Fatalf("%s: kept count %d, true %d", key, got[key], n)
						}
					}
				}
				if len(got) != want {
					t.Fatalf("kept %d keys, want %d", len(got), want)
				}
			})
		}
	}
}

func TestCMMArgs(t *testing.T) {
	for _, c := range [][2]int{{0, 16}, {65, 16}, {4, 1}, {4, 100}, {4, 0}} {
		if _, err := NewCMM(c[0], c[1], 0, true); err == nil {
			t.Errorf("d=%d w=%d accepted", c[0], c[1])
		}
	}
	for _, c := range [][2]float64{{0, 0.1}, {0.1, 0}, {1, 0.5}, {math.NaN(), 0.1}} {
		if _, err := NewCMMFor(c[0], c[1], 0, true); err == nil {
			t.Errorf("eps=%v delta=%v accepted", c[0], c[1])
		}
	}
	s, err := NewCMMFor(0.001, 0.02, 0, true)
	if err != nil || s.Width() != 4096 || s.Rows() != 4 {
		t.Fatalf("NewCMMFor(0.001, 0.02): %v, w=%d d=%d", err, s.Width(), s.Rows())
	}
}

func TestCMMSaturates(t *testing.T) {
	s, _ := NewCMM(2, 2, 0, false)
	s.AddHash(1, math.MaxUint32-1)
	s.AddHash(1, 5)
	if s.MinHash(1) != math.MaxUint32 {
		t.Fatalf("counter %d, want saturation at %d", s.MinHash(1), uint32(math.MaxUint32))
	}
}

func TestHLL(t *testing.T) {
	a, err := NewHLL(14)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewHLL(14)
	const n = 200_000
	for i := range n {
		key := "query " + strconv.Itoa(i)
		if i%2 == 0 {
			a.Insert(key)
		} else {
			b.Insert(key)
		}
		a.Insert("query 0") // repeats do not count
	}
	if err := a.Merge(b); err != nil {
		t.Fatal(err)
	}
	rel := math.Abs(float64(a.Estimate())-n) / n
	if se := 1.04 / math.Sqrt(1<<14); rel > 4*se {
		t.Fatalf("estimate %d of %d: relative error %v above 4 standard errors (%v)", a.Estimate(), n, rel, 4*se)
	}
	if _, err := NewHLL(2); err == nil {
		t.Error("precision 2 accepted")
	}
	if a.Merge(nil) == nil {
		t.Error("nil merge accepted")
	}
}

func FuzzCMMAdd(f *testing.F) {
	f.Add("what time is it", uint32(3), uint8(4), uint8(6))
	f.Fuzz(func(t *testing.T, key string, c uint32, d, logW uint8) {
		s, err := NewCMM(int(d%8), 1<<(logW%12), 1, c%2 == 0)
		if err != nil {
			return
		}
		s.AddHash(Fingerprint(key), c)
		if s.Min(key) != uint64(c) || s.Estimate(key) > float64(c) {
			t.Fatalf("single key %q count %d: Min %d Estimate %v", key, c, s.Min(key), s.Estimate(key))
		}
	})
}

func TestCMMBinaryRoundTrip(t *testing.T) {
	keys, truth := zipfStream(5_000, 1.2, 1_000, 8)
	for _, cu := range []bool{false, true} {
		s := build(t, 3, 128, cu, keys)
		b, err := s.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var got CMM
		if err := got.UnmarshalBinary(b); err != nil {
			t.Fatal(err)
		}
		for k := range truth {
			if got.Min(k) != s.Min(k) || got.Estimate(k) != s.Estimate(k) {
				t.Fatalf("decoded sketch answers %s differently", k)
			}
		}
		if err := got.Merge(s); err != nil {
			t.Fatalf("decoded sketch does not merge with its source: %v", err)
		}
	}
	var x CMM
	for _, bad := range [][]byte{nil, []byte("CMM1"), []byte("XXXX" + string(make([]byte, 40)))} {
		if x.UnmarshalBinary(bad) == nil {
			t.Errorf("decoded %q", bad)
		}
	}
}

func FuzzCMMUnmarshal(f *testing.F) {
	s, _ := NewCMM(2, 4, 1, true)
	s.Add("x")
	good, _ := s.MarshalBinary()
	f.Add(good)
	f.Add([]byte("CMM1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var x CMM
		if x.UnmarshalBinary(b) != nil {
			return
		}
		again, err := x.MarshalBinary()
		if err != nil || !slices.Equal(again, b) {
			t.Fatalf("re-encoding differs")
		}
		x.Add("query")
		_ = x.Estimate("query")
	})
}

func TestWidthFor(t *testing.T) {
	for _, c := range []struct {
		n    uint64
		want int
	}{{0, 64}, {10, 64}, {32, 64}, {33, 128}, {5000, 16384}, {1 << 40, 1 << 24}} {
		if got := WidthFor(c.n); got != c.want {
			t.Errorf("WidthFor(%d) = %d, want %d", c.n, got, c.want)
		}
	}
}

// TestShardsMergeToSinglePass is what a distributed pipeline relies on
// (beam/kanonbeam): sketches built per shard and merged answer as the
// sketch of one pass does. HyperLogLog and plain Count-Min merge to
// exactly the single-pass sketch; with conservative update the counters
// may differ, but the k-threshold it pre-filters (Survivors) keeps exactly
// the same set.
func TestShardsMergeToSinglePass(t *testing.T) {
	keys, _ := zipfStream(30_000, 1.1, 8_000, 11)
	const shards = 4
	one, _ := NewHLL(14)
	parts := make([]*HLL, shards)
	for i := range parts {
		parts[i], _ = NewHLL(14)
	}
	for i, k := range keys {
		one.Insert(k)
		parts[i%shards].Insert(k)
	}
	for _, p := range parts[1:] {
		if err := parts[0].Merge(p); err != nil {
			t.Fatal(err)
		}
	}
	if parts[0].Estimate() != one.Estimate() {
		t.Fatalf("merged HyperLogLog estimates %d, single pass %d", parts[0].Estimate(), one.Estimate())
	}
	for _, cu := range []bool{false, true} {
		whole := build(t, 4, 512, cu, keys)
		merged := build(t, 4, 512, cu, nil)
		for s := range shards {
			var shard []string
			for i := s; i < len(keys); i += shards {
				shard = append(shard, keys[i])
			}
			if err := merged.Merge(build(t, 4, 512, cu, shard)); err != nil {
				t.Fatal(err)
			}
		}
		if !cu && (!slices.Equal(merged.counts, whole.counts) || merged.total != whole.total) {
			t.Fatal("merged plain Count-Min differs from the single-pass sketch")
		}
		for _, k := range []uint64{2, 10, 50} {
			a, b := Survivors(merged, k, slices.Values(keys)), Survivors(whole, k, slices.Values(keys))
			if !maps.Equal(a, b) {
				t.Fatalf("conservative=%v k=%d: merged sketch keeps %d queries, single pass %d", cu, k, len(a), len(b))
			}
		}
	}
}
