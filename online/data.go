package online

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"

	"github.com/dpal-dev/dpal/data"
)

// Data is a stream of records and a held-out test set for a run.
type Data struct {
	// Name names the source.
	Name string `json:"name"`
	// Train is the stream, in the order it is played; Test is held out.
	Train, Test []Example `json:"-"`
	// Dim is the feature dimension.
	Dim int `json:"dim"`
	// FeatureBound and LabelBound are the declared bounds the source's
	// preprocessing guarantees (‖v‖ ≤ 1 everywhere; |y| ≤ 1).
	FeatureBound float64 `json:"feature_bound"`
	LabelBound   float64 `json:"label_bound"`
	// Note says how the source was prepared.
	Note string `json:"note"`
}

// LoadData loads a named source for loss: "synthetic" (n records, or 10⁵,
// plus 10 % more as test; d = dim or 10), "beijing" (regression only; the
// last 10 % of the time-ordered stream is the test set), "kdd99" and
// "mnist09" (classification only; the training split shuffled by seed),
// or a CSV file (label ±1 in the last column, no header; the last 10 % is
// the test set; its declared bounds are 1 unless the caller overrides
// them, and a row outside them is rejected when played). dir is the data root; n > 0 keeps the first n records.
func LoadData(name, dir string, loss LossKind, n, dim int, seed uint64) (*Data, error) {
	regression := loss == Squared
	switch name {
	case "synthetic":
		if n <= 0 {
			n = SyntheticRecords
		}
		if dim <= 0 {
			dim = SyntheticDim
		}
		note := "JKT App. G.1 design: v ~ N(0, I/d) in the unit ball, ‖x*‖ = 1, noise sd 0.1"
		if regression {
			reg, _ := data.SyntheticRegression(n+n/10, dim, 0.1, seed)
			return splitTail(fromRegression(reg), name, dim, n, note), nil
		}
		ds := data.SyntheticClassification(n+n/10, dim, 0.1, seed)
		return splitTail(fromDataset(ds), name, dim, n, note+", y = sign"), nil
	case "beijing":
		if !regression {
			return nil, fmt.Errorf("beijing is a regression set: use --loss squared")
		}
		reg, err := data.LoadBeijing(dir)
		if err != nil {
			return nil, err
		}
		ex := fromRegression(reg)
		test := len(ex) / 10
		out := splitTail(ex, name, len(reg.FeatureNames), len(ex)-test, "12 stations merged in time order; target log1p(PM2.5)/log1p(999); last 10% held out")
		return truncate(out, n), nil
	case "kdd99", "mnist09":
		if regression {
			return nil, fmt.Errorf("%s is a classification set: use --loss logistic or hinge", name)
		}
		var train, test *data.Dataset
		var err error
		note := "KDD Cup 99 (10% file, corrected.gz as test), normal vs attack, shuffled"
		if name == "kdd99" {
			train, test, err = data.LoadKDD(dir, data.KDDOptions{})
		} else {
			train, test, err = data.LoadIDXPair(filepath.Join(dir, "mnist"), 0, 9, data.IDXPairBlock)
			note = "MNIST 0 vs 9, 4×4 pixel blocks (49 features), shuffled"
		}
		if err != nil {
			return nil, err
		}
		train = train.Subset(data.Permutation(train.Len(), seed))
		out := &Data{Name: name, Train: fromDataset(train), Test: fromDataset(test), Dim: train.Dim(), FeatureBound: 1, LabelBound: 1, Note: note}
		return truncate(out, n), nil
	}
	return loadCSV(name, n)
}

func loadCSV(path string, n int) (*Data, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--data: %q is not synthetic, beijing, kdd99 or mnist09, and not a readable file: %w", path, err)
	}
	defer f.Close()
	ds, err := data.LoadCSV(bufio.NewReader(f), data.CSVOptions{Name: path, LabelColumn: -1})
	if err != nil {
		return nil, err
	}
	ex := fromDataset(ds)
	out := splitTail(ex, path, ds.Dim(), len(ex)-len(ex)/10, "CSV file, label in the last column; last 10% held out")
	return truncate(out, n), nil
}

func fromRegression(r *data.Regression) []Example {
	out := make([]Example, r.Len())
	for i := range out {
		out[i] = Example{V: r.X[i], Y: r.Y[i]}
	}
	return out
}

func fromDataset(d *data.Dataset) []Example {
	out := make([]Example, d.Len())
	for i := range out {
		out[i] = Example{V: d.X[i], Y: d.Y[i]}
	}
	return out
}

// splitTail uses the first n records as the stream and the rest as test.
func splitTail(ex []Example, name string, dim, n int, note string) *Data {
	n = min(n, len(ex))
	return &Data{Name: name, Train: ex[:n], Test: ex[n:], Dim: dim, FeatureBound: 1, LabelBound: 1, Note: note}
}

// truncate keeps the first n training records (n ≤ 0: all).
func truncate(d *Data, n int) *Data {
	if n > 0 && n < len(d.Train) {
		d.Train = d.Train[:n]
	}
	return d
}
