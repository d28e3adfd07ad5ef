package streamrepro

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpal-dev/dpal/data"
	"github.com/dpal-dev/dpal/model"
	"github.com/dpal-dev/dpal/vec"
)

// synthetic returns a linearly separable set in the unit ball of R^d with
// a margin, labelled by the sign of the first two coordinates' sum.
func synthetic(name string, n, d int, seed uint64) *data.Dataset {
	r := rand.New(rand.NewPCG(seed, 3))
	ds := &data.Dataset{Name: name}
	for len(ds.X) < n {
		x := make([]float64, d)
		for j := range x {
			x[j] = r.Float64()*2 - 1
		}
		vec.ProjectBall(x, 1)
		s := x[0] + x[1]
		if math.Abs(s) < 0.1 {
			continue
		}
		ds.X = append(ds.X, x)
		ds.Y = append(ds.Y, model.Sign(s))
	}
	return ds
}

func tinyRun(t *testing.T, figs []int) (*Summary, string) {
	t.Helper()
	opt := QuickOptions()
	opt.OutDir = t.TempDir()
	opt.Seed = 7
	opt.Figures = figs
	opt.BatchSizes = []int{1, 5}
	opt.EtaGrid, opt.LambdaGrid = []float64{0.1, 1}, []float64{0.01}
	opt.SVMLambdaGrid = []float64{1e-3, 1e-2}
	set := Dataset{
		Name: "toy", Train: synthetic("toy-train", 800, 4, 1), Test: synthetic("toy-test", 300, 4, 2),
		Updates: 20, Labels: 40, Fig4Labels: 20,
	}
	sum, err := Run(opt, []Dataset{set})
	if err != nil {
		t.Fatal(err)
	}
	return sum, opt.OutDir
}

func TestRunWritesFiguresAndSummary(t *testing.T) {
	sum, dir := tinyRun(t, []int{2, 3, 4, 5})
	for _, f := range []string{"fig2_error_vs_updates", "fig3_error_vs_labels", "fig4_error_vs_batch_size",
		"fig5a_labels_vs_observations", "fig5b_error_vs_labels"} {
		for _, ext := range []string{".png", ".csv", "_stats.csv"} {
			st, err := os.Stat(filepath.Join(dir, "toy", f+ext))
			if err != nil || st.Size() == 0 {
				t.Errorf("%s%s: missing or empty (%v)", f, ext, err)
			}
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var back Summary
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("summary.json: %v", err)
	}
	if back.Seed != 7 || len(back.PermSeeds) != 2 {
		t.Errorf("seeds not recorded: seed %d, perm seeds %v", back.Seed, back.PermSeeds)
	}
	ds := sum.Datasets[0]
	if ds.BatchSVM.TestError > 0.05 {
		t.Errorf("batch SVM test error %v on separable data", ds.BatchSVM.TestError)
	}
	if len(ds.CV.Scores) != 3*2 || len(ds.CV.Chosen) != 3 {
		t.Errorf("cross-validation recorded %d scores, %d choices", len(ds.CV.Scores), len(ds.CV.Chosen))
	}
	// 4 base methods + the non-private one + 2 extra batch sizes per
	// policy + 2 shrinking.
	if len(ds.Methods) != 5+2+2 {
		t.Errorf("%d methods summarised", len(ds.Methods))
	}
	for _, m := range ds.Methods {
		eps := m.EpsilonPerRecord
		switch {
		case strings.HasPrefix(m.Method, "NonPrivate"):
			if eps != nil {
				t.Errorf("%s: ε per record %v, want none", m.Method, *eps)
			}
		case eps == nil:
			t.Errorf("%s: no ε per record", m.Method)
		case strings.HasPrefix(m.Method, "Bernoulli") && *eps != 2:
			t.Errorf("%s: ledger ε per record %v, want ε_s + ε_g = 2", m.Method, *eps)
		case strings.HasPrefix(m.Method, "Exponential") && !(*eps > 2):
			// Lemma 2's condition fails at b = 0.2, ε = 1, M = 1: the
			// true ε_s exceeds the nominal 1.
			t.Errorf("%s: ledger ε per record %v, want > 2", m.Method, *eps)
		}
		if m.Runs != 2 {
			t.Errorf("%s: %d runs", m.Method, m.Runs)
		}
	}
	if len(ds.Runs) != 2*len(ds.Methods) {
		t.Errorf("%d run records", len(ds.Runs))
	}
}

func TestRunIsReproducible(t *testing.T) {
	a, _ := tinyRun(t, []int{3})
	b, _ := tinyRun(t, []int{3})
	ra, rb := a.Datasets[0].Runs, b.Datasets[0].Runs
	for i := range ra {
		if ra[i].ErrorAtLabels != rb[i].ErrorAtLabels || ra[i].Labels != rb[i].Labels {
			t.Fatalf("run %d differs under the same seed: %+v vs %+v", i, ra[i], rb[i])
		}
	}
}

func TestErrAtLabelsInterpolates(t *testing.T) {
	errs := map[int]float64{0: 0.5, 1: 0.3, 2: 0.1, 3: 0.2}
	tr := &trajectory{
		W:      [][]float64{{0}, {1}, {2}, {3}},
		Labels: []int{0, 4, 4, 10},
		eval:   func(w []float64) float64 { return errs[int(w[0])] },
	}
	tests := []struct{ x, want float64 }{
		{0, 0.5},
		{2, 0.4},  // halfway between (0, .5) and (4, .3)
		{4, 0.1},  // two releases at 4 labels: the later one
		{7, 0.15}, // halfway between (4, .1) and (10, .2)
		{10, 0.2}, // last release
		{50, 0.2}, // past the end the last model holds
		{-1, 0.5}, // before the start: no extrapolation
	}
	for _, tc := range tests {
		if got := tr.errAtLabels(tc.x); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("errAtLabels(%v) = %v, want %v", tc.x, got, tc.want)
		}
	}
	if got := tr.errAtUpdate(9); got != 0.2 {
		t.Errorf("errAtUpdate past the end = %v", got)
	}
}

