package ocprepro

import (
	"os"
	"path/filepath"
	"testing"
)

// A tiny synthetic reproduction writes its figures, tables and summary, and
// the private curves' ε figures are consistent.
func TestReproduceSynthetic(t *testing.T) {
	opt := QuickOptions()
	opt.OutDir = t.TempDir()
	opt.Figures = []string{"2a", "regret"}
	opt.SynthT, opt.SynthDim = 500, 3
	opt.FTLEpsilons = []float64{10, 0.1}
	opt.RegretTs = []int{200, 400}
	sum, err := Reproduce(opt)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"fig2a.png", "fig2a.csv", "regret_vs_T.png", "regret_vs_T.csv", "epsilons.csv", "summary.json"} {
		if _, err := os.Stat(filepath.Join(opt.OutDir, f)); err != nil {
			t.Errorf("missing %s: %v", f, err)
		}
	}
	if len(sum.Slopes) != 3 {
		t.Fatalf("%d slopes", len(sum.Slopes))
	}
	for _, r := range sum.Runs {
		if r.Privacy != nil && r.Privacy.ChargedEpsilon < r.Privacy.ExactEpsilon {
			t.Errorf("%s: charged ε %v below exact %v", r.Name, r.Privacy.ChargedEpsilon, r.Privacy.ExactEpsilon)
		}
	}
}

func TestUnknownFigure(t *testing.T) {
	opt := QuickOptions()
	opt.OutDir, opt.Figures = t.TempDir(), []string{"9z"}
	if _, err := Reproduce(opt); err == nil {
		t.Fatal("unknown figure accepted")
	}
}

func TestLogSlope(t *testing.T) {
	if s := logSlope([]float64{1, 10, 100}, []float64{2, 2 * 3.1622776601683795, 20}); s < 0.4999 || s > 0.5001 {
		t.Fatalf("slope %v, want 0.5", s)
	}
}
