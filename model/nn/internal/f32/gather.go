package f32

// Span is one run of a Gather: N floats from src[Src:] to dst[Dst:].
type Span struct{ Dst, Src, N int }

// Spans is a fixed list of runs, with how far into dst and src they
// reach, checked once per Gather rather than once per run.
type Spans struct {
	runs           []Span
	dstLen, srcLen int
}

// NewSpans returns the runs as Spans (each N ≥ 0, Dst and Src ≥ 0).
func NewSpans(runs []Span) Spans {
	s := Spans{runs: runs}
	for _, r := range runs {
		if r.N < 0 || r.Dst < 0 || r.Src < 0 {
			panic("f32: negative span")
		}
		s.dstLen, s.srcLen = max(s.dstLen, r.Dst+r.N), max(s.srcLen, r.Src+r.N)
	}
	return s
}

// Runs returns the runs, in order.
func (s *Spans) Runs() []Span { return s.runs }

// Gather copies each run from src to dst, in order (im2col's copies: many
// runs of a few floats, where a copy call per run costs more than the
// copying). It panics if dst or src is shorter than the runs reach. Where
// the CPU has AVX2 (and not under purego) one assembly loop does all the
// runs, eight floats per move.
func (s *Spans) Gather(dst, src []float32) {
	dst, src = dst[:s.dstLen], src[:s.srcLen]
	if poolSIMD && len(s.runs) > 0 && s.dstLen > 0 && s.srcLen > 0 {
		gatherAVX2(&dst[0], &src[0], &s.runs[0], len(s.runs))
		return
	}
	gatherGo(dst, src, s.runs)
}

// gatherGo is Gather's definition.
func gatherGo(dst, src []float32, runs []Span) {
	for _, r := range runs {
		copy(dst[r.Dst:r.Dst+r.N], src[r.Src:r.Src+r.N])
	}
}
