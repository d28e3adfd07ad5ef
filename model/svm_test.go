package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dpal-dev/dpal/vec"
)

// noisyLinear returns n points in the unit ball of R^d labelled by a fixed
// direction, with a fraction flip of labels flipped.
func noisyLinear(n, d int, flip float64, seed uint64) ([][]float64, []float64) {
	r := rand.New(rand.NewPCG(seed, 1))
	u := make([]float64, d)
	for j := range u {
		u[j] = r.NormFloat64()
	}
	X := make([][]float64, n)
	Y := make([]float64, n)
	for i := range X {
		x := make([]float64, d)
		for j := range x {
			x[j] = r.NormFloat64()
		}
		vec.ProjectBall(x, 1)
		X[i] = x
		Y[i] = Sign(vec.Dot(u, x))
		if r.Float64() < flip {
			Y[i] = -Y[i]
		}
	}
	return X, Y
}

func TestTrainLinearSVMSeparable(t *testing.T) {
	X := [][]float64{{1, 0.2}, {0.8, -0.1}, {0.5, 0.5}, {-1, 0.1}, {-0.7, -0.3}, {-0.4, 0.6}}
	Y := []float64{1, 1, 1, -1, -1, -1}
	w, err := TrainLinearSVM(X, Y, SVMOptions{Lambda: 1e-3})
	if err != nil {
		t.Fatal(err)
	}
	if e := ErrorRate(w, X, Y); e != 0 {
		t.Fatalf("error rate %v on separable data, w = %v", e, w)
	}
}

// dualityGap returns the relative gap between the primal and dual objectives
// in LIBLINEAR's units, P'(w) = ½‖w‖² + CΣhinge and
// D'(α) = Σα − ½‖w(α)‖²; P' ≥ D' always.
func dualityGap(s *dcdSolver) float64 {
	var hinge, sumAlpha float64
	for i, x := range s.X {
		hinge += math.Max(0, 1-s.Y[i]*vec.Dot(s.w, x))
		sumAlpha += s.alpha[i]
	}
	ww := vec.Dot(s.w, s.w)
	primal := ww/2 + s.C*hinge
	dual := sumAlpha - ww/2
	return (primal - dual) / math.Max(1, math.Abs(primal))
}

func TestTrainLinearSVMDualityGap(t *testing.T) {
	for _, lambda := range []float64{1e-1, 1e-2, 1e-3} {
		X, Y := noisyLinear(500, 10, 0.1, 3)
		s := dcdSolver{X: X, Y: Y, C: 1 / (lambda * float64(len(X))), w: make([]float64, 10), maxEpochs: 10000, r: rand.New(rand.NewPCG(1, 2))}
		s.run(1e-4)
		if gap := dualityGap(&s); gap > 1e-3 || gap < -1e-9 {
			t.Errorf("λ=%g: relative duality gap %g", lambda, gap)
		}
	}
}

// pegasos runs the Pegasos subgradient method (Shalev-Shwartz et al. 2011)
// with suffix averaging over the second half of the iterations.
func pegasos(X [][]float64, Y []float64, lambda float64, iters int) []float64 {
	r := rand.New(rand.NewPCG(7, 7))
	d := len(X[0])
	w, avg := make([]float64, d), make([]float64, d)
	for t := 1; t <= iters; t++ {
		i := r.IntN(len(X))
		eta := 1 / (lambda * float64(t))
		m := Y[i] * vec.Dot(w, X[i])
		for j := range w {
			w[j] *= 1 - eta*lambda
		}
		if m < 1 {
			for j := range w {
				w[j] += eta * Y[i] * X[i][j]
			}
		}
		vec.ProjectBall(w, 1/math.Sqrt(lambda))
		if t > iters/2 {
			for j := range avg {
				avg[j] += w[j] / float64(iters-iters/2)
			}
		}
	}
	return avg
}

func TestTrainLinearSVMAgreesWithPegasos(t *testing.T) {
	X, Y := noisyLinear(300, 5, 0.05, 11)
	for _, lambda := range []float64{0.1, 0.01} {
		w, err := TrainLinearSVM(X, Y, SVMOptions{Lambda: lambda, Tol: 1e-4})
		if err != nil {
			t.Fatal(err)
		}
		pw := pegasos(X, Y, lambda, 400000)
		pd, pp := SVMObjective(w, X, Y, lambda), SVMObjective(pw, X, Y, lambda)
		if pd > pp+1e-6 {
			t.Errorf("λ=%g: DCD objective %.6f above Pegasos %.6f", lambda, pd, pp)
		}
		if pp-pd > 0.01*pd {
			t.Errorf("λ=%g: Pegasos objective %.6f far from DCD %.6f", lambda, pp, pd)
		}
	}
}

