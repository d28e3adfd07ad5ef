package f32

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestGather compares Gather with its Go definition on random runs of
// lengths 0 to 40 (whole groups of eight and tails), and checks that it
// refuses buffers shorter than the runs reach.
func TestGather(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	src := make([]float32, 500)
	for i := range src {
		src[i] = float32(r.NormFloat64())
	}
	var runs []Span
	dst := 0
	for range 60 {
		n := r.IntN(41)
		runs = append(runs, Span{Dst: dst, Src: r.IntN(len(src) - n + 1), N: n})
		dst += n + r.IntN(3)
	}
	for _, c := range []struct {
		name string
		runs []Span
	}{{"random", runs}, {"one", runs[:1]}, {"none", nil}} {
		t.Run(c.name, func(t *testing.T) {
			s := NewSpans(c.runs)
			got, want := make([]float32, dst), make([]float32, dst)
			s.Gather(got, src)
			gatherGo(want, src, c.runs)
			if !slices.Equal(got, want) {
				t.Errorf("Gather differs from the copies")
			}
		})
	}
	t.Run("short", func(t *testing.T) {
		defer func() {
			if recover() == nil {
				t.Errorf("Gather into a short dst did not panic")
			}
		}()
		s := NewSpans(runs)
		s.Gather(make([]float32, dst/2), src)
	})
}
