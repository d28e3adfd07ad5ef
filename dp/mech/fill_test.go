package mech

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dpal-dev/dpal/dp/rng"
)

// withFillAVX runs f with fill's AVX-512 route on (if the CPU has it) or off.
func withFillAVX(on bool, f func()) {
	old := fillAVX
	fillAVX = on && old
	defer func() { fillAVX = old }()
	f()
}

// fillRun is one sequence of fill calls on one queue and bit buffer: the
// values written, and the state left behind.
type fillRun struct {
	out  []float64
	q    wordQueue
	bw   uint64
	bn   uint
	next uint64 // the source's next word
}

// runFill cuts out into chunks of the given lengths and fills them in turn
// (op as in fillVector; fillRound on the scalar route is AddTo's former
// two passes, rounding then adding).
func runFill(g *tableGauss, seed uint64, init []float64, lengths []int, op int, grid float64) fillRun {
	out := append([]float64(nil), init...)
	b, q := bitbuf{r: rng.Seeded(seed).Bulk()}, newWordQueue()
	lo := 0
	for _, n := range lengths {
		dst := out[lo : lo+n]
		lo += n
		switch {
		case op == fillRound && fillAVX && g.oneWord:
			g.fillVector(&b, q, dst, 0.5, fillRound, grid)
		case op == fillRound:
			for i, x := range dst {
				dst[i] = grid * math.Round(x/grid)
			}
			g.fill(&b, q, dst, 0.5, true)
		default:
			g.fill(&b, q, dst, 0.5, op == fillAdd)
		}
	}
	return fillRun{out: out, q: *q, bw: b.w, bn: b.n, next: b.r.Uint64()}
}

// compareRoutes runs the same calls on both routes and reports the first
// difference in the values or the state left behind.
func compareRoutes(t *testing.T, name string, g *tableGauss, seed uint64, init []float64, lengths []int, op int, grid float64) {
	t.Helper()
	var scalar, vector fillRun
	withFillAVX(false, func() { scalar = runFill(g, seed, init, lengths, op, grid) })
	withFillAVX(true, func() { vector = runFill(g, seed, init, lengths, op, grid) })
	for i := range scalar.out {
		if math.Float64bits(scalar.out[i]) != math.Float64bits(vector.out[i]) {
			t.Fatalf("%s: value %d: vector %v, scalar %v (lengths %v)", name, i, vector.out[i], scalar.out[i], lengths)
		}
	}
	if scalar.q != vector.q || scalar.bw != vector.bw || scalar.bn != vector.bn || scalar.next != vector.next {
		t.Fatalf("%s: state differs: queue at %d vs %d, bits %d/%d vs %d/%d, next word %#x vs %#x",
			name, vector.q.k, scalar.q.k, vector.bw, vector.bn, scalar.bw, scalar.bn, vector.next, scalar.next)
	}
}

// fillInit is a starting vector for the add modes: off-grid values of both
// signs, signed zeros, halves (rounding ties) and large values.
func fillInit(pick *rand.Rand, n int, grid float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		switch pick.IntN(6) {
		case 0:
			v[i] = math.Copysign(0, float64(pick.IntN(2)*2-1))
		case 1:
			v[i] = grid * (float64(pick.IntN(2001)-1000) + 0.5) // a tie
		case 2:
			v[i] = pick.NormFloat64() * 1e15 * grid
		default:
			v[i] = pick.NormFloat64() * 100 * grid
		}
	}
	return v
}

// fillSigma2 are the σ² of the route tests: W = 1 (small σ), wide
// blocks, and wBits > offsetBits (no fast path: both routes are
// sampleBits).
var fillSigma2 = [][2]uint64{{1, 4}, {1, 3}, {5, 2}, {30, 1}, {1640, 1}, {1 << 20, 3}, {2310000 * 2310000, 1},
	{1 << 46, 1}, {1 << 52, 1}, {1 << 60, 1}}

// fillVector gives fill's values, bit for bit, and leaves the queue, the
// bit buffer and the source where the scalar loop leaves them, for every
// chunking of the vector and every op.
func TestTableGaussFillVector(t *testing.T) {
	if !fillAVX {
		t.Log("no AVX-512 on this CPU: both routes are the Go loop")
	}
	pick := rand.New(rand.NewPCG(5, 6))
	ops := []struct {
		name string
		op   int
	}{{"set", fillSet}, {"add", fillAdd}, {"round", fillRound}}
	for _, nd := range fillSigma2 {
		g := mustTable(t, nd[0], nd[1])
		for _, o := range ops {
			for trial := range 4 {
				lengths := make([]int, 1+pick.IntN(6))
				total := 0
				for i := range lengths {
					lengths[i] = pick.IntN(3001)
					if pick.IntN(4) == 0 {
						lengths[i] = pick.IntN(9)
					}
					total += lengths[i]
				}
				grid := math.Ldexp(1, pick.IntN(41)-20)
				name := nd2name(nd) + "/" + o.name
				compareRoutes(t, name, g, uint64(trial)+nd[0], fillInit(pick, total, grid), lengths, o.op, grid)
			}
		}
	}
}

