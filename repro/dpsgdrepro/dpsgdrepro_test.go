package dpsgdrepro

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
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

// Scatter features: an image set becomes 81×7×7 features with the linear
// preset; tabular data, a CNN or an unknown feature kind are refused.
func TestScatterFeatures(t *testing.T) {
	img := labelled{name: "mnist", image: [3]int{28, 28, 1}}
	for _, part := range []**data.Dataset{&img.train, &img.test} {
		*part = &data.Dataset{X: [][]float64{make([]float64, 784), make([]float64, 784)}, Class: []int{0, 1},
			ClassNames: make([]string, 10)}
	}
	o := Options{Features: Scatter, EpochsScale: 1}
	if err := o.features(&img); err != nil {
		t.Fatal(err)
	}
	s, err := o.setting(img, 3)
	if err != nil {
		t.Fatal(err)
	}
	if img.train.Dim() != 81*49 || img.test.Dim() != 81*49 || img.image != ([3]int{}) || s.Model.Arch != "logreg" || s.Batch != 8192 {
		t.Errorf("features %d/%d, image %v, setting %+v", img.train.Dim(), img.test.Dim(), img.image, s)
	}
	for name, change := range map[string]func(*Options){
		"tabular": func(o *Options) { o.Datasets = []string{"csv"} },
		"cnn":     func(o *Options) { o.Model = "cnn" },
		"unknown": func(o *Options) { o.Features = "hog" },
	} {
		o := DefaultOptions()
		o.Features = Scatter
		change(&o)
		if err := o.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// Write with a summary beside: both curves and both references in the
// figure, labelled by model and features.
func TestWriteBeside(t *testing.T) {
	mk := func(features, model string, acc float64) Summary {
		return Summary{Features: features,
			Rows:   []Row{{Private: true, Dataset: "mnist", Features: features, Model: model, Epsilon: 1, TestAccuracy: acc}},
			Points: []Point{{Private: true, Dataset: "mnist", Epsilon: 1, Mean: acc, Runs: 1}, {Dataset: "mnist", Mean: acc + 0.01, Runs: 1}}}
	}
	dir := t.TempDir()
	if err := Write(dir, mk(Scatter, "logreg", 0.98), mk("", "cnn", 0.96)); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "mnist-accuracy.csv"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"mnist DP-SGD (ScatterNet+logreg)", "mnist DP-SGD (cnn)"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("figure lacks %q:\n%s", want, b)
		}
	}
}
