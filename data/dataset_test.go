package data

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dpal-dev/dpal/vec"
)

func TestProjectUnitBall(t *testing.T) {
	tests := []struct {
		name string
		in   []float64
		want []float64
	}{
		{"inside", []float64{0.3, 0.4}, []float64{0.3, 0.4}},
		{"on sphere", []float64{0.6, 0.8}, []float64{0.6, 0.8}},
		{"zero", []float64{0, 0}, []float64{0, 0}},
		{"outside", []float64{3, 4}, []float64{0.6, 0.8}},
		{"empty", nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x := slices.Clone(tc.in)
			ProjectUnitBall(x)
			for i := range x {
				if math.Abs(x[i]-tc.want[i]) > 1e-15 {
					t.Fatalf("got %v, want %v", x, tc.want)
				}
			}
		})
	}
}

// The projected norm, as computed, never exceeds 1, so a strict check
// ‖x‖ ≤ 1 downstream accepts every projected row.
func TestProjectUnitBallNeverAboveOne(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		x := make([]float64, 1+r.IntN(130))
		for i := range x {
			x[i] = r.NormFloat64() * math.Pow(10, float64(r.IntN(6)))
		}
		before := vec.Norm(x)
		ProjectUnitBall(x)
		if n := vec.Norm(x); n > 1 || (before > 1 && n < 1-1e-12) {
			t.Fatalf("norm %v after projection (dim %d)", n, len(x))
		}
	}
}

func TestSubsetAndDescribe(t *testing.T) {
	d := &Dataset{
		Name:       "t",
		X:          [][]float64{{1, 0}, {0, 1}, {2, 0}},
		Y:          []float64{-1, 1, 1},
		Class:      []int{0, 1, 2},
		ClassNames: []string{"a", "b", "c"},
	}
	s := d.Subset([]int{2, 0})
	if s.Len() != 2 || s.Dim() != 2 || s.X[0][0] != 2 || s.Y[1] != -1 || s.Class[0] != 2 {
		t.Fatalf("subset wrong: %+v", s)
	}
	got := d.Describe()
	if got.Rows != 3 || got.Dims != 2 || got.Positive != 2 || got.Negative != 1 || got.MaxNorm != 2 {
		t.Fatalf("describe: %+v", got)
	}
	if len(got.Classes) != 3 || got.Classes[1] != (ClassCount{"b", 1}) {
		t.Fatalf("classes: %+v", got.Classes)
	}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		d    Dataset
	}{
		{"ragged", Dataset{X: [][]float64{{1, 2}, {1}}, Y: []float64{1, 1}}},
		{"nan", Dataset{X: [][]float64{{math.NaN()}}, Y: []float64{1}}},
		{"label", Dataset{X: [][]float64{{1}}, Y: []float64{0}}},
		{"lengths", Dataset{X: [][]float64{{1}}, Y: []float64{1, 1}}},
	}
	for _, tc := range tests {
		if err := tc.d.Validate(); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

// Float32 rounds every row to float32, drops X, keeps Len and Dim, and is
// idempotent.
func TestFloat32(t *testing.T) {
	shared := []float64{0.1, 2, -3}
	d := &Dataset{X: [][]float64{shared, {1e-3, 0, 5}, shared}, Class: []int{0, 1, 0}}
	d.Float32()
	for range 2 {
		if d.X != nil || d.Len() != 3 || d.Dim() != 3 {
			t.Fatalf("X %v, Len %d, Dim %d", d.X, d.Len(), d.Dim())
		}
		if d.X32[0][0] != float32(0.1) || d.X32[1][0] != float32(1e-3) || d.X32[2][2] != -3 {
			t.Fatalf("X32 %v", d.X32)
		}
		d.Float32()
	}
}
