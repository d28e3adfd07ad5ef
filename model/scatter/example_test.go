package scatter_test

import (
	"fmt"
	"os"

	"github.com/dpal-dev/dpal/data"
	"github.com/dpal-dev/dpal/model/scatter"
)

// Scattering features of 28×28 images, as Tramèr & Boneh's ScatterNet
// models take them: 81 channels of 7×7 per image, group-normalised per
// image. Nothing here looks at other images, so it costs no privacy.
func ExampleFeatures() {
	img := make([]float64, 28*28)
	for i := 10; i < 18; i++ { // a vertical bar
		img[i*28+14] = 1
	}
	d := &data.Dataset{Name: "bars", X: [][]float64{img}, Class: []int{1}, ClassNames: []string{"0", "1"}}
	f, err := scatter.Features(d, scatter.MNIST)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(f.Name, f.Len(), "row of", f.Dim(), "features, class", f.Class[0])
	// Output: bars-scatter 1 row of 3969 features, class 1
}

// The features through the on-disk cache: the first call computes and
// stores them, the second reads them back, verified against the images'
// hash.
func ExampleCachedFeatures() {
	dir, err := os.MkdirTemp("", "scatter-cache")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	img := make([]float64, 28*28)
	img[14*28+14] = 1
	d := &data.Dataset{Name: "dot", X: [][]float64{img}, Class: []int{0}, ClassNames: []string{"0"}}
	for range 2 {
		f, status, err := scatter.CachedFeatures(d, scatter.MNIST, dir)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(status, f.Len(), "row of", f.Dim())
	}
	// Output:
	// miss 1 row of 3969
	// hit 1 row of 3969
}

func ExampleScattering_Transform() {
	s, err := scatter.New(28, 28, 2, 8)
	if err != nil {
		fmt.Println(err)
		return
	}
	img := make([]float64, 28*28)
	for i := range img {
		img[i] = 0.5
	}
	coef, err := s.Transform(nil, img)
	if err != nil {
		fmt.Println(err)
		return
	}
	h, w := s.OutSize()
	// A constant image has no edges: S0 is the constant, the wavelet
	// channels (zero-mean filters) are zero.
	fmt.Printf("%d channels of %d×%d; S0 = %.4f, S1 = %.4f\n", s.Channels(), h, w, coef[0], coef[h*w])
	// Output: 81 channels of 7×7; S0 = 0.5000, S1 = 0.0000
}
