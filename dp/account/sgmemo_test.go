package account

import (
	"slices"
	"testing"
)

// TestSubsampledGaussianMemo: a memoized curve is the one ScheduleRDP
// (ScheduleRDPReplace) computes, each call gets its own copy (a caller
// editing its Loss does not reach the next one), schedules that differ in
// any field or mechanism differ in key, and the memo stays within its
// bound.
func TestSubsampledGaussianMemo(t *testing.T) {
	phases := []Phase{{SampleRate: 0.3, NoiseMultiplier: 1.7, Steps: 5}, {SampleRate: 0.25, NoiseMultiplier: 1.7, Steps: 3}}
	want, err := ScheduleRDP(phases, DefaultOrders())
	if err != nil {
		t.Fatal(err)
	}
	a, err := SubsampledGaussian(phases)
	if err != nil {
		t.Fatal(err)
	}
	a.RDP[0], a.Orders[0], a.Params["phases"] = -1, -1, -1
	b, err := SubsampledGaussian(phases)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(b.RDP, want) || !slices.Equal(b.Orders, DefaultOrders()) || b.Params["phases"] != 2 {
		t.Errorf("memoized curve %v (params %v), want %v", b.RDP[:3], b.Params, want[:3])
	}
	for _, other := range [][]Phase{
		{{SampleRate: 0.3, NoiseMultiplier: 1.7, Steps: 5}},
		{{SampleRate: 0.3, NoiseMultiplier: 1.7, Steps: 5}, {SampleRate: 0.25, NoiseMultiplier: 1.7, Steps: 4}},
		{{SampleRate: 0.3, NoiseMultiplier: 1.7, Steps: 5}, {SampleRate: 0.25, NoiseMultiplier: 1.8, Steps: 3}},
		{{SampleRate: 0.3, NoiseMultiplier: 1.7, Steps: 5}, {SampleRate: 0.26, NoiseMultiplier: 1.7, Steps: 3}},
	} {
		if scheduleKey("m", other) == scheduleKey("m", phases) {
			t.Errorf("schedules %v and %v share a key", other, phases)
		}
	}
	if scheduleKey("subsampled-gaussian", phases) == scheduleKey("subsampled-gaussian-replace", phases) {
		t.Error("add/remove and replace-one share a key")
	}
	r, err := SubsampledGaussianReplace(phases)
	if err != nil {
		t.Fatal(err)
	}
	if wantR, err := ScheduleRDPReplace(phases, DefaultOrders()); err != nil || !slices.Equal(r.RDP, wantR) {
		t.Errorf("replace-one curve %v, want %v (%v)", r.RDP[:3], wantR[:3], err)
	}
	for i := range sgMemoSize + 10 {
		if _, err := SubsampledGaussian([]Phase{{SampleRate: 1, NoiseMultiplier: 1 + float64(i), Steps: 1}}); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(theSGMemo.losses); n > sgMemoSize {
		t.Errorf("memo holds %d curves, bound %d", n, sgMemoSize)
	}
}
