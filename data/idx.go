package data

import (
	"encoding/binary"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
)

// IDX folder names under the data root, and the file names they share.
const (
	MNISTFolder        = "mnist"
	FashionMNISTFolder = "fashion_mnist"

	IDXTrainImages = "train-images-idx3-ubyte.gz"
	IDXTrainLabels = "train-labels-idx1-ubyte.gz"
	IDXTestImages  = "t10k-images-idx3-ubyte.gz"
	IDXTestLabels  = "t10k-labels-idx1-ubyte.gz"
)

// IDXHeader is the header of an IDX file of unsigned bytes.
type IDXHeader struct {
	Dims []int // e.g. [60000 28 28] for images, [60000] for labels
}

// Count returns the number of records (the first dimension).
func (h IDXHeader) Count() int { return h.Dims[0] }

// RecordSize returns the number of bytes per record.
func (h IDXHeader) RecordSize() int {
	n := 1
	for _, d := range h.Dims[1:] {
		n *= d
	}
	return n
}

// maxIDXBytes bounds the payload a header may announce, so a corrupt header
// cannot make the reader allocate without limit.
const maxIDXBytes = 1 << 31

// ParseIDXHeader reads an IDX header: two zero bytes, type 0x08 (unsigned
// byte; the only type MNIST uses), the number of dimensions, then one
// big-endian uint32 per dimension.
func ParseIDXHeader(r io.Reader) (IDXHeader, error) {
	var magic [4]byte
	if _, err := io.ReadFull(r, magic[:]); err != nil {
		return IDXHeader{}, fmt.Errorf("header: %w", err)
	}
	if magic[0] != 0 || magic[1] != 0 {
		return IDXHeader{}, fmt.Errorf("header: bad magic %#x, want 0x0000 08 nn", magic)
	}
	if magic[2] != 0x08 {
		return IDXHeader{}, fmt.Errorf("header: element type %#x, only 0x08 (unsigned byte) is supported", magic[2])
	}
	nd := int(magic[3])
	if nd < 1 || nd > 4 {
		return IDXHeader{}, fmt.Errorf("header: %d dimensions, want 1 to 4", nd)
	}
	h := IDXHeader{Dims: make([]int, nd)}
	total := 1
	for i := range h.Dims {
		var v uint32
		if err := binary.Read(r, binary.BigEndian, &v); err != nil {
			return IDXHeader{}, fmt.Errorf("header dimension %d: %w", i+1, err)
		}
		if v == 0 || v > maxIDXBytes {
			return IDXHeader{}, fmt.Errorf("header dimension %d: size %d out of range", i+1, v)
		}
		h.Dims[i] = int(v)
		total *= int(v)
		if total > maxIDXBytes {
			return IDXHeader{}, fmt.Errorf("header: %v announces more than %d bytes", h.Dims[:i+1], maxIDXBytes)
		}
	}
	return h, nil
}

// ReadIDX reads a gzipped IDX file of unsigned bytes: its header and payload.
// The payload must have exactly the announced length.
func ReadIDX(path string) (IDXHeader, []byte, error) {
	zr, err := OpenGzip(path)
	if err != nil {
		return IDXHeader{}, nil, err
	}
	defer zr.Close()
	h, body, err := readIDX(zr)
	if err != nil {
		return IDXHeader{}, nil, fmt.Errorf("%s: %w", path, err)
	}
	return h, body, nil
}

func readIDX(r io.Reader) (IDXHeader, []byte, error) {
	h, err := ParseIDXHeader(r)
	if err != nil {
		return h, nil, err
	}
	// The buffer grows with the bytes that arrive, not with what the
	// header announces: a corrupt or hostile header claiming 2 GiB over a
	// short file allocates about what the file holds (the limit stops one
	// byte past the announced length, to detect trailing data).
	want := h.Count() * h.RecordSize()
	body, err := io.ReadAll(io.LimitReader(r, int64(want)+1))
	switch {
	case err != nil:
		return h, nil, fmt.Errorf("payload: %d of %d bytes: %w", len(body), want, err)
	case len(body) < want:
		return h, nil, fmt.Errorf("payload: %d of %d bytes: %w", len(body), want, io.ErrUnexpectedEOF)
	case len(body) > want:
		return h, nil, fmt.Errorf("payload: data after the %d announced bytes", want)
	}
	return h, body, nil
}

// IDXPairBlock is the block side LoadIDXPair's callers use: 4×4 blocks,
// so a 28×28 image gives 7×7 = 49 features.
const IDXPairBlock = 4