func TestPlanMergesSharedRuns(t *testing.T) {
	opt := DefaultOptions()
	ms, stops := plan(&opt, Dataset{Updates: 300, Labels: 2000, Fig4Labels: 200})
	// 4 base + non-private + 4 other batch sizes × 2 policies + 2 shrinking = 15.
	if len(ms) != 15 {
		t.Fatalf("%d methods planned, want 15", len(ms))
	}
	fixed := method{Selector: 0, Policy: 0, Window: 5}
	if s := stops[fixed]; s.Updates != 300 || s.Labels != 2000 || s.Obs != 4000 {
		t.Errorf("Bernoulli-FLSW stop rule %+v: want the union of Figs. 2, 3, 4, 5", s)
	}
	if workUnits(&opt) != 1+4+3*6*5*3+10*15 {
		t.Errorf("work units %d", workUnits(&opt))
	}
}

func TestOptionsValidate(t *testing.T) {
	for name, mod := range map[string]func(*Options){
		"perms":   func(o *Options) { o.Perms = 0 },
		"figures": func(o *Options) { o.Figures = []int{6} },
		"none":    func(o *Options) { o.Figures = nil },
		"window":  func(o *Options) { o.Window = 0 },
		"grid":    func(o *Options) { o.EtaGrid = nil },
		"cvfrac":  func(o *Options) { o.CVFrac = 1 },
		"reps":    func(o *Options) { o.CVReps = 0 },
		"batch":   func(o *Options) { o.BatchSizes = []int{0} },
		"rows":    func(o *Options) { o.TestRows = -1 },
		"eps":     func(o *Options) { o.EpsGrad = 0 },
	} {
		o := DefaultOptions()
		mod(&o)
		if err := o.Validate(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	o := DefaultOptions()
	if err := o.Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	if _, err := Run(o, []Dataset{{Name: "empty", Train: &data.Dataset{}, Test: &data.Dataset{}}}); err == nil {
		t.Error("empty dataset accepted")
	}
}
