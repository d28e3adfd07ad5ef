package scatter

import (
	"fmt"
	"math"

	"github.com/dpal-dev/dpal/data"
	"github.com/dpal-dev/dpal/internal/par"
)

// Config says which transform Features applies. Every field is public
// (none is estimated from data), so the features cost no privacy.
type Config struct {
	// Height and Width are the images' size (28×28 for MNIST).
	Height, Width int
	// J and L are the scales and angles of the transform (2 and 8 in
	// Tramèr & Boneh 2021).
	J, L int
	// Groups is the number of channel groups of the per-image group
	// normalisation (0: none); it must divide the number of channels.
	// Tramèr & Boneh tune it as a hyperparameter; with 81 channels,
	// 27 groups of 3 is one of the divisors.
	Groups int
}

// MNIST is the configuration of Tramèr & Boneh's ScatterNet on 28×28
// images: J = 2, L = 8 (81 channels of 7×7), group normalisation in 27
// groups of 3 channels.
var MNIST = Config{Height: 28, Width: 28, J: 2, L: 8, Groups: 27}

// Features returns a dataset whose rows are the scattering coefficients of
// d's rows (each a Height×Width image, row-major), group-normalised per
// image when c.Groups > 0, with d's labels. Images are transformed in
// parallel (internal/par); the result does not depend on the number of
// cores.
//
// Privacy: each output row is a fixed function of its own input row only,
// so training on the features with a DP mechanism keeps that mechanism's
// guarantee at no extra cost. Do not standardise the features with a
// dataset-wide mean or variance here: such statistics depend on every
// example and must be computed by a charged DP mechanism.
func Features(d *data.Dataset, c Config) (*data.Dataset, error) {
	s, err := c.scattering(d)
	if err != nil {
		return nil, err
	}
	out := &data.Dataset{Name: d.Name + "-scatter", X: make([][]float64, len(d.X)),
		Y: d.Y, Class: d.Class, ClassNames: d.ClassNames}
	flat := make([]float64, len(d.X)*s.Len()) // one allocation for all rows
	par.Chunks(len(d.X), 64, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			row := flat[i*s.Len() : (i+1)*s.Len() : (i+1)*s.Len()]
			s.transform(row, d.X[i])
			s.normalize(row, c.Groups)
			out.X[i] = row
		}
	})
	return out, nil
}

// Features32 is Features with every coefficient rounded to float32, held
// as float32 only (the dataset's X32, X nil): half the memory, and no
// float64 copy of all the features on the way (MNIST's 70 000 × 3 969
// coefficients are 2.2 GB in float64).
func Features32(d *data.Dataset, c Config) (*data.Dataset, error) {
	s, err := c.scattering(d)
	if err != nil {
		return nil, err
	}
	out := &data.Dataset{Name: d.Name + "-scatter", X32: make([][]float32, len(d.X)),
		Y: d.Y, Class: d.Class, ClassNames: d.ClassNames}
	flat := make([]float32, len(d.X)*s.Len())
	par.Chunks(len(d.X), 64, func(lo, hi int) {
		row := make([]float64, s.Len()) // transform overwrites every coefficient
		for i := lo; i < hi; i++ {
			s.transform(row, d.X[i])
			s.normalize(row, c.Groups)
			r32 := flat[i*s.Len() : (i+1)*s.Len() : (i+1)*s.Len()]
			for k, v := range row {
				r32[k] = float32(v)
			}
			out.X32[i] = r32
		}
	})
	return out, nil
}

// scattering is c's transform, after checking c and that d's rows are
// c's images.
func (c Config) scattering(d *data.Dataset) (*Scattering, error) {
	s, err := New(c.Height, c.Width, c.J, c.L)
	if err != nil {
		return nil, err
	}
	if c.Groups < 0 || (c.Groups > 0 && s.Channels()%c.Groups != 0) {
		return nil, fmt.Errorf("scatter: %d groups do not divide %d channels", c.Groups, s.Channels())
	}
	for i, x := range d.X {
		if len(x) != c.Height*c.Width {
			return nil, fmt.Errorf("scatter: %s row %d has %d values, want %d×%d images", d.Name, i, len(x), c.Height, c.Width)
		}
	}
	return s, nil
}

// groupEps is added to each group's variance before the square root, as
// PyTorch's GroupNorm does (its default eps), so that a constant group (a
// blank image) maps to zeros instead of dividing by zero.
const groupEps = 1e-5

// Normalize applies group normalisation without affine parameters (Wu & He
// 2018, as torch.nn.GroupNorm(groups, channels, affine=False)) to one
// image's coefficients f in place: the channels are cut into groups
// consecutive groups, and each group's values are shifted to mean 0 and
// scaled by 1/√(variance + 1e-5), the biased variance over the group's
// channels and pixels. The 1e-5 is absolute, as in PyTorch: a group whose
// variance is near it (second-order channels of a faint image in [0, 1])
// comes out with variance below 1. groups = 0 leaves f as it is; groups must divide
// Channels(). It uses this image's values only, so it costs no privacy.
func (s *Scattering) Normalize(f []float64, groups int) error {
	if len(f) != s.Len() {
		return fmt.Errorf("scatter: %d coefficients, want %d", len(f), s.Len())
	}
	if groups < 0 || (groups > 0 && s.Channels()%groups != 0) {
		return fmt.Errorf("scatter: %d groups do not divide %d channels", groups, s.Channels())
	}
	s.normalize(f, groups)
	return nil
}

// normalize is Normalize without the checks.
func (s *Scattering) normalize(f []float64, groups int) {
	if groups == 0 {
		return
	}
	size := len(f) / groups
	for g := range groups {
		x := f[g*size : (g+1)*size]
		var mean float64
		for _, v := range x {
			mean += v
		}
		mean /= float64(size)
		var ss float64
		for _, v := range x {
			ss += (v - mean) * (v - mean)
		}
		inv := 1 / math.Sqrt(ss/float64(size)+groupEps)
		for i, v := range x {
			x[i] = (v - mean) * inv
		}
	}
}
