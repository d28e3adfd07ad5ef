package data

import (
	"encoding/binary"
	"fmt"
	"io"
	"path/filepath"
	"strconv"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"
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

// LoadIDXPair loads the images of labels a and b from an MNIST-format folder
// (MNIST or Fashion-MNIST; the folder holding the four *-ubyte.gz files).
// Y is −1 for a and +1 for b; Class is 0 for a and 1 for b.
//
// Preprocessing: pixels/255, centred by the training mean, projected on the
// first pcaDim principal components of the training images (gonum;
// pcaDim 0 keeps the 784 centred pixels), then each row projected onto the
// unit ℓ2 ball. Test images use the training mean and components.
func LoadIDXPair(dir string, a, b int, pcaDim int) (train, test *Dataset, err error) {
	if a == b || a < 0 || b < 0 || a > 255 || b > 255 {
		return nil, nil, fmt.Errorf("label pair (%d, %d): want two different labels in 0..255", a, b)
	}
	trX, trY, err := readIDXPair(dir, IDXTrainImages, IDXTrainLabels, a, b)
	if err != nil {
		return nil, nil, err
	}
	teX, teY, err := readIDXPair(dir, IDXTestImages, IDXTestLabels, a, b)
	if err != nil {
		return nil, nil, err
	}
	_, d := trX.Dims()
	if pcaDim < 0 || pcaDim > d {
		return nil, nil, fmt.Errorf("PCA dimension %d: want 0..%d", pcaDim, d)
	}
	mean := columnMeans(trX)
	centre(trX, mean)
	centre(teX, mean)
	var proj *mat.Dense
	if pcaDim > 0 {
		if proj, err = principalAxes(trX, pcaDim); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", dir, err)
		}
	}
	names := []string{strconv.Itoa(a), strconv.Itoa(b)}
	base := filepath.Base(filepath.Clean(dir))
	train = pairDataset(fmt.Sprintf("%s-%dv%d-train", base, a, b), trX, trY, proj, names)
	test = pairDataset(fmt.Sprintf("%s-%dv%d-test", base, a, b), teX, teY, proj, names)
	return train, test, nil
}

// readIDXPair returns the images (pixels/255) and 0/1 classes of labels a, b.
func readIDXPair(dir, images, labels string, a, b int) (*mat.Dense, []int, error) {
	ih, img, err := ReadIDX(filepath.Join(dir, images))
	if err != nil {
		return nil, nil, err
	}
	lh, lab, err := ReadIDX(filepath.Join(dir, labels))
	if err != nil {
		return nil, nil, err
	}
	if len(ih.Dims) != 3 || len(lh.Dims) != 1 {
		return nil, nil, fmt.Errorf("%s/%s: want images n×rows×cols and labels n, got %v and %v", dir, images, ih.Dims, lh.Dims)
	}
	if ih.Count() != lh.Count() {
		return nil, nil, fmt.Errorf("%s: %d images but %d labels", dir, ih.Count(), lh.Count())
	}
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
		return nil, nil, fmt.Errorf("%s/%s: no images of label %d", dir, labels, missing)
	}
	x := mat.NewDense(len(idx), d, nil)
	for r, i := range idx {
		row := x.RawRowView(r)
		for j, p := range img[i*d : (i+1)*d] {
			row[j] = float64(p) / 255
		}
	}
	return x, class, nil
}

// principalAxes returns the d×k matrix of the top-k principal axes of the
// rows of x: eigenvectors of their covariance (stat.CovarianceMatrix,
// mat.EigenSym), by decreasing eigenvalue: with n ≫ d this works on a d×d
// matrix where stat.PC factorises the n×d data.
func principalAxes(x *mat.Dense, k int) (*mat.Dense, error) {
	_, d := x.Dims()
	var cov mat.SymDense
	stat.CovarianceMatrix(&cov, x, nil)
	var eig mat.EigenSym
	if !eig.Factorize(&cov, true) {
		return nil, fmt.Errorf("PCA: eigendecomposition did not converge")
	}
	var vecs mat.Dense
	eig.VectorsTo(&vecs)
	// EigenSym orders eigenvalues ascending; take the last k columns reversed.
	axes := mat.NewDense(d, k, nil)
	for j := range k {
		axes.SetCol(j, mat.Col(nil, d-1-j, &vecs))
	}
	return axes, nil
}

func columnMeans(x *mat.Dense) []float64 {
	n, d := x.Dims()
	mean := make([]float64, d)
	for i := range n {
		for j, v := range x.RawRowView(i) {
			mean[j] += v
		}
	}
	for j := range mean {
		mean[j] /= float64(n)
	}
	return mean
}

func centre(x *mat.Dense, mean []float64) {
	n, _ := x.Dims()
	for i := range n {
		row := x.RawRowView(i)
		for j := range row {
			row[j] -= mean[j]
		}
	}
}

func pairDataset(name string, x *mat.Dense, class []int, proj *mat.Dense, names []string) *Dataset {
	if proj != nil {
		var z mat.Dense
		z.Mul(x, proj)
		x = &z
	}
	n, d := x.Dims()
	ds := &Dataset{Name: name, X: make([][]float64, n), Y: make([]float64, n), Class: class, ClassNames: names}
	for j := range d {
		if proj != nil {
			ds.FeatureNames = append(ds.FeatureNames, fmt.Sprintf("pc%d", j+1))
		} else {
			ds.FeatureNames = append(ds.FeatureNames, fmt.Sprintf("pixel%d", j))
		}
	}
	for i := range n {
		row := x.RawRowView(i)[:d:d]
		ProjectUnitBall(row)
		ds.X[i] = row
		ds.Y[i] = float64(2*class[i] - 1)
	}
	return ds
}

// LoadIDX loads every image of an MNIST-format folder (MNIST or
// Fashion-MNIST) with its class: Class is the label byte, ClassNames
// "0".."9" (or up to the largest label), Y is nil. Pixels are divided by
// 255 and nothing else: raw 28×28 images in [0, 1], row-major, for the
// DP-SGD models (whose CNN reads them as 28×28×1).
func LoadIDX(dir string) (train, test *Dataset, err error) {
	base := filepath.Base(filepath.Clean(dir))
	if train, err = readIDXAll(dir, IDXTrainImages, IDXTrainLabels, base+"-train"); err != nil {
		return nil, nil, err
	}
	if test, err = readIDXAll(dir, IDXTestImages, IDXTestLabels, base+"-test"); err != nil {
		return nil, nil, err
	}
	if len(test.ClassNames) > len(train.ClassNames) {
		return nil, nil, fmt.Errorf("%s: test labels go up to %d, training labels only to %d", dir, len(test.ClassNames)-1, len(train.ClassNames)-1)
	}
	test.ClassNames = train.ClassNames
	return train, test, nil
}

func readIDXAll(dir, images, labels, name string) (*Dataset, error) {
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
	ds := &Dataset{Name: name, X: make([][]float64, ih.Count()), Class: make([]int, ih.Count())}
	pix := make([]float64, len(img))
	for i, p := range img {
		pix[i] = float64(p) / 255
	}
	classes := 0
	for i := range ds.X {
		ds.X[i] = pix[i*d : (i+1)*d : (i+1)*d]
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
