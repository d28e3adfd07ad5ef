package data_test

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/dpal-dev/dpal/data"
)

// Demo needs nothing outside the binary: a stratified KDD Cup 99 sample,
// preprocessed like LoadKDD.
func ExampleDemo() {
	train, test, err := data.Demo()
	if err != nil {
		fmt.Println(err)
		return
	}
	d := train.Describe()
	fmt.Println(d.Rows, d.Dims, d.Negative, d.Positive)
	fmt.Println(test.Len(), test.ClassNames)
	// Output:
	// 3176 116 597 2579
	// 1655 [normal dos probe r2l u2r unknown]
}

// LoadKDD reads the full files from the shared data folder; the zero options
// give 116 features, OneHotBinary with VocabFromTest the paper's 120.
func ExampleLoadKDD() {
	train, test, err := data.LoadKDD(data.DefaultDir, data.KDDOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(train.Len(), test.Len(), train.Dim()) // 494021 311029 116
	stream := data.Permutation(train.Len(), 1)        // a reproducible stream order
	fmt.Println(len(stream))
}

func ExampleSplitTrainTest() {
	train, test, err := data.SplitTrainTest(10, 0.3, 42)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(train), len(test))
	// Output: 7 3
}

// LoadCSV reads a numeric CSV with a ±1 label column; 0/1 labels need
// ZeroIsNegative, else a 0 label is an error naming its line.
func ExampleLoadCSV() {
	in := "age,income,label\n0.5,0.2,1\n0.1,0.9,0\n"
	d, err := data.LoadCSV(strings.NewReader(in), data.CSVOptions{Header: true, LabelColumn: -1, ZeroIsNegative: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(d.FeatureNames, d.X, d.Y)
	_, err = data.LoadCSV(strings.NewReader(in), data.CSVOptions{Header: true, LabelColumn: -1})
	fmt.Println(err)
	// Output:
	// [age income] [[0.5 0.2] [0.1 0.9]] [1 -1]
	// csv line 3 field 3 (label): label 0 is not −1 or +1 (set ZeroIsNegative, or --zero-is-negative, to read 0 as −1)
}

// LoadLibSVM densifies the sparse "label index:value" format.
func ExampleLoadLibSVM() {
	in := "+1 1:0.5 3:0.25\n-1 2:1\n"
	d, err := data.LoadLibSVM(strings.NewReader(in), 0) // 0: dimension = largest index
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(d.Dim(), d.X, d.Y)
	// Output: 3 [[0.5 0 0.25] [0 1 0]] [1 -1]
}

// LoadIDXPair needs the MNIST files from the shared data folder, so this
// example is compiled but not run.
func ExampleLoadIDXPair() {
	dir := filepath.Join(data.DefaultDir, data.MNISTFolder)
	train, test, err := data.LoadIDXPair(dir, 0, 9, data.IDXPairBlock) // digits 0 (−1) and 9 (+1), 4×4 blocks: 49 features
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(train.Len(), test.Len(), train.Dim())
}

// LoadNAB needs the NAB corpus from the shared data folder, so this example
// is compiled but not run.
func ExampleLoadNAB() {
	series, err := data.LoadNAB(data.DefaultDir)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range series[:min(3, len(series))] {
		fmt.Println(s.Name, len(s.Value), s.Anomalies())
	}
}
