package dpsgd_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/dpal-dev/dpal/dpsgd"
	"github.com/dpal-dev/dpal/model/nn"
)

// Each dataset's preset at ε ≥ 2 and below, for its default model and for
// an MLP: an MLP on an image set takes the MLP presets; the CNN and the
// tabular sets keep theirs (the table of docs/dpsgd.md).
func TestPreset(t *testing.T) {
	for _, c := range []struct {
		name, data, model string
		eps               float64
		arch, activation  string
		batch             int
		lr, clip, epochs  float64
	}{
		{"mnist cnn", "mnist", "", 3, nn.CNN, "", 512, 0.5, 0.1, 30},
		{"mnist cnn low ε", "mnist", "", 1, nn.CNN, "", 512, 0.5, 0.1, 15},
		{"mnist cnn at the split", "mnist", "", dpsgd.LowEpsilon, nn.CNN, "", 512, 0.5, 0.1, 30},
		{"fashion cnn", "fashion-mnist", "", 3, nn.CNN, "", 2048, 4, 0.1, 40},
		{"fashion cnn low ε", "fashion-mnist", "", 1, nn.CNN, "", 512, 0.5, 0.1, 15},
		{"mnist mlp", "mnist", "mlp:256", 3, nn.MLP, nn.Tanh, 4096, 1, 1, 40},
		{"mnist mlp low ε", "mnist", "mlp:256", 1, nn.MLP, nn.Tanh, 256, 0.1, 1, 10},
		{"fashion mlp", "fashion-mnist", "mlp:512,256", 2, nn.MLP, nn.ReLU, 1024, 1, 1, 10},
		{"fashion mlp low ε", "fashion-mnist", "mlp:512,256", 0.5, nn.MLP, nn.ReLU, 256, 0.1, 1, 10},
		{"kdd logreg", "kdd99-5class", "", 0.5, nn.LogReg, "", 1024, 0.5, 1, 5},
		{"kdd mlp keeps tabular preset", "kdd99-5class", "mlp:64", 3, nn.MLP, nn.ReLU, 1024, 0.5, 1, 5},
		{"csv", "csv", "", 8, nn.LogReg, "", 256, 0.5, 1, 10},
		{"libsvm low ε", "libsvm", "", 1, nn.LogReg, "", 256, 0.5, 1, 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := dpsgd.Preset(c.data, c.model, c.eps)
			if err != nil {
				t.Fatal(err)
			}
			if s.Model.Arch != c.arch || s.Model.Activation != c.activation {
				t.Errorf("model %s (%q), want %s (%q)", s.Model.Arch, s.Model.Activation, c.arch, c.activation)
			}
			cfg := s.Config
			if s.Batch != c.batch || cfg.LR != c.lr || cfg.Clip != c.clip || s.Epochs != c.epochs {
				t.Errorf("batch %d lr %v clip %v epochs %v, want %d %v %v %v", s.Batch, cfg.LR, cfg.Clip, s.Epochs, c.batch, c.lr, c.clip, c.epochs)
			}
			if cfg.Optimizer != dpsgd.Momentum || cfg.Momentum != 0.9 || cfg.NoiseMultiplier != 0 {
				t.Errorf("config %+v: want momentum 0.9 and no σ before Calibrate", cfg)
			}
		})
	}
}

func TestPresetRefuses(t *testing.T) {
	for _, c := range []struct {
		data, model string
		eps         float64
	}{{"cifar10", "", 3}, {"mnist", "resnet", 3}, {"mnist", "", 0}, {"mnist", "", -1}} {
		if _, err := dpsgd.Preset(c.data, c.model, c.eps); err == nil {
			t.Errorf("Preset(%q, %q, %v) accepted", c.data, c.model, c.eps)
		}
	}
	for _, d := range dpsgd.PresetDatasets() {
		if _, err := dpsgd.Preset(d, "", 3); err != nil {
			t.Errorf("listed dataset %s: %v", d, err)
		}
	}
	if ds := dpsgd.PresetDatasets(); !slices.Equal(ds, []string{"mnist", "fashion-mnist", "kdd99-5class", "csv", "libsvm"}) {
		t.Errorf("PresetDatasets() = %q", ds)
	}
	s, _ := dpsgd.Preset("kdd99-5class", "cnn", 3)
	if _, err := s.ForData(120, 5, [3]int{}); !errors.Is(err, dpsgd.ErrNotImage) {
		t.Errorf("a CNN on tabular data: %v, want ErrNotImage", err)
	}
}

// Calibrate fixes σ for the run's (ε, δ) and n, and the cosine schedule's
// length; PlanNonPrivate has the same rate and steps without noise.
func TestSettingCalibrate(t *testing.T) {
	s, err := dpsgd.Preset("csv", "", 3)
	if err != nil {
		t.Fatal(err)
	}
	s.Config.Schedule = dpsgd.Cosine
	plan, err := s.Calibrate(3, 1e-5, 2560)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Steps != 100 || plan.SampleRate != 0.1 || s.Config.NoiseMultiplier != plan.NoiseMultiplier || s.Config.TotalSteps != 100 {
		t.Errorf("plan %+v, config %+v", plan, s.Config)
	}
	ref, err := s.PlanNonPrivate(2560)
	if err != nil || ref.Steps != plan.Steps || ref.SampleRate != plan.SampleRate || ref.NoiseMultiplier != 0 {
		t.Errorf("non-private plan %+v (%v)", ref, err)
	}
}

// The MNIST MLP's preset at ε = 3 and at ε = 1, sized for the data; σ
// then comes from Calibrate.
func ExamplePreset() {
	for _, eps := range []float64{3, 1} {
		s, err := dpsgd.Preset("mnist", "mlp:256", eps)
		if err != nil {
			fmt.Println(err)
			return
		}
		if s, err = s.ForData(784, 10, [3]int{28, 28, 1}); err != nil {
			fmt.Println(err)
			return
		}
		plan, err := s.Calibrate(eps, 1e-5, 60000)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("ε=%v: %s %s, batch %d, lr %v, C %v, %v epochs: %d steps, σ %.4f\n",
			eps, s.Model, s.Model.Activation, s.Batch, s.Config.LR, s.Config.Clip, s.Epochs, plan.Steps, plan.NoiseMultiplier)
	}
	// Output:
	// ε=3: mlp:256 tanh, batch 4096, lr 1, C 1, 40 epochs: 586 steps, σ 2.6340
	// ε=1: mlp:256 tanh, batch 256, lr 0.1, C 1, 10 epochs: 2344 steps, σ 1.1569
}
