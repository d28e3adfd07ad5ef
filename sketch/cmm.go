package sketch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"

	metro "github.com/dgryski/go-metro"
)

// mersenne61 is the prime 2^61 − 1 of the hash family.
const mersenne61 = 1<<61 - 1

// CMM is a Count-Min sketch of d rows × w counters with optional
// conservative update (Goyal, Daumé & Cormode 2012: raise only the
// counters at the current minimum) and the Count-Mean-Min estimate (Deng &
// Rafiei 2007: subtract each row's expected collision noise, take the
// median, never exceed the Count-Min value).
//
// Row i hashes a key's 64-bit fingerprint x (metro hash, fixed seed, so
// sketches built in different processes agree) by h_i(x) = ((a_i·x + b_i)
// mod (2^61 − 1)) mod w, a pairwise-independent family (Carter & Wegman
// 1979). Counters are uint32 and saturate instead of wrapping, so a
// counter never falls below the true count it bounds.
//
// Guarantees (Cormode & Muthukrishnan 2005, Thm 1; conservative update
// keeps them, Goyal et al. §2.2): for every key, Min ≥ true count, and with
// w = ⌈e/ε⌉, d = ⌈ln(1/δ)⌉, Min ≤ true + ε·N with probability ≥ 1 − δ, N
// the total count added.
type CMM struct {
	d, w         int
	mask         uint64
	conservative bool
	a, b         []uint64
	counts       []uint32 // row-major, d·w
	rowSum       []uint64
	total        uint64
	idx          []int // scratch for one key's cells while adding
}

// NewCMM returns an empty sketch with d ≥ 1 rows of w counters (w a power
// of two, ≥ 2), hash parameters drawn from seed (sketches merge only when
// d, w, seed and the update rule agree).
func NewCMM(d, w int, seed uint64, conservative bool) (*CMM, error) {
	if d < 1 || d > 64 {
		return nil, fmt.Errorf("count-mean-min: rows d must be in [1, 64], got %d", d)
	}
	if w < 2 || w > 1<<30 || w&(w-1) != 0 {
		return nil, fmt.Errorf("count-mean-min: width w must be a power of two in [2, 2^30], got %d", w)
	}
	s := &CMM{d: d, w: w, mask: uint64(w - 1), conservative: conservative,
		a: make([]uint64, d), b: make([]uint64, d), counts: make([]uint32, d*w),
		rowSum: make([]uint64, d), idx: make([]int, d)}
	// SplitMix64 spreads the seed into the hash parameters; a ∈ [1, p),
	// b ∈ [0, p).
	x := seed
	next := func() uint64 {
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		return z ^ z>>31
	}
	for i := range d {
		s.a[i] = 1 + next()%(mersenne61-1)
		s.b[i] = next() % mersenne61
	}
	return s, nil
}

// NewCMMFor returns a sketch sized for the Count-Min bound: estimates
// exceed the truth by more than eps·N with probability at most delta
// (w = ⌈e/eps⌉ rounded up to a power of two, d = ⌈ln(1/delta)⌉).
func NewCMMFor(eps, delta float64, seed uint64, conservative bool) (*CMM, error) {
	if !(eps > 0 && eps < 1) || !(delta > 0 && delta < 1) {
		return nil, fmt.Errorf("count-mean-min: need 0 < eps, delta < 1, got %v, %v", eps, delta)
	}
	w := 1 << bits.Len(uint(math.Ceil(math.E/eps))-1)
	d := int(math.Ceil(math.Log(1 / delta)))
	return NewCMM(max(d, 1), max(w, 2), seed, conservative)
}

// Rows returns d; Width returns w.
func (s *CMM) Rows() int { return s.d }

// Width returns w.
func (s *CMM) Width() int { return s.w }

// Total returns N, the total count added.
func (s *CMM) Total() uint64 { return s.total }

// Bytes returns the memory held by the counters.
func (s *CMM) Bytes() int { return 4 * len(s.counts) }

// Fingerprint returns the 64-bit key hash every row starts from.
func Fingerprint(key string) uint64 { return metro.Hash64Str(key, 0x5ca1ab1e) }

// cells writes the key's counter index in each row into idx (len d).
func (s *CMM) cells(x uint64, idx []int) {
	x %= mersenne61
	for i := range s.d {
		hi, lo := bits.Mul64(s.a[i], x)
		// (hi·2^64 + lo) mod (2^61 − 1), using 2^61 ≡ 1 and hi < 2^58.
		v := (lo & mersenne61) + (lo >> 61) + hi<<3
		v += s.b[i]
		v = (v & mersenne61) + (v >> 61)
		v = (v & mersenne61) + (v >> 61)
		if v >= mersenne61 {
			v -= mersenne61
		}
		idx[i] = i*s.w + int(v&s.mask)
	}
}

// Add counts one occurrence of key.
func (s *CMM) Add(key string) { s.AddHash(Fingerprint(key), 1) }

// AddHash counts c occurrences of the key with fingerprint x.
func (s *CMM) AddHash(x uint64, c uint32) {
	s.cells(x, s.idx)
	s.total += uint64(c)
	if !s.conservative {
		for i, j := range s.idx {
			s.counts[j] = satAdd(s.counts[j], c)
			s.rowSum[i] += uint64(c)
		}
		return
	}
	m := s.minAt(s.idx)
	target := satAdd(m, c)
	for i, j := range s.idx {
		if s.counts[j] < target {
			s.rowSum[i] += uint64(target - s.counts[j])
			s.counts[j] = target
		}
	}
}