// LoadIDXPair loads the images of labels a and b from an MNIST-format folder
// (MNIST or Fashion-MNIST; the folder holding the four *-ubyte.gz files).
// Y is −1 for a and +1 for b; Class is 0 for a and 1 for b.
//
// Preprocessing is one fixed map applied to each image alone, using no
// statistic of any split, so it costs no privacy and needs no public data:
// pixels/255, averaged over block×block squares (block 1 keeps the pixels;
// block must divide the image's sides), centred by the image's own mean
// over those features (a projection orthogonal to the all-ones vector: it
// removes the background every image shares, which a model without
// intercept would otherwise have to learn around), then projected onto the
// unit ℓ2 ball. Until issue 24 the rows were centred by the training
// split's mean and projected on its principal axes: statistics of the
// private data that no mechanism charged.
func LoadIDXPair(dir string, a, b int, block int) (train, test *Dataset, err error) {
	if a == b || a < 0 || b < 0 || a > 255 || b > 255 {
		return nil, nil, fmt.Errorf("label pair (%d, %d): want two different labels in 0..255", a, b)
	}
	trX, trY, shape, err := readIDXPair(dir, IDXTrainImages, IDXTrainLabels, a, b)
	if err != nil {
		return nil, nil, err
	}
	teX, teY, teShape, err := readIDXPair(dir, IDXTestImages, IDXTestLabels, a, b)
	if err != nil {
		return nil, nil, err
	}
	if teShape != shape {
		return nil, nil, fmt.Errorf("%s: training images are %d×%d, test images %d×%d", dir, shape[0], shape[1], teShape[0], teShape[1])
	}
	if block < 1 || shape[0]%block != 0 || shape[1]%block != 0 {
		return nil, nil, fmt.Errorf("pooling block %d: want a divisor of the image sides %d×%d", block, shape[0], shape[1])
	}
	names := []string{strconv.Itoa(a), strconv.Itoa(b)}
	base := filepath.Base(filepath.Clean(dir))
	train = pairDataset(fmt.Sprintf("%s-%dv%d-train", base, a, b), trX, trY, shape, block, names)
	test = pairDataset(fmt.Sprintf("%s-%dv%d-test", base, a, b), teX, teY, shape, block, names)
	return train, test, nil
}

// readIDXPair returns the images (pixels/255, one row each), the 0/1
// classes of labels a, b, and the images' rows×cols.
func readIDXPair(dir, images, labels string, a, b int) ([][]float64, []int, [2]int, error) {
	var shape [2]int
	ih, img, err := ReadIDX(filepath.Join(dir, images))
	if err != nil {
		return nil, nil, shape, err
	}
	lh, lab, err := ReadIDX(filepath.Join(dir, labels))
	if err != nil {
		return nil, nil, shape, err
	}
	if len(ih.Dims) != 3 || len(lh.Dims) != 1 {
		return nil, nil, shape, fmt.Errorf("%s/%s: want images n×rows×cols and labels n, got %v and %v", dir, images, ih.Dims, lh.Dims)
	}
	if ih.Count() != lh.Count() {
		return nil, nil, shape, fmt.Errorf("%s: %d images but %d labels", dir, ih.Count(), lh.Count())
	}
	shape = [2]int{ih.Dims[1], ih.Dims[2]}
	var idx, class []int
	for i, l := range lab {
		switch int(l) {
		case a:
			idx, class = append(idx, i), append(class, 0)
		case b:
			idx, class = append(idx, i), append(class, 1)
		}
	}
	d := ih.RecordSize()
	nb := 0
	for _, c := range class {
		nb += c
	}
	if nb == 0 || nb == len(class) {
		missing := a
		if nb == 0 {
			missing = b
		}
		return nil, nil, shape, fmt.Errorf("%s/%s: no images of label %d", dir, labels, missing)
	}
	x := make([][]float64, len(idx))
	pix := make([]float64, len(idx)*d)
	for r, i := range idx {
		row := pix[r*d : (r+1)*d : (r+1)*d]
		for j, p := range img[i*d : (i+1)*d] {
			row[j] = float64(p) / 255
		}
		x[r] = row
	}
	return x, class, shape, nil
}

// poolImage returns the image (rows×cols, row-major, pixels in [0, 1])
// averaged over block×block squares, less the mean of those averages: a
// fixed linear map, the same for every image.
func poolImage(img []float64, shape [2]int, block int) []float64 {
	pr, pc := shape[0]/block, shape[1]/block
	out := make([]float64, pr*pc)
	scale := 1 / float64(block*block)
	for i := range shape[0] {
		o := out[(i/block)*pc : (i/block+1)*pc]
		for j, v := range img[i*shape[1] : (i+1)*shape[1]] {
			o[j/block] += v * scale
		}
	}
	var mean float64
	for _, v := range out {
		mean += v
	}
	mean /= float64(len(out))
	for j := range out {
		out[j] -= mean
	}
	return out
}

