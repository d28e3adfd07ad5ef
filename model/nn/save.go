package nn

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
)

// FileFormat and FileVersion identify a saved model. Version 1 is the JSON
// object
//
//	{"format": "dpal-nn", "version": 1,
//	 "spec": {"arch": "mlp", "inputs": 784, "classes": 10, "hidden": [256], "activation": "relu"},
//	 "class_names": ["0", …, "9"],
//	 "privacy": {…},
//	 "params": [θ_1, …, θ_P]}
//
// where params is the flat parameter vector in layer order: for each dense
// layer W (inputs × outputs, row-major) then b; for each convolution the
// kernel (kernel row, kernel column, input channel) × output channel,
// row-major, then b. privacy is free-form JSON that the trainer fills with
// the guarantee and its parameters (see dpsgd.Result); class_names is
// optional. A reader must reject other formats and versions.
const (
	FileFormat  = "dpal-nn"
	FileVersion = 1
)

// maxFileBytes bounds what Load reads, so a corrupt or hostile file cannot
// make it allocate without limit.
const maxFileBytes = 1 << 30

// Meta is what a model file carries besides the network.
type Meta struct {
	// ClassNames names the classes in label order (optional).
	ClassNames []string
	// Privacy is the trainer's record of the guarantee (JSON, optional).
	Privacy json.RawMessage
}

type file struct {
	Format     string          `json:"format"`
	Version    int             `json:"version"`
	Spec       Spec            `json:"spec"`
	ClassNames []string        `json:"class_names,omitempty"`
	Privacy    json.RawMessage `json:"privacy,omitempty"`
	Params     []float64       `json:"params"`
}

// Save writes n and meta in the version-1 format.
func (n *Net) Save(w io.Writer, meta Meta) error {
	if meta.ClassNames != nil && len(meta.ClassNames) != n.spec.Classes {
		return fmt.Errorf("nn: %d class names for %d classes", len(meta.ClassNames), n.spec.Classes)
	}
	for i, v := range n.params {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("nn: parameter %d is %v; refusing to save a diverged model", i, v)
		}
	}
	enc := json.NewEncoder(w)
	return enc.Encode(file{Format: FileFormat, Version: FileVersion, Spec: n.spec,
		ClassNames: meta.ClassNames, Privacy: meta.Privacy, Params: n.params})
}

// Load reads a model saved by Save, checking the format, version, spec,
// parameter count and that every parameter is finite.
func Load(r io.Reader) (*Net, Meta, error) {
	var f file
	dec := json.NewDecoder(io.LimitReader(r, maxFileBytes))
	if err := dec.Decode(&f); err != nil {
		return nil, Meta{}, fmt.Errorf("model file: %w", err)
	}
	if f.Format != FileFormat {
		return nil, Meta{}, fmt.Errorf("model file: format %q, want %q", f.Format, FileFormat)
	}
	if f.Version != FileVersion {
		return nil, Meta{}, fmt.Errorf("model file: version %d, this dpal reads version %d", f.Version, FileVersion)
	}
	n, err := build(f.Spec)
	if err != nil {
		return nil, Meta{}, fmt.Errorf("model file: %w", err)
	}
	if len(f.Params) != len(n.params) {
		return nil, Meta{}, fmt.Errorf("model file: %d parameters, %s needs %d", len(f.Params), f.Spec, len(n.params))
	}
	for i, v := range f.Params {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, Meta{}, fmt.Errorf("model file: parameter %d is not finite", i)
		}
	}
	if f.ClassNames != nil && len(f.ClassNames) != f.Spec.Classes {
		return nil, Meta{}, fmt.Errorf("model file: %d class names for %d classes", len(f.ClassNames), f.Spec.Classes)
	}
	if f.Privacy != nil && !json.Valid(f.Privacy) {
		return nil, Meta{}, errors.New("model file: privacy record is not valid JSON")
	}
	copy(n.params, f.Params)
	return n, Meta{ClassNames: f.ClassNames, Privacy: f.Privacy}, nil
}
