package data

import (
	"bytes"
	"embed"
)

// demoFS holds a stratified sample of the KDD Cup 99 files, made by
// demo/gen.go from kddcup.data_10_percent.gz and corrected.gz.
//
//go:embed demo/kdd_train.gz demo/kdd_test.gz demo/training_attack_types
var demoFS embed.FS

// Demo returns the bundled KDD Cup 99 sample (see demo/README.md): a
// stratified sample of the 10 % training file and of corrected.gz, stored as
// raw KDD lines and preprocessed by the same pipeline as LoadKDD with the
// zero KDDOptions, vocabularies and scaling fitted on the sample's training
// part. It needs no files outside the binary.
func Demo() (train, test *Dataset, err error) {
	return DemoOptions(KDDOptions{})
}

// DemoOptions is Demo with explicit preprocessing options.
func DemoOptions(opt KDDOptions) (train, test *Dataset, err error) {
	read := func(name string) []byte {
		b, err := demoFS.ReadFile(name)
		if err != nil {
			panic("data: embedded demo file missing: " + name) // a build defect, not user input
		}
		return b
	}
	train, test, err = LoadKDDReaders(
		NamedReader{"demo/kdd_train.gz", bytes.NewReader(read("demo/kdd_train.gz"))},
		NamedReader{"demo/kdd_test.gz", bytes.NewReader(read("demo/kdd_test.gz"))},
		NamedReader{"demo/training_attack_types", bytes.NewReader(read("demo/training_attack_types"))},
		opt)
	if err != nil {
		return nil, nil, err
	}
	train.Name, test.Name = "demo-train", "demo-test"
	return train, test, nil
}