func TestTrainLinearSVMDefaultsAndSeed(t *testing.T) {
	X, Y := noisyLinear(400, 8, 0.1, 5)
	w1, err := TrainLinearSVM(X, Y, SVMOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	w2, err := TrainLinearSVM(X, Y, SVMOptions{Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	lambda := 1 / float64(len(X))
	o1, o2 := SVMObjective(w1, X, Y, lambda), SVMObjective(w2, X, Y, lambda)
	if math.Abs(o1-o2) > 0.01*o1 {
		t.Errorf("objective depends on seed: %v vs %v", o1, o2)
	}
	if e := ErrorRate(w1, X, Y); e > 0.2 {
		t.Errorf("training error %v with 10%% label noise", e)
	}
}

func TestTrainLinearSVMBadInput(t *testing.T) {
	good := [][]float64{{1, 0}, {0, 1}}
	tests := []struct {
		name string
		X    [][]float64
		Y    []float64
		opt  SVMOptions
		want string
	}{
		{"empty", nil, nil, SVMOptions{}, "no training"},
		{"count mismatch", good, []float64{1}, SVMOptions{}, "2 rows but 1 labels"},
		{"ragged", [][]float64{{1, 0}, {1}}, []float64{1, -1}, SVMOptions{}, "row 1 has 1 features"},
		{"zero width", [][]float64{{}, {}}, []float64{1, -1}, SVMOptions{}, "no features"},
		{"nan", [][]float64{{1, 0}, {math.NaN(), 0}}, []float64{1, -1}, SVMOptions{}, "row 1 feature 0 is NaN"},
		{"inf", [][]float64{{1, math.Inf(1)}, {0, 0}}, []float64{1, -1}, SVMOptions{}, "row 0 feature 1 is +Inf"},
		{"label 0", good, []float64{1, 0}, SVMOptions{}, "row 1 label 0 is not ±1"},
		{"label 2", good, []float64{2, 1}, SVMOptions{}, "row 0 label 2"},
		{"negative lambda", good, []float64{1, -1}, SVMOptions{Lambda: -1}, "lambda"},
		{"nan lambda", good, []float64{1, -1}, SVMOptions{Lambda: math.NaN()}, "lambda"},
		{"negative tol", good, []float64{1, -1}, SVMOptions{Tol: -1}, "tolerance"},
		{"negative epochs", good, []float64{1, -1}, SVMOptions{MaxEpochs: -3}, "epochs"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := TrainLinearSVM(tc.X, tc.Y, tc.opt)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestErrorRate(t *testing.T) {
	X := [][]float64{{1}, {-1}, {0}, {2}}
	Y := []float64{1, 1, 1, -1}
	if got := ErrorRate([]float64{1}, X, Y); got != 0.5 {
		t.Errorf("ErrorRate = %v, want 0.5 (tie at 0 counts as +1)", got)
	}
	if got := ErrorRate([]float64{1}, nil, nil); !math.IsNaN(got) {
		t.Errorf("empty ErrorRate = %v, want NaN", got)
	}
}

func BenchmarkTrainLinearSVM(b *testing.B) {
	X, Y := noisyLinear(50000, 120, 0.02, 9)
	b.ResetTimer()
	for b.Loop() {
		if _, err := TrainLinearSVM(X, Y, SVMOptions{Lambda: 1e-4}); err != nil {
			b.Fatal(err)
		}
	}
}

func ExampleTrainLinearSVM() {
	X := [][]float64{{0.9, 0.1}, {0.6, -0.2}, {-0.8, 0.3}, {-0.5, -0.4}}
	Y := []float64{1, 1, -1, -1}
	w, err := TrainLinearSVM(X, Y, SVMOptions{Lambda: 0.01})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("training error %.2f\n", ErrorRate(w, X, Y))
	// Output: training error 0.00
}

// TestTrainLinearSVMWithin: the certified solution lies within the
// requested distance of a far more precise one, and a bad bound errors.
func TestTrainLinearSVMWithin(t *testing.T) {
	X, Y := noisyLinear(300, 6, 0.1, 5)
	for _, tc := range []struct {
		name   string
		lambda float64
		dist   float64
	}{{"lambda 0.1", 0.1, 1e-2}, {"lambda 0.01", 0.01, 1e-3}} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := TrainLinearSVMWithin(X, Y, SVMOptions{Lambda: tc.lambda}, tc.dist)
			if err != nil {
				t.Fatal(err)
			}
			ref, err := TrainLinearSVMWithin(X, Y, SVMOptions{Lambda: tc.lambda, Seed: 9}, tc.dist/20)
			if err != nil {
				t.Fatal(err)
			}
			diff := make([]float64, len(w))
			for i := range w {
				diff[i] = w[i] - ref[i]
			}
			if d := vec.Norm(diff); d > tc.dist*(1+1.0/20) {
				t.Errorf("‖w − w_ref‖ = %v, certified %v", d, tc.dist)
			}
		})
	}
	if _, err := TrainLinearSVMWithin(X, Y, SVMOptions{}, 0); err == nil {
		t.Error("distance 0 accepted")
	}
}
