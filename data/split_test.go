package data

import (
	"math"
	"slices"
	"testing"
)

func TestPermutation(t *testing.T) {
	p := Permutation(1000, 7)
	if !slices.Equal(p, Permutation(1000, 7)) {
		t.Fatal("same seed, different permutation")
	}
	if slices.Equal(p, Permutation(1000, 8)) {
		t.Fatal("different seeds, same permutation")
	}
	s := slices.Sorted(slices.Values(p))
	for i, v := range s {
		if v != i {
			t.Fatalf("not a permutation of 0..999: %v at %d", v, i)
		}
	}
	if len(Permutation(0, 1)) != 0 {
		t.Fatal("n = 0")
	}
}

func TestSplitTrainTest(t *testing.T) {
	tests := []struct {
		n              int
		frac           float64
		wantTr, wantTe int
	}{
		{100, 0.2, 80, 20},
		{10, 0, 10, 0},
		{10, 1, 0, 10},
		{7, 0.5, 3, 4}, // round(3.5) = 4
		{0, 0.3, 0, 0},
	}
	for _, tc := range tests {
		tr, te, err := SplitTrainTest(tc.n, tc.frac, 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(tr) != tc.wantTr || len(te) != tc.wantTe {
			t.Errorf("n=%d frac=%v: sizes %d/%d, want %d/%d", tc.n, tc.frac, len(tr), len(te), tc.wantTr, tc.wantTe)
		}
		all := slices.Sorted(slices.Values(append(slices.Clone(tr), te...)))
		for i, v := range all {
			if v != i {
				t.Fatalf("n=%d: parts do not partition 0..n-1", tc.n)
			}
		}
		if !slices.IsSorted(tr) || !slices.IsSorted(te) {
			t.Errorf("parts not sorted")
		}
		tr2, te2, _ := SplitTrainTest(tc.n, tc.frac, 3)
		if !slices.Equal(tr, tr2) || !slices.Equal(te, te2) {
			t.Errorf("not deterministic")
		}
	}
}

func TestSplitTrainTestBadArguments(t *testing.T) {
	for _, tc := range []struct {
		n    int
		frac float64
	}{{10, -0.1}, {10, 1.1}, {10, math.NaN()}, {-1, 0.5}} {
		if _, _, err := SplitTrainTest(tc.n, tc.frac, 1); err == nil {
			t.Errorf("SplitTrainTest(%d, %v): no error", tc.n, tc.frac)
		}
	}
}
