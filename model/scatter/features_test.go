package scatter

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dpal-dev/dpal/data"
)

func TestFeatures(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	d := &data.Dataset{Name: "toy", Class: []int{0, 1, 0, 1, 1}, ClassNames: []string{"a", "b"}}
	for range d.Class {
		d.X = append(d.X, blob(rng, 28, 28, 4))
	}
	d.X[4] = make([]float64, 28*28) // a blank image: a constant group maps to zeros
	f, err := Features(d, MNIST)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := New(28, 28, 2, 8)
	if f.Dim() != 81*49 || f.Len() != 5 || f.Class[1] != 1 || f.ClassNames[1] != "b" {
		t.Fatalf("features: %d rows of %d, classes %v", f.Len(), f.Dim(), f.Class)
	}
	if err := f.Validate(); err != nil {
		t.Fatal(err)
	}
	size := 3 * 49 // 27 groups of 3 channels of 7×7
	for i, row := range f.X {
		raw, _ := s.Transform(nil, d.X[i])
		want := append([]float64(nil), raw...)
		if err := s.Normalize(want, 27); err != nil {
			t.Fatal(err)
		}
		for k := range row {
			if row[k] != want[k] {
				t.Fatalf("row %d coefficient %d: %v in Features, %v one at a time", i, k, row[k], want[k])
			}
		}
		for g := range 27 {
			m, v := meanVar(row[g*size : (g+1)*size])
			_, rv := meanVar(raw[g*size : (g+1)*size])
			wantVar := rv / (rv + groupEps) // 1 unless the group is nearly constant
			if math.Abs(m) > 1e-12 || math.Abs(v-wantVar) > 1e-9 {
				t.Errorf("row %d group %d: mean %.3g, variance %.4f, want 0 and %v", i, g, m, v, wantVar)
			}
		}
	}
}

func TestFeaturesRejects(t *testing.T) {
	d := &data.Dataset{Name: "toy", X: [][]float64{make([]float64, 28*28), make([]float64, 27)}}
	if _, err := Features(d, MNIST); err == nil {
		t.Error("a row of 27 values was accepted as a 28×28 image")
	}
	c := MNIST
	c.Groups = 10
	if _, err := Features(&data.Dataset{}, c); err == nil {
		t.Error("10 groups of 81 channels were accepted")
	}
	s, _ := New(28, 28, 2, 8)
	if err := s.Normalize(make([]float64, s.Len()), 4); err == nil {
		t.Error("Normalize accepted 4 groups of 81 channels")
	}
}

func meanVar(x []float64) (m, v float64) {
	for _, y := range x {
		m += y
	}
	m /= float64(len(x))
	for _, y := range x {
		v += (y - m) * (y - m)
	}
	return m, v / float64(len(x))
}
