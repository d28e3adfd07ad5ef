package streamrepro_test

import (
	"fmt"
	"os"

	"github.com/dpal-dev/dpal/data"
	"github.com/dpal-dev/dpal/repro/streamrepro"
)

// Example runs the smoke configuration on the bundled KDD sample and
// reports what it wrote.
func Example() {
	train, test, err := data.Demo()
	if err != nil {
		fmt.Println(err)
		return
	}
	dir, err := os.MkdirTemp("", "repro-stream")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	opt := streamrepro.QuickOptions()
	opt.Seed, opt.OutDir, opt.Perms, opt.Figures = 1, dir, 1, []int{3}
	sum, err := streamrepro.Run(opt, []streamrepro.Dataset{{
		Name: "demo", Train: train, Test: test, Updates: 20, Labels: 50, Fig4Labels: 20,
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	d := sum.Datasets[0]
	fmt.Println(len(d.Methods), "methods,", len(d.Figures), "figure, CV choices:", len(d.CV.Chosen))
	// Output: 5 methods, 1 figure, CV choices: 3
}
