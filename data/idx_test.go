package data

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

func idxBytes(dims []uint32, body []byte) []byte {
	var b bytes.Buffer
	b.Write([]byte{0, 0, 8, byte(len(dims))})
	for _, d := range dims {
		binary.Write(&b, binary.BigEndian, d)
	}
	b.Write(body)
	return b.Bytes()
}

func TestParseIDXHeader(t *testing.T) {
	tests := []struct {
		name    string
		in      []byte
		want    []int
		wantErr string
	}{
		{"images", idxBytes([]uint32{3, 28, 28}, nil), []int{3, 28, 28}, ""},
		{"labels", idxBytes([]uint32{10}, nil), []int{10}, ""},
		{"bad magic", []byte{1, 0, 8, 1, 0, 0, 0, 1}, nil, "bad magic"},
		{"float type", []byte{0, 0, 0x0d, 1, 0, 0, 0, 1}, nil, "element type 0xd"},
		{"no dims", []byte{0, 0, 8, 0}, nil, "0 dimensions"},
		{"zero size", idxBytes([]uint32{0}, nil), nil, "size 0"},
		{"huge", idxBytes([]uint32{1 << 20, 1 << 20}, nil), nil, "announces more than"},
		{"truncated", []byte{0, 0, 8, 2, 0, 0, 0, 1}, nil, "dimension 2"},
		{"empty", nil, nil, "header: EOF"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, err := ParseIDXHeader(bytes.NewReader(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || len(h.Dims) != len(tc.want) {
				t.Fatalf("got %v, %v", h, err)
			}
			for i := range tc.want {
				if h.Dims[i] != tc.want[i] {
					t.Fatalf("dims %v, want %v", h.Dims, tc.want)
				}
			}
		})
	}
}

func TestReadIDXPayloadLength(t *testing.T) {
	if _, _, err := readIDX(bytes.NewReader(idxBytes([]uint32{2, 2}, []byte{1, 2, 3}))); err == nil ||
		!strings.Contains(err.Error(), "3 of 4 bytes") {
		t.Fatalf("short payload: %v", err)
	}
	if _, _, err := readIDX(bytes.NewReader(idxBytes([]uint32{2}, []byte{1, 2, 3}))); err == nil ||
		!strings.Contains(err.Error(), "data after") {
		t.Fatalf("long payload: %v", err)
	}
}

// TestReadIDXHugeHeader: a header announcing 2 GiB over a few bytes of
// payload fails after allocating about what arrived, not what it claims
// (the fuzzer once peaked at 6 GB on such inputs).
func TestReadIDXHugeHeader(t *testing.T) {
	in := idxBytes([]uint32{2048, 1024, 1024}, []byte{1, 2, 3})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, _, err := readIDX(bytes.NewReader(in))
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "3 of 2147483648 bytes") {
		t.Fatalf("error %v, want a short payload", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
		t.Errorf("allocated %d bytes for a 3-byte payload", alloc)
	}
}

func FuzzIDXHeader(f *testing.F) {
	f.Add(idxBytes([]uint32{3, 28, 28}, []byte{1, 2}))
	f.Add([]byte{0, 0, 8, 1, 0, 0, 0, 2, 5, 6})
	f.Fuzz(func(t *testing.T, in []byte) {
		h, body, err := readIDX(bytes.NewReader(in))
		if err != nil {
			return
		}
		if len(body) != h.Count()*h.RecordSize() || len(in) != 4+4*len(h.Dims)+len(body) {
			t.Fatalf("header %v, body %d, input %d", h.Dims, len(body), len(in))
		}
	})
}

// writeIDXDir writes a tiny MNIST-format folder: n images of side×side with
// labels cycling 0, 1, 2; pixel values depend on the label plus noise.
func writeIDXDir(t *testing.T, n, side int) string {
	t.Helper()
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(4, 5))
	for _, split := range []struct{ img, lab string }{{IDXTrainImages, IDXTrainLabels}, {IDXTestImages, IDXTestLabels}} {
		imgs := make([]byte, n*side*side)
		labs := make([]byte, n)
		for i := range n {
			labs[i] = byte(i % 3)
			for j := range side * side {
				imgs[i*side*side+j] = byte(min(255, int(labs[i])*60*(j%2)+r.IntN(50)))
			}
		}
		writeGz(t, filepath.Join(dir, split.img), idxBytes([]uint32{uint32(n), uint32(side), uint32(side)}, imgs))
		writeGz(t, filepath.Join(dir, split.lab), idxBytes([]uint32{uint32(n)}, labs))
	}
	return dir
}

