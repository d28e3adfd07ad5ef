package nn

import (
	"fmt"
	"strconv"
	"strings"
)

// Architectures a Spec can name.
const (
	LogReg = "logreg"
	MLP    = "mlp"
	CNN    = "cnn"
)

// Activation names for Spec.Activation.
const (
	ReLU = "relu"
	Tanh = "tanh"
)

// Limits on a Spec, so that a corrupt model file cannot demand unbounded
// memory.
const (
	maxInputs  = 1 << 20
	maxClasses = 1 << 12
	maxWidth   = 1 << 14
	maxHidden  = 3
	maxParams  = 1 << 26
)

// Spec says what network to build: it is stored with the parameters in a
// saved model.
type Spec struct {
	// Arch is LogReg, MLP or CNN.
	Arch string `json:"arch"`
	// Inputs is the number of features per example (H·W·C for a CNN).
	Inputs int `json:"inputs"`
	// Classes is the number of classes (≥ 2). Logistic regression with two
	// classes is binary: one logit and a sigmoid; everything else ends in a
	// softmax over Classes logits.
	Classes int `json:"classes"`
	// Hidden are an MLP's hidden widths (one to three layers).
	Hidden []int `json:"hidden,omitempty"`
	// Activation is an MLP's ReLU or Tanh (a CNN is always tanh).
	Activation string `json:"activation,omitempty"`
	// Dropout is an MLP's dropout rate after each hidden layer, in [0, 1).
	Dropout float64 `json:"dropout,omitempty"`
	// Image is a CNN's input height, width and channels (channels-last).
	Image [3]int `json:"image,omitempty"`
}

// ParseArch reads the CLI's model names: "logreg", "mlp:256",
// "mlp:512,256" (hidden widths) or "cnn". The rest of the Spec (inputs,
// classes, activation, image) is the caller's.
func ParseArch(s string) (Spec, error) {
	name, widths, hasWidths := strings.Cut(s, ":")
	switch name {
	case LogReg, CNN:
		if hasWidths {
			return Spec{}, fmt.Errorf("model %q: %s takes no widths", s, name)
		}
		return Spec{Arch: name}, nil
	case MLP:
		if !hasWidths {
			return Spec{}, fmt.Errorf("model %q: want mlp:W1[,W2[,W3]]", s)
		}
		sp := Spec{Arch: MLP, Activation: ReLU}
		for _, w := range strings.Split(widths, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(w))
			if err != nil || n < 1 || n > maxWidth {
				return Spec{}, fmt.Errorf("model %q: hidden width %q: want an integer in [1, %d]", s, w, maxWidth)
			}
			sp.Hidden = append(sp.Hidden, n)
		}
		return sp, nil
	}
	return Spec{}, fmt.Errorf("model %q: want logreg, mlp:W1[,W2[,W3]] or cnn", s)
}

// String is the Spec in ParseArch's form.
func (s Spec) String() string {
	if s.Arch != MLP {
		return s.Arch
	}
	w := make([]string, len(s.Hidden))
	for i, h := range s.Hidden {
		w[i] = strconv.Itoa(h)
	}
	return MLP + ":" + strings.Join(w, ",")
}

// Validate checks the Spec's fields against the architecture and the
// limits above.
func (s Spec) Validate() error {
	if s.Inputs < 1 || s.Inputs > maxInputs {
		return fmt.Errorf("spec: inputs %d: want [1, %d]", s.Inputs, maxInputs)
	}
	if s.Classes < 2 || s.Classes > maxClasses {
		return fmt.Errorf("spec: classes %d: want [2, %d]", s.Classes, maxClasses)
	}
	if !(s.Dropout >= 0 && s.Dropout < 1) {
		return fmt.Errorf("spec: dropout %v: want [0, 1)", s.Dropout)
	}
	switch s.Arch {
	case LogReg:
		if len(s.Hidden) > 0 || s.Dropout > 0 {
			return fmt.Errorf("spec: logreg has no hidden layers or dropout")
		}
	case MLP:
		if len(s.Hidden) < 1 || len(s.Hidden) > maxHidden {
			return fmt.Errorf("spec: mlp needs 1 to %d hidden layers, got %d", maxHidden, len(s.Hidden))
		}
		for _, h := range s.Hidden {
			if h < 1 || h > maxWidth {
				return fmt.Errorf("spec: hidden width %d: want [1, %d]", h, maxWidth)
			}
		}
		if s.Activation != ReLU && s.Activation != Tanh {
			return fmt.Errorf("spec: activation %q: want relu or tanh", s.Activation)
		}
	case CNN:
		if err := s.validateImage(); err != nil {
			return err
		}
	default:
		return fmt.Errorf("spec: arch %q: want logreg, mlp or cnn", s.Arch)
	}
	if n := s.NumParams(); n > maxParams {
		return fmt.Errorf("spec: %d parameters exceed the limit %d", n, maxParams)
	}
	return nil
}

func (s Spec) validateImage() error {
	h, w, c := s.Image[0], s.Image[1], s.Image[2]
	if h < 1 || w < 1 || c < 1 || h*w*c != s.Inputs {
		return fmt.Errorf("spec: image %v does not match %d inputs", s.Image, s.Inputs)
	}
	// The two convolutions and pools must leave at least one pixel.
	if h < 14 || w < 14 {
		return fmt.Errorf("spec: image %dx%d is below the CNN's 14x14 minimum", h, w)
	}
	return nil
}

// NumParams is the number of parameters of the network s describes (the
// Spec must be valid apart from this count).
func (s Spec) NumParams() int {
	n := 0
	for _, l := range s.layers() {
		n += l.numParams()
	}
	return n
}

// layers builds the layer stack (without parameters bound).
func (s Spec) layers() []layer {
	switch s.Arch {
	case LogReg:
		out := s.Classes
		if out == 2 {
			out = 1
		}
		return []layer{&dense{in: s.Inputs, out: out, zeroInit: true}}
	case MLP:
		var ls []layer
		in := s.Inputs
		for _, h := range s.Hidden {
			ls = append(ls, &dense{in: in, out: h}, &activation{dim: h, tanh: s.Activation == Tanh})
			if s.Dropout > 0 {
				ls = append(ls, &dropout{dim: h, p: s.Dropout})
			}
			in = h
		}
		return append(ls, &dense{in: in, out: s.Classes})
	case CNN:
		return s.cnnLayers()
	}
	return nil
}

// cnnLayers is the Papernot et al. 2021 / Tramèr & Boneh 2021 network:
// conv 16@8×8 stride 2 padding 3, tanh, maxpool 2 stride 1, conv 32@4×4
// stride 2, tanh, maxpool 2 stride 1, dense → 32, tanh, dense → classes.
// On 28×28×1 inputs the flattened features are 4·4·32 = 512 and the
// network has 26 010 parameters.
func (s Spec) cnnLayers() []layer {
	in := shape{s.Image[0], s.Image[1], s.Image[2]}
	c1 := newConv(in, 8, 2, 3, 16)
	p1 := newMaxPool(c1.outShape(), 2, 1)
	c2 := newConv(p1.outShape(), 4, 2, 0, 32)
	p2 := newMaxPool(c2.outShape(), 2, 1)
	flat := p2.outDim()
	return []layer{
		c1, &activation{dim: c1.outDim(), tanh: true}, p1,
		c2, &activation{dim: c2.outDim(), tanh: true}, p2,
		&dense{in: flat, out: 32}, &activation{dim: 32, tanh: true},
		&dense{in: 32, out: s.Classes},
	}
}
