package data

import (
	"fmt"
	"os"
	"path/filepath"
)

// Source says where LoadLabelled reads a dataset from.
type Source struct {
	// Dir is the data root holding mnist/, fashion_mnist/ and kddcup99/.
	Dir string
	// File is a csv or libsvm dataset's file; TestFile its test part
	// (empty: a fixed 20 % of File, SplitTrainTest with seed 1).
	File, TestFile string
	// Float32 asks for the rows in float32 only (Dataset.X32, X nil), the
	// form a float32 trainer reads: mnist and fashion-mnist are read
	// straight into it (LoadIDX32), other datasets converted after loading
	// (Dataset.Float32).
	Float32 bool
}

// NoFileError is LoadLabelled's error for a csv or libsvm dataset without
// Source.File.
type NoFileError struct {
	// Dataset is the dataset's name: csv or libsvm.
	Dataset string
}

func (e *NoFileError) Error() string { return "data: " + e.Dataset + " needs a file" }

// LoadLabelled loads the training and test parts of a dataset with class
// labels, by the name dpal's DP-SGD commands use, and the image height,
// width and channels a CNN needs (zero for tabular data):
//
//   - mnist, fashion-mnist: LoadIDX from Dir's MNISTFolder or
//     FashionMNISTFolder, 28×28×1 images in [0, 1];
//   - kdd99-5class: LoadKDD with its five classes (normal, dos, probe,
//     r2l, u2r); test records of attacks unknown to the training file
//     (class "unknown") are dropped, as no model can learn them;
//   - csv, libsvm: File (a csv's label is its last column, 0 read as -1),
//     tested on TestFile or else on a fixed 20 % of File.
//
// With src.Float32 the rows are in float32 only (X32).
func LoadLabelled(name string, src Source) (train, test *Dataset, image [3]int, err error) {
	train, test, image, err = loadLabelled(name, src)
	if err == nil && src.Float32 {
		train.Float32() // a no-op for the images, read into X32 already
		test.Float32()
	}
	return train, test, image, err
}

// loadLabelled is LoadLabelled before the conversion to float32.
func loadLabelled(name string, src Source) (train, test *Dataset, image [3]int, err error) {
	switch name {
	case "mnist", "fashion-mnist":
		folder := MNISTFolder
		if name == "fashion-mnist" {
			folder = FashionMNISTFolder
		}
		train, test, err = loadIDX(filepath.Join(src.Dir, folder), src.Float32)
		return train, test, [3]int{28, 28, 1}, err
	case "kdd99-5class":
		train, test, err = loadKDD5(src.Dir)
		return train, test, image, err
	case "csv", "libsvm":
		train, test, err = loadTabular(name, src)
		return train, test, image, err
	}
	return nil, nil, image, fmt.Errorf("data: no labelled dataset %q (want mnist, fashion-mnist, kdd99-5class, csv or libsvm)", name)
}

// loadKDD5 is KDD Cup 99 with its five classes; test records of attacks
// unknown to the training file are dropped.
func loadKDD5(dir string) (train, test *Dataset, err error) {
	train, test, err = LoadKDD(dir, KDDOptions{})
	if err != nil {
		return nil, nil, err
	}
	var keep []int
	for i, c := range test.Class {
		if c < 5 {
			keep = append(keep, i)
		}
	}
	test = test.Subset(keep)
	train.ClassNames, test.ClassNames = KDDClassNames[:5], KDDClassNames[:5]
	return train, test, nil
}

// loadTabular reads src.File (and src.TestFile, else a fixed 80/20 split).
func loadTabular(name string, src Source) (train, test *Dataset, err error) {
	if src.File == "" {
		return nil, nil, &NoFileError{Dataset: name}
	}
	if train, err = readTabular(name, src.File); err != nil {
		return nil, nil, err
	}
	if src.TestFile != "" {
		test, err = readTabular(name, src.TestFile)
		return train, test, err
	}
	tr, te, err := SplitTrainTest(train.Len(), 0.2, 1)
	if err != nil {
		return nil, nil, err
	}
	return train.Subset(tr), train.Subset(te), nil
}

func readTabular(name, path string) (*Dataset, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	if name == "libsvm" {
		return LoadLibSVM(fh, 0)
	}
	return LoadCSV(fh, CSVOptions{Name: filepath.Base(path), LabelColumn: -1, ZeroIsNegative: true})
}
