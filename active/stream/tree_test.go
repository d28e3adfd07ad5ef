package stream

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/dpal-dev/dpal/data"
	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/model"
	"github.com/dpal-dev/dpal/vec"
)

// treeConfig is the detector with the tree update on a label budget.
func treeConfig(dim, budget int) Config {
	c := DetectorConfig(dim)
	c.Update, c.LabelBudget = Tree, budget
	return c
}

// TestTreeLossMatchesLedger: the ledger's entry for the batched records is
// ε_s + ε_g, the update's entry is the tree's Loss, and that Loss is
// exactly ε_g at the ledger's δ.
func TestTreeLossMatchesLedger(t *testing.T) {
	X, Y := synthStream(600, 8, 0.05, 3)
	for _, tc := range []struct {
		name      string
		eps, dlt  float64
		window    int
		policy    PolicyKind
		budget    int
		wantSteps int
	}{
		{"flmb eps 1", 1, 1e-5, 20, FLMB, 300, 15},
		{"flmb eps 0.25", 0.25, 1e-5, 20, FLMB, 290, 15},
		{"flsw eps 4 delta 1e-7", 4, 1e-7, 10, FLSW, 100, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := treeConfig(8, tc.budget)
			cfg.EpsGrad, cfg.Delta, cfg.Window, cfg.Policy = tc.eps, tc.dlt, tc.window, tc.policy
			if got := cfg.TreeSteps(); got != tc.wantSteps {
				t.Fatalf("TreeSteps = %d, want %d", got, tc.wantSteps)
			}
			l := mustNew(t, cfg, 4)
			runOracle(t, l, X, Y)
			loss := l.tree.Loss()
			if got := l.updateCharge().Loss; got.Rho != loss.Rho {
				t.Errorf("charged ρ = %v, the tree's Loss ρ = %v", got.Rho, loss.Rho)
			}
			checkRecordLoss(t, l, loss)
		})
	}
}

// TestTreeNonPrivateIsFTRL: without noise every release is the exact FTRL
// iterate Π_R(−S_t/(λ·n_t + 1/η)) on the prefix sum S_t of the clipped
// gradients, recomputed here from the release log.
func TestTreeNonPrivateIsFTRL(t *testing.T) {
	X, Y := synthStream(400, 5, 0.05, 7)
	cfg := treeConfig(5, 120)
	cfg.NonPrivate, cfg.Window, cfg.Clip, cfg.Eta = true, 10, 0.5, 2
	l := mustNew(t, cfg, 1)
	var batch [][]float64
	var ys []float64
	sum := make([]float64, 5)
	w := make([]float64, 5)
	n, checked := 0, 0
	for i, x := range X {
		dec, err := l.Observe(x)
		if err != nil {
			t.Fatal(err)
		}
		if !dec.Request {
			continue
		}
		batch, ys = append(batch, l.keep(x, 1)), append(ys, Y[i])
		if err := l.Label(dec.ID, Y[i]); err != nil {
			t.Fatal(err)
		}
		if len(batch) < cfg.Window {
			continue
		}
		for j, p := range batch {
			c := model.Hinge{}.Deriv(ys[j]*vec.Dot(w, p)) * ys[j]
			g := make([]float64, 5)
			for k := range g {
				g[k] = c * p[k]
			}
			if nn := vec.Norm(g); nn >= cfg.Clip {
				for k := range g {
					g[k] *= treeShrink * cfg.Clip / nn
				}
			}
			for k := range sum {
				sum[k] += g[k]
			}
		}
		n += len(batch)
		for k := range w {
			w[k] = -sum[k] / (cfg.Lambda*float64(n) + 1/cfg.Eta)
		}
		vec.ProjectBall(w, cfg.Radius)
		got := l.Weights()
		for k := range w {
			if math.Abs(got[k]-w[k]) > 1e-12 {
				t.Fatalf("after %d records: w = %v, want %v", n, got, w)
			}
		}
		checked++
		batch, ys = batch[:0], ys[:0]
	}
	if checked < 5 {
		t.Fatalf("only %d updates checked", checked)
	}
}

// TestTreeConfigRefused: the tree update needs a horizon, and its state
// is not saved.
func TestTreeConfigRefused(t *testing.T) {
	cfg := treeConfig(4, 0)
	if _, err := cfg.RecordEpsilon(); err == nil || !strings.Contains(err.Error(), "label budget") {
		t.Errorf("tree without a label budget: err = %v", err)
	}
	l := mustNew(t, treeConfig(4, 100), 1)
	if err := l.SaveState(&bytes.Buffer{}); !errors.Is(err, errTreeState) {
		t.Errorf("SaveState: err = %v, want errTreeState", err)
	}
	var buf bytes.Buffer
	if err := mustNew(t, DetectorConfig(4), 1).SaveState(&buf); err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(buf.String(), `"update":"gaussian"`, `"update":"tree","label_budget":100`, 1)
	if edited == buf.String() {
		t.Fatal("the saved state names no gaussian update")
	}
	if _, err := Restore(strings.NewReader(edited), rng.Seeded(1), nil); !errors.Is(err, errTreeState) {
		t.Errorf("Restore of a tree state: err = %v, want errTreeState", err)
	}
}

// TestTreeLearnsDemo runs the tree detector on the bundled KDD sample with
// a fixed seed and compares its test error to the constant predictor's.
func TestTreeLearnsDemo(t *testing.T) {
	train, test, err := data.Demo()
	if err != nil {
		t.Fatal(err)
	}
	cfg := treeConfig(train.Dim(), 2000)
	l := mustNew(t, cfg, 1)
	runOracle(t, l, train.X, train.Y)
	wrong, pos := 0, 0
	for i, x := range test.X {
		if model.Sign(l.Score(x)) != test.Y[i] {
			wrong++
		}
		if test.Y[i] > 0 {
			pos++
		}
	}
	n := float64(test.Len())
	errRate := float64(wrong) / n
	constant := math.Min(float64(pos), n-float64(pos)) / n
	t.Logf("tree detector on the demo: %d updates, test error %.4f, constant predictor %.4f", l.Stats().Updates, errRate, constant)
	if errRate >= constant {
		t.Errorf("test error %v is not below the constant predictor's %v", errRate, constant)
	}
}
