package account

import (
	"encoding/binary"
	"math"
	"sync"
)

// sgMemo keeps the losses SubsampledGaussian and SubsampledGaussianReplace
// (scheduleLoss) have computed, by mechanism and schedule. The pool loop
// (active/pool) reads each phase's loss for the plan, for every group's
// ledger charge and again in dpsgd's own charge, and an end-to-end audit
// repeats the whole run thousands of times: without the memo the
// add/remove fractional-order series (logAFrac) was ~90 % of a small
// run's time, and RDPCurve's checks of the curve much of the rest. A
// stored loss has no Params and is never handed out itself: each call
// gets its own copy of the curve. At most sgMemoSize schedules are kept;
// a full memo is dropped whole (the calibrators, which sweep σ or q, read
// the curves directly and never reach it; the pool planner's report does,
// once per candidate plan).
type sgMemo struct {
	mu     sync.Mutex
	losses map[string]Loss
}

// sgMemoSize bounds the schedules kept (two slices of 151 floats each: ~2.4 KB).
const sgMemoSize = 1024

var theSGMemo = sgMemo{losses: map[string]Loss{}}

// get returns the loss stored for key.
func (m *sgMemo) get(key string) (Loss, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l, ok := m.losses[key]
	return l, ok
}

// put stores l under key, dropping every loss first if the memo is full.
func (m *sgMemo) put(key string, l Loss) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.losses) >= sgMemoSize {
		clear(m.losses)
	}
	m.losses[key] = l
}

// scheduleKey names a mechanism's schedule exactly: the mechanism, then
// each phase's rate, noise multiplier (as bits) and steps, in order.
func scheduleKey(mechanism string, phases []Phase) string {
	b := make([]byte, 0, len(mechanism)+1+24*len(phases))
	b = append(append(b, mechanism...), 0)
	for _, p := range phases {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(p.SampleRate))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(p.NoiseMultiplier))
		b = binary.LittleEndian.AppendUint64(b, uint64(p.Steps))
	}
	return string(b)
}
