package dpsgd

import (
	"fmt"
	"math"

	"github.com/dpal-dev/dpal/model/nn"
)

// scatterPresets are the settings for a linear model on ScatterNet
// features (model/scatter, 81 channels of 7×7 group-normalised per image)
// of mnist and fashion-mnist. They follow Tramèr & Boneh 2021's public
// rule for their ScatterNet+linear models (their code, ftramer/Handcrafted-DP,
// scripts/run_baselines_*.py): clipping norm C = 0.1, SGD with momentum
// 0.9, a learning rate proportional to the batch (lr = base·batch/512)
// and a large batch; the point of that grid dpal ships is measured in
// docs/repro-dpsgd.md (δ = 10⁻⁵, 5 seeds).
var scatterPresets = map[string]preset{
	"mnist":         scatterLinear,
	"fashion-mnist": scatterLinear,
}

// scatterLinear is batch 8192, lr 4 (base 0.5 per 512 examples), 60
// epochs, C 0.1, momentum 0.9, at every ε.
var scatterLinear = preset{model: nn.LogReg, optimizer: Momentum, lr: 4, clip: 0.1, batch: 8192,
	epochs: 60, epochsLo: 60}

// ScatterDatasets lists the datasets ScatterPreset has a setting for.
func ScatterDatasets() []string { return []string{"mnist", "fashion-mnist"} }

// ScatterPreset is dataset's setting for model on its ScatterNet features
// at target ε (> 0, finite), as Preset is for the raw images. The model
// is logreg (the default) or an MLP; a CNN is refused: dpal's CNN is the
// end-to-end one for 28×28 images, not Tramèr & Boneh's ScatterNet+CNN.
func ScatterPreset(dataset, model string, eps float64) (Setting, error) {
	p, ok := scatterPresets[dataset]
	if !ok {
		return Setting{}, fmt.Errorf("dpsgd: no ScatterNet preset for dataset %q (want one of %q)", dataset, ScatterDatasets())
	}
	spec, err := presetModel(eps, model, p.model)
	if err != nil {
		return Setting{}, err
	}
	if spec.Arch == nn.CNN {
		return Setting{}, fmt.Errorf("model %q: the CNN takes 28×28 images, not ScatterNet features (use logreg or mlp:…)", model)
	}
	s := Setting{Model: spec, Batch: p.batch, Epochs: p.epochs}
	if eps < LowEpsilon {
		s.Epochs = p.epochsLo
	}
	s.Config = Config{Clip: p.clip, Optimizer: p.optimizer, LR: p.lr, Momentum: 0.9}
	return s, nil
}

// presetModel checks a preset's target ε (finite, > 0) and parses its
// model (nn.ParseArch; empty: def).
func presetModel(eps float64, model, def string) (nn.Spec, error) {
	if !(eps > 0) || math.IsInf(eps, 0) {
		return nn.Spec{}, fmt.Errorf("dpsgd: preset for ε = %v: want a finite ε > 0", eps)
	}
	if model == "" {
		model = def
	}
	return nn.ParseArch(model)
}