func pairDataset(name string, x [][]float64, class []int, shape [2]int, block int, names []string) *Dataset {
	ds := &Dataset{Name: name, X: make([][]float64, len(x)), Y: make([]float64, len(x)), Class: class, ClassNames: names}
	pr, pc := shape[0]/block, shape[1]/block
	for j := range pr * pc {
		if block == 1 {
			ds.FeatureNames = append(ds.FeatureNames, fmt.Sprintf("pixel%d", j))
		} else {
			ds.FeatureNames = append(ds.FeatureNames, fmt.Sprintf("block_r%d_c%d", j/pc, j%pc))
		}
	}
	for i, img := range x {
		row := poolImage(img, shape, block)
		ProjectUnitBall(row)
		ds.X[i] = row
		ds.Y[i] = float64(2*class[i] - 1)
	}
	return ds
}

// pixels is img's records of d bytes as rows of conv(byte), in one
// allocation.
func pixels[T float32 | float64](img []byte, d int, conv func(byte) T) [][]T {
	pix := make([]T, len(img))
	for i, p := range img {
		pix[i] = conv(p)
	}
	rows := make([][]T, len(img)/d)
	for i := range rows {
		rows[i] = pix[i*d : (i+1)*d : (i+1)*d]
	}
	return rows
}

// LoadIDX loads every image of an MNIST-format folder (MNIST or
// Fashion-MNIST) with its class: Class is the label byte, ClassNames
// "0".."9" (or up to the largest label), Y is nil. Pixels are divided by
// 255 and nothing else: raw 28×28 images in [0, 1], row-major, for the
// DP-SGD models (whose CNN reads them as 28×28×1).
func LoadIDX(dir string) (train, test *Dataset, err error) {
	return loadIDX(dir, false)
}

// LoadIDX32 is LoadIDX with the images in float32 (X32, X nil: see
// Dataset.Float32), each pixel float32(float64(p)/255), LoadIDX's value
// rounded, without holding LoadIDX's float64 rows on the way (376 MB for
// MNIST's training images).
func LoadIDX32(dir string) (train, test *Dataset, err error) {
	return loadIDX(dir, true)
}

// loadIDX is LoadIDX, or LoadIDX32 with f32.
func loadIDX(dir string, f32 bool) (train, test *Dataset, err error) {
	base := filepath.Base(filepath.Clean(dir))
	if train, err = readIDXAll(dir, IDXTrainImages, IDXTrainLabels, base+"-train", f32); err != nil {
		return nil, nil, err
	}
	if test, err = readIDXAll(dir, IDXTestImages, IDXTestLabels, base+"-test", f32); err != nil {
		return nil, nil, err
	}
	if len(test.ClassNames) > len(train.ClassNames) {
		return nil, nil, fmt.Errorf("%s: test labels go up to %d, training labels only to %d", dir, len(test.ClassNames)-1, len(train.ClassNames)-1)
	}
	test.ClassNames = train.ClassNames
	return train, test, nil
}

// readIDXAll reads one part of an MNIST-format folder, its rows in X or,
// with f32, in X32.
func readIDXAll(dir, images, labels, name string, f32 bool) (*Dataset, error) {
	ih, img, err := ReadIDX(filepath.Join(dir, images))
	if err != nil {
		return nil, err
	}
	lh, lab, err := ReadIDX(filepath.Join(dir, labels))
	if err != nil {
		return nil, err
	}
	if len(ih.Dims) != 3 || len(lh.Dims) != 1 || ih.Count() != lh.Count() {
		return nil, fmt.Errorf("%s/%s: want n images n×rows×cols and n labels, got %v and %v", dir, images, ih.Dims, lh.Dims)
	}
	d := ih.RecordSize()
	ds := &Dataset{Name: name, Class: make([]int, ih.Count())}
	if f32 {
		ds.X32 = pixels[float32](img, d, func(p byte) float32 { return float32(float64(p) / 255) })
	} else {
		ds.X = pixels[float64](img, d, func(p byte) float64 { return float64(p) / 255 })
	}
	classes := 0
	for i := range ds.Class {
		ds.Class[i] = int(lab[i])
		classes = max(classes, int(lab[i])+1)
	}
	for c := range classes {
		ds.ClassNames = append(ds.ClassNames, strconv.Itoa(c))
	}
	for j := range d {
		ds.FeatureNames = append(ds.FeatureNames, fmt.Sprintf("pixel%d", j))
	}
	return ds, nil
}
