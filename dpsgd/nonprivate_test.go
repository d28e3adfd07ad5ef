package dpsgd

import (
	"math"
	"slices"
	"testing"

	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/model/nn"
)

func TestNonPrivateLearns(t *testing.T) {
	for _, c := range []struct {
		name string
		spec nn.Spec
	}{
		{"logreg", nn.Spec{Arch: nn.LogReg, Inputs: 4, Classes: 3}},
		{"mlp", nn.Spec{Arch: nn.MLP, Inputs: 4, Classes: 3, Hidden: []int{16}, Activation: nn.ReLU}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := rng.Seeded(5)
			d := blobs(r, 600)
			net, _ := nn.New(c.spec, r)
			tr, err := NewNonPrivate(net, Config{Optimizer: Momentum, LR: 0.2})
			if err != nil {
				t.Fatal(err)
			}
			res, err := tr.Run(r, d, []Group{{Name: "all", Records: all(600), Rate: 0.1}}, 60, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Steps != 60 || res.ExpectedBatch != 60 || len(res.Charges) != 0 || tr.Steps() != 60 {
				t.Errorf("result %+v", res)
			}
			if acc, _ := net.Accuracy(d.X, d.Labels); acc < 0.95 {
				t.Errorf("accuracy %v after 60 non-private steps", acc)
			}
		})
	}
}

// One SGD step at rate 1 is θ − lr·(Σ_i ∇ℓ_i)/n with no clipping, however
// large the per-example gradients: checked against the materialised ones.
func TestNonPrivateStepIsUnclipped(t *testing.T) {
	r := rng.Seeded(6)
	d := blobs(r, 8)
	for _, x := range d.X {
		for j := range x {
			x[j] *= 1e3 // gradient norms ≫ any clipping norm
		}
	}
	net, _ := nn.New(nn.Spec{Arch: nn.MLP, Inputs: 4, Classes: 3, Hidden: []int{5}, Activation: nn.Tanh}, r)
	per, err := net.PerExampleGrads(d.X, d.Labels, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(net.Params())
	for _, g := range per {
		for k, v := range g {
			want[k] -= 0.01 * v / 8
		}
	}
	tr, _ := NewNonPrivate(net, Config{LR: 0.01})
	if _, err := tr.Run(r, d, []Group{{Name: "all", Records: all(8), Rate: 1}}, 1, nil); err != nil {
		t.Fatal(err)
	}
	for k, v := range net.Params() {
		if math.Abs(v-want[k]) > 1e-4*(1+math.Abs(want[k])) {
			t.Fatalf("parameter %d: %v, want %v", k, v, want[k])
		}
	}
}

func TestNonPrivateRejects(t *testing.T) {
	r := rng.Seeded(7)
	d := blobs(r, 10)
	net, _ := nn.New(nn.Spec{Arch: nn.LogReg, Inputs: 4, Classes: 3}, r)
	if _, err := NewNonPrivate(net, Config{LR: 0}); err == nil {
		t.Error("lr 0 accepted")
	}
	tr, _ := NewNonPrivate(net, Config{LR: 1})
	for _, c := range []struct {
		name   string
		groups []Group
	}{
		{"record twice", []Group{{Name: "a", Records: []int{1, 1}, Rate: 0.5}}},
		{"nothing sampled", []Group{{Name: "a", Records: []int{1}, Rate: 0}}},
		{"record out of range", []Group{{Name: "a", Records: []int{10}, Rate: 0.5}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := tr.Run(r, d, c.groups, 1, nil); err == nil {
				t.Error("accepted")
			}
		})
	}
}
