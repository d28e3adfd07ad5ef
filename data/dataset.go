package data

import (
	"errors"
	"fmt"
	"math"

	"github.com/dpal-dev/dpal/vec"
)

// Dataset is a labelled table of preprocessed feature rows.
type Dataset struct {
	// Name identifies the dataset and split, e.g. "kdd99-train".
	Name string
	// X holds the rows; every row has the same length, Dim(). Rows may share
	// memory (identical records, Subset), so treat them as read-only and
	// copy a row before changing it.
	X [][]float64
	// X32, if not nil, holds the rows in float32 instead of X, which is
	// then nil (Float32): the form a float32 trainer (dpsgd, model/nn)
	// reads, held once at half the memory. Code that reads X must not be
	// given such a dataset.
	X32 [][]float32
	// Y holds the binary label of each row, −1 or +1 (nil for unlabelled data).
	Y []float64
	// Class holds a multiclass label index into ClassNames (nil if none).
	Class []int
	// ClassNames names the classes that Class indexes.
	ClassNames []string
	// FeatureNames names the columns of X.
	FeatureNames []string
}

// Dim returns the number of features per row (0 for an empty dataset
// without feature names).
func (d *Dataset) Dim() int {
	switch {
	case len(d.X) > 0:
		return len(d.X[0])
	case len(d.X32) > 0:
		return len(d.X32[0])
	}
	return len(d.FeatureNames)
}

// Len returns the number of rows (of X, or of X32 when X is nil).
func (d *Dataset) Len() int {
	if d.X == nil {
		return len(d.X32)
	}
	return len(d.X)
}

// Float32 replaces X by X32, its rows rounded to float32 in one
// allocation, and drops X, so that a trainer that reads float32 holds the
// rows once (the float64 rows of MNIST's 60 000 images are 376 MB, their
// float32 copy 188 MB). Rows that share memory in X (Subset) get their own
// copies. A dataset already in float32 is left as it is.
func (d *Dataset) Float32() {
	if d.X == nil {
		return
	}
	size := 0
	for _, x := range d.X {
		size += len(x)
	}
	all, out := make([]float32, size), make([][]float32, len(d.X))
	for i, x := range d.X {
		row := all[:len(x):len(x)]
		for k, v := range x {
			row[k] = float32(v)
		}
		out[i], all = row, all[len(x):]
		d.X[i] = nil // frees the row as soon as nothing else holds it
	}
	d.X, d.X32 = nil, out
}

// Description summarises a dataset for people and scripts.
type Description struct {
	// Name is the dataset's name.
	Name string `json:"name"`
	// Rows is the number of rows.
	Rows int `json:"rows"`
	// Dims is the feature dimension.
	Dims int `json:"dims"`
	// Positive is the number of rows labelled +1.
	Positive int `json:"positive"`
	// Negative is the number of rows labelled −1.
	Negative int `json:"negative"`
	// MaxNorm is the largest ℓ2 norm of a row.
	MaxNorm float64 `json:"max_norm"`
	// Classes counts the rows of each named class, in ClassNames order.
	Classes []ClassCount `json:"classes,omitempty"`
}

// ClassCount is the number of rows of one class.
type ClassCount struct {
	// Name is the class name.
	Name string `json:"name"`
	// Count is the number of rows of the class.
	Count int `json:"count"`
}

// Describe counts rows, dimensions, label balance and classes.
func (d *Dataset) Describe() Description {
	out := Description{Name: d.Name, Rows: d.Len(), Dims: d.Dim()}
	for _, y := range d.Y {
		if y > 0 {
			out.Positive++
		} else {
			out.Negative++
		}
	}
	for _, x := range d.X {
		out.MaxNorm = math.Max(out.MaxNorm, vec.Norm(x))
	}
	if d.Class != nil && len(d.ClassNames) > 0 {
		counts := make([]int, len(d.ClassNames))
		for _, c := range d.Class {
			if c >= 0 && c < len(counts) {
				counts[c]++
			}
		}
		for i, name := range d.ClassNames {
			out.Classes = append(out.Classes, ClassCount{Name: name, Count: counts[i]})
		}
	}
	return out
}

// Subset returns the rows idx in that order. The rows share memory with d;
// the label slices are new.
func (d *Dataset) Subset(idx []int) *Dataset {
	out := &Dataset{
		Name:         d.Name,
		X:            make([][]float64, len(idx)),
		ClassNames:   d.ClassNames,
		FeatureNames: d.FeatureNames,
	}
	if d.Y != nil { // multi-class sets (LoadIDX) carry only Class
		out.Y = make([]float64, len(idx))
	}
	if d.Class != nil {
		out.Class = make([]int, len(idx))
	}
	for i, j := range idx {
		out.X[i] = d.X[j]
		if d.Y != nil {
			out.Y[i] = d.Y[j]
		}
		if d.Class != nil {
			out.Class[i] = d.Class[j]
		}
	}
	return out
}

// Validate checks that every row has the same dimension, finite entries, a
// finite norm and a label of ±1, naming the first offending row.
func (d *Dataset) Validate() error {
	if d.Y != nil && len(d.Y) != len(d.X) {
		return fmt.Errorf("%s: %d rows but %d labels", d.Name, len(d.X), len(d.Y))
	}
	if d.Class != nil && len(d.Class) != len(d.X) {
		return fmt.Errorf("%s: %d rows but %d class labels", d.Name, len(d.X), len(d.Class))
	}
	dim := d.Dim()
	for i, x := range d.X {
		if len(x) != dim {
			return fmt.Errorf("%s row %d: dimension %d, want %d", d.Name, i, len(x), dim)
		}
		for j, v := range x {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("%s row %d feature %d: not finite: %v", d.Name, i, j, v)
			}
		}
		if err := checkNorm(x); err != nil {
			return fmt.Errorf("%s row %d: %w", d.Name, i, err)
		}
		if d.Y != nil && d.Y[i] != 1 && d.Y[i] != -1 {
			return fmt.Errorf("%s row %d: label %v is not ±1", d.Name, i, d.Y[i])
		}
	}
	return nil
}

// checkNorm refuses a row whose norm overflows float64, though each entry
// is finite: every norm and projection downstream (vec) would see +Inf,
// and projecting onto a ball would silently zero the row.
func checkNorm(x []float64) error {
	if n := vec.Norm(x); math.IsInf(n, 0) {
		return errors.New("the row's norm overflows float64 (entries beyond about 1e154 square to +Inf): rescale the data")
	}
	return nil
}

// ProjectUnitBall scales x in place onto the unit ℓ2 ball (vec.ProjectBall
// with radius 1): rows already inside are unchanged, and a projected row's
// computed norm is at most 1 exactly.
func ProjectUnitBall(x []float64) { vec.ProjectBall(x, 1) }