func writeGz(t *testing.T, path string, b []byte) {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadIDXPairSynthetic(t *testing.T) {
	dir := writeIDXDir(t, 30, 4)
	tr, te, err := LoadIDXPair(dir, 2, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Len() != 20 || te.Len() != 20 || tr.Dim() != 4 || tr.FeatureNames[2] != "block_r1_c0" {
		t.Fatalf("rows %d/%d dim %d names %v", tr.Len(), te.Len(), tr.Dim(), tr.FeatureNames)
	}
	// Label 2 comes first in the pair, so it is −1 / class 0; the files alternate 0, 1, 2.
	if tr.Y[0] != 1 || tr.Class[0] != 1 || tr.Y[1] != -1 || tr.ClassNames[0] != "2" {
		t.Fatalf("labels %v classes %v names %v", tr.Y[:2], tr.Class[:2], tr.ClassNames)
	}
	for _, d := range []*Dataset{tr, te} {
		if err := d.Validate(); err != nil {
			t.Fatal(err)
		}
		if got := d.Describe(); got.MaxNorm > 1 || got.Positive != 10 {
			t.Fatalf("%+v", got)
		}
	}
	raw, _, err := LoadIDXPair(dir, 0, 2, 1)
	if err != nil || raw.Dim() != 16 || raw.FeatureNames[15] != "pixel15" {
		t.Fatalf("no pooling: %v %v", raw, err)
	}
	for _, bad := range []struct {
		a, b, k int
		want    string
	}{{1, 1, 2, "two different"}, {0, 7, 2, "no images of label 7"}, {0, 1, 3, "pooling block 3"}, {0, 1, 0, "pooling block 0"}, {8, 0, 2, "no images of label 8"}} {
		if _, _, err := LoadIDXPair(dir, bad.a, bad.b, bad.k); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("(%d,%d,%d): %v, want %q", bad.a, bad.b, bad.k, err, bad.want)
		}
	}
}

// TestLoadIDXPairDataIndependent (issue 24): the features are a fixed map
// of each image alone: replacing the training images changes no test row
// (the training-fitted PCA did), and a row is its image's 2×2 block means
// of pixel/255, less their mean, projected onto the unit ball.
func TestLoadIDXPairDataIndependent(t *testing.T) {
	dir := writeIDXDir(t, 30, 4)
	_, te, err := LoadIDXPair(dir, 0, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	// Other training images, same labels: every pixel of the train split inverted.
	_, img, err := ReadIDX(filepath.Join(dir, IDXTrainImages))
	if err != nil {
		t.Fatal(err)
	}
	for i := range img {
		img[i] = 255 - img[i]
	}
	writeGz(t, filepath.Join(dir, IDXTrainImages), idxBytes([]uint32{30, 4, 4}, img))
	tr2, te2, err := LoadIDXPair(dir, 0, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	for i := range te.X {
		for j := range te.X[i] {
			if te.X[i][j] != te2.X[i][j] {
				t.Fatalf("test row %d moved with the training images: %v, then %v", i, te.X[i], te2.X[i])
			}
		}
	}
	want := make([]float64, 4)
	var mean float64
	for p := range 16 {
		r, c := p/4, p%4
		want[(r/2)*2+c/2] += float64(img[p]) / 255 / 4
		mean += float64(img[p]) / 255 / 16
	}
	for j := range want {
		want[j] -= mean
	}
	ProjectUnitBall(want)
	for j := range want {
		if math.Abs(tr2.X[0][j]-want[j]) > 1e-15 {
			t.Fatalf("row 0: %v, want %v", tr2.X[0], want)
		}
	}
}

// TestLoadIDXPairReal checks counts and the shape on the real files.
func TestLoadIDXPairReal(t *testing.T) {
	dir := filepath.Join(testDataDir(t), "mnist")
	tr, te, err := LoadIDXPair(dir, 0, 9, IDXPairBlock)
	if err != nil {
		t.Fatal(err)
	}
	got, gotTe := tr.Describe(), te.Describe()
	if got.Rows != 11872 || got.Negative != 5923 || got.Dims != 49 || gotTe.Rows != 1989 || gotTe.Positive != 1009 {
		t.Fatalf("%+v %+v", got, gotTe)
	}
	if got.MaxNorm > 1 || gotTe.MaxNorm > 1 {
		t.Fatalf("norms %v %v", got.MaxNorm, gotTe.MaxNorm)
	}
}

func BenchmarkLoadIDXPair(b *testing.B) {
	dir := filepath.Join(testDataDir(b), "mnist")
	for b.Loop() {
		if _, _, err := LoadIDXPair(dir, 0, 9, IDXPairBlock); err != nil {
			b.Fatal(err)
		}
	}
}

func TestLoadIDXAllClasses(t *testing.T) {
	dir := filepath.Join(testDataDir(t), MNISTFolder)
	train, test, err := LoadIDX(dir)
	if err != nil {
		t.Fatal(err)
	}
	if train.Len() != 60000 || test.Len() != 10000 || train.Dim() != 784 || len(train.ClassNames) != 10 {
		t.Errorf("train %d×%d, test %d, classes %v", train.Len(), train.Dim(), test.Len(), train.ClassNames)
	}
	if _, _, err := LoadIDX(t.TempDir()); err == nil {
		t.Error("empty folder accepted")
	}
}

// LoadIDX32 gives LoadIDX's rows rounded to float32 (Dataset.Float32),
// labels and names alike, and so does LoadLabelled with Source.Float32.
func TestLoadIDX32(t *testing.T) {
	dir := writeIDXDir(t, 20, 28)
	want, wantTest, err := LoadIDX(dir)
	if err != nil {
		t.Fatal(err)
	}
	want.Float32()
	wantTest.Float32()
	got, gotTest, err := LoadIDX32(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range [][2]*Dataset{{got, want}, {gotTest, wantTest}} {
		if !reflect.DeepEqual(p[0], p[1]) {
			t.Errorf("%s: LoadIDX32 differs from LoadIDX rounded", p[1].Name)
		}
	}
}
