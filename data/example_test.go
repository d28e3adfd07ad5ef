package data_test

import (
	"fmt"

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
