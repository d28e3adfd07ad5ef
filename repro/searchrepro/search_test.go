package searchrepro

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/dpal-dev/dpal/data"
	"github.com/dpal-dev/dpal/dp/rng"
)

func TestScores(t *testing.T) {
	raw := Scores([]float64{-2, 0, 3}, Raw)
	if raw[0] != 0 || raw[2] != 5 {
		t.Fatalf("raw %v", raw)
	}
	vals := make([]float64, 200)
	for i := range vals {
		vals[i] = float64(i % 2)
	}
	vals[100] = 50
	rob := Scores(vals, Robust)
	for i, x := range rob {
		if i != 100 && !(x < rob[100]) || x < 0 || math.IsNaN(x) {
			t.Fatalf("robust score %d = %v vs spike %v", i, x, rob[100])
		}
	}
}

func TestNewInstanceThresholds(t *testing.T) {
	in, ok, err := NewInstance("x", Raw, []float64{1, 5, 2, 9}, []bool{false, true, false, true})
	if err != nil || !ok || in.Star != 3 || in.XJ != 5 {
		t.Fatalf("%+v %v %v", in, ok, err)
	}
	// d = 4: t_ℓ = 5.4, t_h = 8.6, ratio = 3.2/5.4.
	if !(math.Abs(in.TLow-5.4) < 1e-12 && math.Abs(in.THigh-8.6) < 1e-12 && math.Abs(in.Ratio-3.2/5.4) < 1e-12) {
		t.Fatalf("thresholds %v %v ratio %v", in.TLow, in.THigh, in.Ratio)
	}
	if _, ok, _ := NewInstance("y", Raw, []float64{9, 5}, []bool{false, true}); ok {
		t.Fatal("a labelled anomaly below the maximum must not fit")
	}
	if pc := privacyCheck([]Instance{in}); pc.MaxXJRecoveryError > 1e-12 {
		t.Fatalf("x_j not recovered from the thresholds: %v", pc.MaxXJRecoveryError)
	}
}

func TestSyntheticRatio(t *testing.T) {
	r := rng.Seeded(1)
	for _, shape := range []string{Mixture, Skewed} {
		for _, ratio := range []float64{0.05, 0.647, 3} {
			in, err := Synthetic(shape, 500, ratio, r)
			if err != nil || math.Abs(in.Ratio-ratio) > 1e-9 {
				t.Fatalf("%s %v: %+v %v", shape, ratio, in.Ratio, err)
			}
		}
	}
	if _, err := Synthetic("flat", 10, 1, r); err == nil {
		t.Fatal("unknown shape accepted")
	}
}

func TestNABInstances(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "shared", "data")
	if _, err := os.Stat(filepath.Join(dir, "nab")); err != nil {
		t.Skip("NAB data not present")
	}
	series, err := data.LoadNAB(dir)
	if err != nil {
		t.Fatal(err)
	}
	fit, misfit := NABInstances(series, []ScoreKind{Raw, Robust})
	if len(fit) == 0 || len(misfit[Raw]) == 0 {
		t.Fatalf("%d fit, misfit %v", len(fit), misfit)
	}
	for _, in := range fit {
		if !(in.XStar > in.TLow && in.TLow < in.THigh) {
			t.Fatalf("%s: bad thresholds %+v", in.Name, in)
		}
	}
}

// TestRunSmoke runs every figure once per configuration without NAB.
func TestRunSmoke(t *testing.T) {
	cfg := DefaultConfig()
	cfg.DataDir, cfg.OutDir = t.TempDir(), t.TempDir()
	cfg.Runs, cfg.MaxQueries, cfg.Seed = 1, 100, 3
	sum, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if sum.NABNote == "" || len(sum.Fig1) != 2*len(fig1Ratios) || len(sum.Prop3) != len(prop3Sizes)+len(prop3Eps) {
		t.Fatalf("summary %+v", sum)
	}
	for _, f := range sum.Files {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}
