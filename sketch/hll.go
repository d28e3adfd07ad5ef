package sketch

import (
	"errors"
	"fmt"

	"github.com/axiomhq/hyperloglog"
)

// Distinct counts distinct keys approximately. It is the small interface
// the pipeline needs; HLL implements it.
type Distinct interface {
	// Insert adds one key.
	Insert(key string)
	// Estimate returns the approximate number of distinct keys inserted.
	Estimate() uint64
}

// HLL is a HyperLogLog++ distinct counter (axiomhq/hyperloglog: sparse
// representation for small sets, 2^p six-bit registers otherwise; relative
// standard error about 1.04/√(2^p), 0.81% at p = 14).
type HLL struct {
	s *hyperloglog.Sketch
}

var _ Distinct = (*HLL)(nil)

// NewHLL returns an empty HyperLogLog with 2^precision registers,
// 4 ≤ precision ≤ 18.
func NewHLL(precision uint8) (*HLL, error) {
	s, err := hyperloglog.NewSketch(precision, true)
	if err != nil {
		return nil, fmt.Errorf("hyperloglog precision %d: %w", precision, err)
	}
	return &HLL{s: s}, nil
}

// Insert adds key.
func (h *HLL) Insert(key string) { h.s.Insert([]byte(key)) }

// Estimate returns the approximate distinct count.
func (h *HLL) Estimate() uint64 { return h.s.Estimate() }

// Merge folds other (same precision) into h: the result is the sketch of
// the union of both inputs.
func (h *HLL) Merge(other *HLL) error {
	if other == nil {
		return errors.New("hyperloglog merge: nil sketch")
	}
	return h.s.Merge(other.s)
}

// Bytes returns the size of the sketch's serialised state.
func (h *HLL) Bytes() int {
	b, err := h.s.MarshalBinary()
	if err != nil {
		return 0
	}
	return len(b)
}

// WidthFor returns a Count-Mean-Min width for a stream with about distinct
// keys (a HyperLogLog estimate, as the paper sizes its structures by n̂):
// the power of two at or above 2·distinct, so each row holds about half a
// key per counter, within [64, 2^24].
func WidthFor(distinct uint64) int {
	w := 64
	for w < 1<<24 && uint64(w) < 2*distinct {
		w <<= 1
	}
	return w
}
