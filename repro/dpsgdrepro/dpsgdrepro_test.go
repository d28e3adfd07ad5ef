package dpsgdrepro

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/dpal-dev/dpal/data"
	"github.com/dpal-dev/dpal/dpsgd"
)

// blobs is 1 000 separable rows "x1,x2,label" (labels ±1, alternating).
const blobs = "testdata/blobs.csv"

func TestRunWrite(t *testing.T) {
	o := DefaultOptions()
	o.Datasets, o.Source = []string{"csv"}, data.Source{File: blobs}
	o.Epsilons, o.Seeds, o.EpochsScale, o.Seed = []float64{1, 4}, 2, 0.5, 9
	sum, err := Run(o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Rows) != 6 || len(sum.Points) != 3 || sum.Seed != 9 || sum.Rows[1].Seed != 10 {
		t.Fatalf("summary %+v", sum)
	}
	if ref := sum.Points[2]; ref.Private || ref.Epsilon != 0 || ref.Runs != 2 || ref.Mean < 0.9 {
		t.Errorf("reference point %+v", ref)
	}
	if p := sum.Points[0]; !p.Private || p.Epsilon != 1 || sum.Rows[0].NoiseMultiplier == 0 || sum.Rows[0].Epochs != 5 {
		t.Errorf("first point %+v, row %+v", p, sum.Rows[0])
	}
	dir := t.TempDir()
	if err := Write(dir, sum); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"rows.csv", "summary.json", "csv-accuracy.png", "csv-accuracy.csv"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s not written: %v", f, err)
		}
	}
	var back Summary
	b, _ := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err := json.Unmarshal(b, &back); err != nil || len(back.Rows) != 6 {
		t.Errorf("summary.json: %v, %d rows", err, len(back.Rows))
	}
}

func TestValidate(t *testing.T) {
	for name, change := range map[string]func(*Options){
		"no dataset": func(o *Options) { o.Datasets = nil },
		"unknown":    func(o *Options) { o.Datasets = []string{"cifar10"} },
		"twice":      func(o *Options) { o.Datasets = []string{"mnist", "mnist"} },
		"bad model":  func(o *Options) { o.Model = "resnet" },
		"no ε":       func(o *Options) { o.Epsilons = nil },
		"ε ≤ 0":      func(o *Options) { o.Epsilons = []float64{0} },
		"δ ≥ 1":      func(o *Options) { o.Delta = 1 },
		"no seeds":   func(o *Options) { o.Seeds = 0 },
		"scale 0":    func(o *Options) { o.EpochsScale = 0 },
		"scale +Inf": func(o *Options) { o.EpochsScale = math.Inf(1) },
	} {
		o := DefaultOptions()
		change(&o)
		if err := o.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := DefaultOptions().Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

// The non-private reference trains for the epochs of the model's own
// preset at ε ≥ 2 (the MLP's 40 on MNIST, not the CNN's 30), scaled.
func TestReferenceEpochs(t *testing.T) {
	img := labelled{name: "mnist", train: &data.Dataset{X: [][]float64{make([]float64, 784)}, ClassNames: make([]string, 10)},
		image: [3]int{28, 28, 1}}
	for _, c := range []struct {
		model  string
		epochs float64
	}{{"mlp:256", 40 * 0.5}, {"", 30 * 0.5}} {
		o := Options{Model: c.model, EpochsScale: 0.5}
		s, err := o.setting(img, dpsgd.LowEpsilon)
		if err != nil || s.Epochs != c.epochs {
			t.Errorf("model %q: reference epochs %v (%v), want %v", c.model, s.Epochs, err, c.epochs)
		}
	}
}