func satAdd(a, b uint32) uint32 {
	if a > math.MaxUint32-b {
		return math.MaxUint32
	}
	return a + b
}

func (s *CMM) minAt(idx []int) uint32 {
	m := uint32(math.MaxUint32)
	for _, j := range idx {
		m = min(m, s.counts[j])
	}
	return m
}

// Min returns the Count-Min estimate of key's count: never below the true
// count (with or without conservative update).
func (s *CMM) Min(key string) uint64 { return s.MinHash(Fingerprint(key)) }

// MinHash is Min by fingerprint. Queries (Min, MinHash, Estimate) only
// read the sketch, so they are safe for concurrent use.
func (s *CMM) MinHash(x uint64) uint64 {
	var buf [64]int
	idx := buf[:s.d]
	s.cells(x, idx)
	return uint64(s.minAt(idx))
}

// Estimate returns the Count-Mean-Min estimate: in each row the counter
// minus the row's mean noise, (rowSum − counter)/(w − 1), then the median
// over rows, clamped to [0, Min]. It is the better point estimate on
// skewed streams but may fall below the true count, so it must never
// decide a threshold (see Threshold).
func (s *CMM) Estimate(key string) float64 {
	var buf [64]int
	idx := buf[:s.d]
	s.cells(Fingerprint(key), idx)
	v := make([]float64, s.d)
	m := math.Inf(1)
	for i, j := range idx {
		c := float64(s.counts[j])
		m = math.Min(m, c)
		v[i] = c - (float64(s.rowSum[i])-c)/float64(s.w-1)
	}
	slices.Sort(v)
	med := v[s.d/2]
	if s.d%2 == 0 {
		med = (v[s.d/2-1] + v[s.d/2]) / 2
	}
	return math.Max(0, math.Min(med, m))
}

// Merge adds other's counters into s. Without conservative update the
// result is exactly the sketch of the concatenated inputs. With it the
// result differs from the concatenation's (conservative update depends on
// order; single counters may be lower or higher), but Min still never
// under-estimates: min_i(A_i + B_i) ≥ min_i A_i + min_i B_i ≥ the true
// count. Sketches must share d, w, seed and update rule.
func (s *CMM) Merge(other *CMM) error {
	if other == nil {
		return errors.New("count-mean-min merge: nil sketch")
	}
	if s.d != other.d || s.w != other.w || s.conservative != other.conservative || !slices.Equal(s.a, other.a) || !slices.Equal(s.b, other.b) {
		return errors.New("count-mean-min merge: sketches differ in shape, seed or update rule")
	}
	for j, c := range other.counts {
		s.counts[j] = satAdd(s.counts[j], c)
	}
	for i, r := range other.rowSum {
		s.rowSum[i] += r
	}
	s.total += other.total
	return nil
}

// cmmMagic starts an encoded sketch.
const cmmMagic = "CMM1"

// MarshalBinary encodes the sketch (shape, update rule, hash parameters,
// counters, row sums, total) for moving it between workers of one
// trusted pipeline. An encoded sketch is as sensitive as the log it
// summarises: it must never be released.
func (s *CMM) MarshalBinary() ([]byte, error) {
	b := make([]byte, 0, 4+8*4+16*s.d+8*s.d+4*len(s.counts))
	b = append(b, cmmMagic...)
	cu := uint64(0)
	if s.conservative {
		cu = 1
	}
	for _, v := range []uint64{uint64(s.d), uint64(s.w), cu, s.total} {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	for i := range s.d {
		b = binary.LittleEndian.AppendUint64(b, s.a[i])
		b = binary.LittleEndian.AppendUint64(b, s.b[i])
		b = binary.LittleEndian.AppendUint64(b, s.rowSum[i])
	}
	for _, c := range s.counts {
		b = binary.LittleEndian.AppendUint32(b, c)
	}
	return b, nil
}

// UnmarshalBinary decodes a sketch written by MarshalBinary, checking its
// shape, lengths and hash parameters.
func (s *CMM) UnmarshalBinary(b []byte) error {
	if len(b) < 4+32 || string(b[:4]) != cmmMagic {
		return errors.New("count-mean-min decode: not an encoded sketch")
	}
	u64 := func(i int) uint64 { return binary.LittleEndian.Uint64(b[i:]) }
	d, w, cu, total := u64(4), u64(12), u64(20), u64(28)
	if d < 1 || d > 64 || w < 2 || w > 1<<30 || w&(w-1) != 0 || cu > 1 {
		return fmt.Errorf("count-mean-min decode: bad shape d=%d w=%d rule=%d", d, w, cu)
	}
	want := 36 + 24*int(d) + 4*int(d)*int(w)
	if len(b) != want {
		return fmt.Errorf("count-mean-min decode: %d bytes, want %d", len(b), want)
	}
	n := &CMM{d: int(d), w: int(w), mask: w - 1, conservative: cu == 1, total: total,
		a: make([]uint64, d), b: make([]uint64, d), rowSum: make([]uint64, d),
		counts: make([]uint32, int(d)*int(w)), idx: make([]int, d)}
	off := 36
	for i := range n.d {
		n.a[i], n.b[i], n.rowSum[i] = u64(off), u64(off+8), u64(off+16)
		if n.a[i] == 0 || n.a[i] >= mersenne61 || n.b[i] >= mersenne61 {
			return fmt.Errorf("count-mean-min decode: bad hash parameters in row %d", i)
		}
		off += 24
	}
	for j := range n.counts {
		n.counts[j] = binary.LittleEndian.Uint32(b[off:])
		off += 4
	}
	*s = *n
	return nil
}
