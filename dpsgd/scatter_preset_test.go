package dpsgd_test

import (
	"testing"

	"github.com/dpal-dev/dpal/dpsgd"
	"github.com/dpal-dev/dpal/model/nn"
)

// ScatterPreset: the linear model's setting on both image sets at every
// ε; an MLP keeps it; the CNN, other datasets and bad ε are refused.
func TestScatterPreset(t *testing.T) {
	for _, c := range []struct {
		name, data, model string
		eps               float64
		arch              string
	}{
		{"mnist", "mnist", "", 3, nn.LogReg},
		{"mnist low ε", "mnist", "", 0.5, nn.LogReg},
		{"fashion", "fashion-mnist", "", 8, nn.LogReg},
		{"fashion mlp", "fashion-mnist", "mlp:64", 3, nn.MLP},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := dpsgd.ScatterPreset(c.data, c.model, c.eps)
			if err != nil {
				t.Fatal(err)
			}
			cfg := s.Config
			if s.Model.Arch != c.arch || s.Batch != 8192 || cfg.LR != 4 || cfg.Clip != 0.1 || s.Epochs != 60 ||
				cfg.Optimizer != dpsgd.Momentum || cfg.Momentum != 0.9 {
				t.Errorf("setting %+v", s)
			}
		})
	}
	for _, c := range []struct {
		data, model string
		eps         float64
	}{{"kdd99-5class", "", 3}, {"mnist", "cnn", 3}, {"mnist", "resnet", 3}, {"mnist", "", 0}} {
		if _, err := dpsgd.ScatterPreset(c.data, c.model, c.eps); err == nil {
			t.Errorf("ScatterPreset(%q, %q, %v) accepted", c.data, c.model, c.eps)
		}
	}
}