func nd2name(nd [2]uint64) string { return fmt.Sprintf("σ²=%d/%d", nd[0], nd[1]) }

// FuzzTableGaussFillVector compares the two routes of fill on random σ²,
// seeds, ops and chunk lengths.
func FuzzTableGaussFillVector(f *testing.F) {
	f.Add(uint64(1), uint64(4), uint64(1), uint8(0), uint16(100), uint16(7), uint16(3000))
	f.Add(uint64(2310000*2310000), uint64(1), uint64(2), uint8(1), uint16(0), uint16(1), uint16(257))
	f.Add(uint64(1<<20), uint64(3), uint64(3), uint8(2), uint16(8), uint16(9), uint16(255))
	f.Fuzz(func(t *testing.T, num, den, seed uint64, op uint8, l1, l2, l3 uint16) {
		if num == 0 || den == 0 || !tableSigma2Range(float64(num)/float64(den)) || float64(num)/float64(den) > 0x1p62 {
			return
		}
		g, err := newTableGauss(num, den)
		if err != nil {
			return
		}
		lengths := []int{int(l1 % 3001), int(l2 % 3001), int(l3 % 3001)}
		grid := 0.25
		init := fillInit(rand.New(rand.NewPCG(seed, 1)), lengths[0]+lengths[1]+lengths[2], grid)
		compareRoutes(t, nd2name([2]uint64{num, den}), g, seed, init, lengths, int(op%3), grid)
	})
}

// AddTo gives the same bits on both routes of fill (rounding in the
// kernel on AVX-512, in its own pass otherwise), for inputs with ties,
// signed zeros and values near the grid's range.
func TestGaussianVectorAddToRoutes(t *testing.T) {
	pick := rand.New(rand.NewPCG(7, 8))
	for _, d := range []int{3, bulkMinDim, 5000} {
		m, err := NewGaussianVector(1.1, 1, d)
		if err != nil {
			t.Fatal(err)
		}
		in := fillInit(pick, d, m.g)
		in[0] = maxGridIndex * m.g
		in[d-1] = -maxGridIndex * m.g
		var out [2][]float64
		for k, on := range []bool{false, true} {
			out[k] = append([]float64(nil), in...)
			withFillAVX(on, func() {
				if err := m.AddTo(rng.Seeded(9), out[k]); err != nil {
					t.Fatal(err)
				}
			})
		}
		for i := range in {
			if math.Float64bits(out[0][i]) != math.Float64bits(out[1][i]) {
				t.Fatalf("d=%d: AddTo[%d] of %v: Go route %v, AVX-512 route %v", d, i, in[i], out[0][i], out[1][i])
			}
		}
	}
}

// The AVX-512 route decides the words at the edges of fastWord's
// decisions (fastWords: each bucket's alias threshold, each quarter's
// squeeze bounds, both signs) as the Go loop does: each block of them,
// put in the queue as if the source had drawn it, gives the same values
// and leaves the same state on both routes.
func TestTableGaussFillVectorEdges(t *testing.T) {
	if !fillAVX {
		t.Skip("no AVX-512 on this CPU: both routes are the Go loop")
	}
	pick := rand.New(rand.NewPCG(7, 8))
	for _, nd := range [][2]uint64{{30, 1}, {1 << 20, 3}, {2310000 * 2310000, 1}} {
		g := mustTable(t, nd[0], nd[1])
		words := fastWords(g, pick)
		for lo := 0; lo+wordBlock <= len(words); lo += wordBlock {
			run := func() (fillRun, []float64) {
				q := newWordQueue()
				copy(q.w[:], words[lo:lo+wordBlock])
				q.k = 0
				b := bitbuf{r: rng.Seeded(uint64(lo)).Bulk()}
				out := make([]float64, 200+lo%50)
				g.fill(&b, q, out, 0.5, false)
				return fillRun{q: *q, bw: b.w, bn: b.n, next: b.r.Uint64()}, out
			}
			var scalar, vector fillRun
			var sOut, vOut []float64
			withFillAVX(false, func() { scalar, sOut = run() })
			withFillAVX(true, func() { vector, vOut = run() })
			for i := range sOut {
				if math.Float64bits(sOut[i]) != math.Float64bits(vOut[i]) {
					t.Fatalf("%s block at %d: value %d: vector %v, scalar %v", nd2name(nd), lo, i, vOut[i], sOut[i])
				}
			}
			if scalar.q != vector.q || scalar.bw != vector.bw || scalar.bn != vector.bn || scalar.next != vector.next {
				t.Fatalf("%s block at %d: state differs: queue at %d vs %d", nd2name(nd), lo, vector.q.k, scalar.q.k)
			}
		}
	}
}
