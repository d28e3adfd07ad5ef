package nn

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/model/nn/internal/f32"
)

// testSpecs covers every layer type: both logistic regressions, ReLU and
// tanh MLPs of one to three layers and the CNN on a two-channel 14×14 image.
var testSpecs = []struct {
	name string
	spec Spec
}{
	{"logreg-binary", Spec{Arch: LogReg, Inputs: 5, Classes: 2}},
	{"logreg-multinomial", Spec{Arch: LogReg, Inputs: 5, Classes: 4}},
	{"mlp-tanh-1", Spec{Arch: MLP, Inputs: 6, Classes: 3, Hidden: []int{7}, Activation: Tanh}},
	{"mlp-relu-3", Spec{Arch: MLP, Inputs: 6, Classes: 3, Hidden: []int{8, 5, 4}, Activation: ReLU}},
	// Wide enough for the SIMD kernels' whole 6×16 tiles, and odd.
	{"mlp-relu-wide", Spec{Arch: MLP, Inputs: 40, Classes: 17, Hidden: []int{33}, Activation: ReLU}},
	{"cnn", Spec{Arch: CNN, Inputs: 14 * 14 * 2, Classes: 3, Image: [3]int{14, 14, 2}}},
}

// testBatch draws n rows in [−1, 1] and labels for s.
func testBatch(r *rng.Rand, s Spec, n int) ([][]float64, []int) {
	rows := make([][]float64, n)
	labels := make([]int, n)
	for i := range rows {
		rows[i] = make([]float64, s.Inputs)
		for j := range rows[i] {
			rows[i][j] = 2*r.Float64() - 1
		}
		labels[i] = r.IntN(s.Classes)
	}
	return rows, labels
}

// randomise moves the parameters off their initial values (logistic
// regression starts at zero, where every example's gradient looks alike).
func randomise(n *Net, r *rng.Rand) {
	for i := range n.params {
		n.params[i] += 0.3 * (2*r.Float64() - 1)
	}
}

// forEachRoute runs f as one subtest per route of the products (package
// f32: the SIMD kernels where the CPU has them, and blas32).
func forEachRoute(t *testing.T, f func(t *testing.T)) {
	defer f32.SetSIMD(f32.Route() != "blas32")
	for _, simd := range []bool{true, false} {
		if f32.SetSIMD(simd) == simd {
			t.Run(f32.Route(), f)
		}
	}
}

func TestPerExampleGradsFiniteDifferences(t *testing.T) {
	forEachRoute(t, testPerExampleGradsFiniteDifferences)
}

func testPerExampleGradsFiniteDifferences(t *testing.T) {
	for _, tc := range testSpecs {
		t.Run(tc.name, func(t *testing.T) {
			r := rng.Seeded(1)
			n, err := New(tc.spec, r)
			if err != nil {
				t.Fatal(err)
			}
			randomise(n, r)
			rows, labels := testBatch(r, tc.spec, 3)
			grads, err := n.PerExampleGrads(rows, labels, r)
			if err != nil {
				t.Fatal(err)
			}
			// The products run in float32 (relative rounding ~6e-8), so the
			// step is large and the tolerance float32's.
			const h = 1e-3
			// A max-pool window whose maximum changes within ±h bends the
			// loss: the CNN gets a looser bound (a wrong backward pass is
			// off by O(1), not O(1e-2)).
			tol := 2e-4
			if tc.spec.Arch == CNN {
				tol = 1e-2
			}
			for i := range rows {
				// Every parameter of the small nets, a stride through the CNN.
				for k := 0; k < n.NumParams(); k += 1 + n.NumParams()/300 {
					old := n.params[k]
					n.params[k] = old + h
					up, _ := n.Loss(rows[i:i+1], labels[i:i+1])
					n.params[k] = old - h
					down, _ := n.Loss(rows[i:i+1], labels[i:i+1])
					n.params[k] = old
					fd := (up - down) / (2 * h)
					if math.Abs(fd-grads[i][k]) > tol*(1+math.Abs(fd)) {
						t.Fatalf("example %d parameter %d: backprop %v, finite difference %v", i, k, grads[i][k], fd)
					}
				}
			}
		})
	}
}

func TestClippedGradMatchesMaterialised(t *testing.T) {
	forEachRoute(t, testClippedGradMatchesMaterialised)
}

func testClippedGradMatchesMaterialised(t *testing.T) {
	for _, tc := range testSpecs {
		for _, clip := range []float64{1e-3, 0.5, 1e6} {
			t.Run(tc.name, func(t *testing.T) {
				r := rng.Seeded(2)
				n, _ := New(tc.spec, r)
				randomise(n, r)
				rows, labels := testBatch(r, tc.spec, 9)
				want := make([]float64, n.NumParams())
				grads, _ := n.PerExampleGrads(rows, labels, r)
				for _, g := range grads {
					c := clipFactor(math.Sqrt(sqNorm64(g)), clip)
					for k, v := range g {
						want[k] += c * v
					}
				}
				got, err := n.ClippedGrad(rows, labels, clip, r)
				if err != nil {
					t.Fatal(err)
				}
				for k := range want {
					if math.Abs(got[k]-want[k]) > 1e-5*(1+math.Abs(want[k])) {
						t.Fatalf("clip %v parameter %d: fast path %v, materialised %v", clip, k, got[k], want[k])
					}
				}
				if clip == 1e-3 && math.Abs(math.Sqrt(sqNorm64(got))) > 9*clip*(1+1e-5) {
					t.Errorf("clipped sum of 9 examples has norm %v > 9·C", math.Sqrt(sqNorm64(got)))
				}
			})
		}
	}
}

func TestDropoutSameDrawsBothPaths(t *testing.T) {
	s := Spec{Arch: MLP, Inputs: 4, Classes: 3, Hidden: []int{16}, Activation: ReLU, Dropout: 0.5}
	n, _ := New(s, rng.Seeded(3))
	rows, labels := testBatch(rng.Seeded(4), s, 5)
	// One dropout layer draws its mask row by row, so both paths see the
	// same masks from the same seed.
	grads, _ := n.PerExampleGrads(rows, labels, rng.Seeded(5))
	want := make([]float64, n.NumParams())
	for _, g := range grads {
		for k, v := range g {
			want[k] += v
		}
	}
	got, _ := n.ClippedGrad(rows, labels, 1e9, rng.Seeded(5))
	for k := range want {
		if math.Abs(got[k]-want[k]) > 1e-5 {
			t.Fatalf("parameter %d: %v vs %v", k, got[k], want[k])
		}
	}
	p1, _ := n.Predict(rows)
	p2, _ := n.Predict(rows)
	if p1[0][0] != p2[0][0] {
		t.Error("prediction is random: dropout must be off")
	}
}

func TestCNNShape(t *testing.T) {
	s := Spec{Arch: CNN, Inputs: 784, Classes: 10, Image: [3]int{28, 28, 1}}
	if n := s.NumParams(); n != 26010 {
		t.Errorf("MNIST CNN has %d parameters, want 26 010", n)
	}
	if n := (Spec{Arch: MLP, Inputs: 784, Classes: 10, Hidden: []int{256}, Activation: ReLU}).NumParams(); n != 203530 {
		t.Errorf("MLP 784-256-10 has %d parameters, want 203 530", n)
	}
}

func TestEmptyBatchAndErrors(t *testing.T) {
	s := testSpecs[2].spec
	n, _ := New(s, rng.Seeded(1))
	g, err := n.ClippedGrad(nil, nil, 1, nil)
	if err != nil || sqNorm64(g) != 0 {
		t.Errorf("empty batch: %v, norm² %v", err, sqNorm64(g))
	}
	cases := []struct {
		name   string
		rows   [][]float64
		labels []int
		clip   float64
	}{
		{"short row", [][]float64{{1}}, []int{0}, 1},
		{"label out of range", [][]float64{make([]float64, 6)}, []int{3}, 1},
		{"negative label", [][]float64{make([]float64, 6)}, []int{-1}, 1},
		{"zero clip", [][]float64{make([]float64, 6)}, []int{0}, 0},
		{"NaN clip", [][]float64{make([]float64, 6)}, []int{0}, math.NaN()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := n.ClippedGrad(c.rows, c.labels, c.clip, nil); err == nil {
				t.Error("accepted")
			}
			if _, err := n.ClippedGrad32(Rows32(c.rows), c.labels, c.clip, nil); err == nil {
				t.Error("ClippedGrad32 accepted")
			}
		})
	}
	g32, err := n.ClippedGrad32(nil, nil, 1, nil)
	if err != nil || sqNorm(g32) != 0 {
		t.Errorf("ClippedGrad32, empty batch: %v, norm² %v", err, sqNorm(g32))
	}
}

// TestClippedGrad32SameAsClippedGrad: on inputs exact in float32 (multiples
// of 2^-8, like MNIST's pixel levels) the float32 path gives ClippedGrad's
// sum bit for bit, on every route and architecture.
func TestClippedGrad32SameAsClippedGrad(t *testing.T) {
	forEachRoute(t, func(t *testing.T) {
		for _, tc := range testSpecs {
			t.Run(tc.name, func(t *testing.T) {
				r := rng.Seeded(4)
				n, _ := New(tc.spec, r)
				randomise(n, r)
				rows, labels := testBatch(r, tc.spec, 11)
				for _, x := range rows {
					for j, v := range x {
						x[j] = math.Round(v*256) / 256
					}
				}
				want, err := n.ClippedGrad(rows, labels, 0.5, rng.Seeded(1))
				if err != nil {
					t.Fatal(err)
				}
				want = append([]float64(nil), want...)
				got, err := n.ClippedGrad32(Rows32(rows), labels, 0.5, rng.Seeded(1))
				if err != nil {
					t.Fatal(err)
				}
				for k, v := range got {
					if float64(v)+0 != want[k] {
						t.Fatalf("parameter %d: %v, ClippedGrad %v", k, v, want[k])
					}
				}
			})
		}
	})
}

func TestParseArch(t *testing.T) {
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{"logreg", "logreg", true}, {"cnn", "cnn", true}, {"mlp:256", "mlp:256", true},
		{"mlp:512,256", "mlp:512,256", true}, {"mlp", "", false}, {"mlp:0", "", false},
		{"mlp:a", "", false}, {"cnn:3", "", false}, {"svm", "", false},
	} {
		t.Run(c.in, func(t *testing.T) {
			s, err := ParseArch(c.in)
			if (err == nil) != c.ok || (c.ok && s.String() != c.want) {
				t.Errorf("ParseArch(%q) = %v, %v", c.in, s, err)
			}
		})
	}
}

func TestSaveLoad(t *testing.T) {
	for _, tc := range testSpecs {
		t.Run(tc.name, func(t *testing.T) {
			r := rng.Seeded(6)
			n, _ := New(tc.spec, r)
			randomise(n, r)
			var buf bytes.Buffer
			names := make([]string, tc.spec.Classes)
			for i := range names {
				names[i] = string(rune('a' + i))
			}
			if err := n.Save(&buf, Meta{ClassNames: names, Privacy: []byte(`{"epsilon":3}`)}); err != nil {
				t.Fatal(err)
			}
			m, meta, err := Load(&buf)
			if err != nil {
				t.Fatal(err)
			}
			rows, _ := testBatch(r, tc.spec, 4)
			p1, _ := n.Predict(rows)
			p2, _ := m.Predict(rows)
			for i := range p1 {
				for c := range p1[i] {
					if p1[i][c] != p2[i][c] {
						t.Fatalf("row %d class %d: %v after load, %v before", i, c, p2[i][c], p1[i][c])
					}
				}
			}
			if len(meta.ClassNames) != tc.spec.Classes || string(meta.Privacy) != `{"epsilon":3}` {
				t.Errorf("meta %+v", meta)
			}
		})
	}
}

func TestLoadRejects(t *testing.T) {
	for _, c := range []struct{ name, in string }{
		{"format", `{"format":"x","version":1}`},
		{"version", `{"format":"dpal-nn","version":2}`},
		{"spec", `{"format":"dpal-nn","version":1,"spec":{"arch":"logreg","inputs":0,"classes":2},"params":[]}`},
		{"count", `{"format":"dpal-nn","version":1,"spec":{"arch":"logreg","inputs":1,"classes":2},"params":[1]}`},
		{"names", `{"format":"dpal-nn","version":1,"spec":{"arch":"logreg","inputs":1,"classes":2},"class_names":["a"],"params":[1,2]}`},
		{"huge", `{"format":"dpal-nn","version":1,"spec":{"arch":"mlp","inputs":1000000,"classes":2,"hidden":[16000,16000,16000],"activation":"relu"},"params":[]}`},
		{"truncated", `{"format":"dpal-nn","version":1,"spec":`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, _, err := Load(strings.NewReader(c.in)); err == nil {
				t.Error("accepted")
			}
		})
	}
}

func FuzzLoad(f *testing.F) {
	var buf bytes.Buffer
	n, _ := New(testSpecs[3].spec, rng.Seeded(1))
	_ = n.Save(&buf, Meta{})
	f.Add(buf.Bytes())
	f.Add([]byte(`{"format":"dpal-nn","version":1,"spec":{"arch":"cnn","inputs":196,"classes":2,"image":[14,14,1]},"params":[]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, _, err := Load(bytes.NewReader(b))
		if err != nil {
			return
		}
		rows := [][]float64{make([]float64, m.Spec().Inputs)}
		if _, err := m.Predict(rows); err != nil {
			t.Fatalf("loaded model cannot predict: %v", err)
		}
	})
}

// TestClippedGradChunks checks that a batch run in chunks of clipChunk
// gives the sum of the whole batch in one pass: the same bits on the SIMD
// route (see clipChunk), within float32 rounding on blas32.
func TestClippedGradChunks(t *testing.T) {
	defer func(old int) { clipChunk = old }(clipChunk)
	specs := append(testSpecs, struct {
		name string
		spec Spec
	}{"mlp-dropout", Spec{Arch: MLP, Inputs: 6, Classes: 3, Hidden: []int{9}, Activation: Tanh, Dropout: 0.3}})
	forEachRoute(t, func(t *testing.T) {
		exact := f32.Route() != "blas32"
		for _, tc := range specs {
			t.Run(tc.name, func(t *testing.T) {
				r := rng.Seeded(5)
				n, _ := New(tc.spec, r)
				randomise(n, r)
				rows, labels := testBatch(r, tc.spec, 600)
				clipChunk = 1 << 20
				want, err := n.ClippedGrad(rows, labels, 0.5, rng.Seeded(2))
				if err != nil {
					t.Fatal(err)
				}
				want = append([]float64(nil), want...)
				clipChunk = 256
				got, err := n.ClippedGrad(rows, labels, 0.5, rng.Seeded(2))
				if err != nil {
					t.Fatal(err)
				}
				for k, v := range got {
					if exact && v != want[k] || math.Abs(v-want[k]) > 1e-4*(1+math.Abs(want[k])) {
						t.Fatalf("parameter %d: %v in chunks, %v in one pass", k, v, want[k])
					}
				}
			})
		}
	})
}

// TestMaxPoolFirstMaximum checks the pooling's values and arguments
// against a direct scan of each window (its first maximum in row-major
// order, by f32.OrderKey), on values with many ties, signed zeros and
// NaNs, or on random normal values: the 2×2 stride-1 pool (forward2, with
// the CNN's shapes too) and a general one.
func TestMaxPoolFirstMaximum(t *testing.T) {
	vals := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 2, float32(math.NaN()), float32(math.Inf(-1))}
	for _, c := range []struct {
		name         string
		in           shape
		size, stride int
		normal       bool
	}{
		{"2x2-stride1", shape{7, 6, 3}, 2, 1, false},
		{"2x2-stride1-wide", shape{14, 14, 16}, 2, 1, false},
		{"2x2-stride1-wide-normal", shape{14, 14, 16}, 2, 1, true},
		{"2x2-stride1-cnn2", shape{5, 5, 32}, 2, 1, false},
		{"2x2-stride1-cnn2-normal", shape{5, 5, 32}, 2, 1, true},
		{"3x3-stride2", shape{9, 7, 2}, 3, 2, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := rng.Seeded(9)
			m := newMaxPool(c.in, c.size, c.stride)
			x := matrix{5, c.in.size(), make([]float32, 5*c.in.size())}
			for i := range x.d {
				x.d[i] = vals[r.IntN(len(vals))]
				if c.normal {
					x.d[i] = float32(r.NormFloat64())
				}
			}
			y := m.forward(x, true, nil)
			ch := c.in.c
			for i := range x.r {
				for oy := range m.oh {
					for ox := range m.ow {
						for k := range ch {
							best := -1
							for ky := range c.size {
								for kx := range c.size {
									s := ((oy*c.stride+ky)*c.in.w+ox*c.stride+kx)*ch + k
									if best < 0 || f32.OrderKey(x.row(i)[s]) > f32.OrderKey(x.row(i)[best]) {
										best = s
									}
								}
							}
							o := (oy*m.ow+ox)*ch + k
							got, arg := y.row(i)[o], m.arg[i*m.outDim()+o]
							if int(arg) != best || math.Float32bits(got) != math.Float32bits(x.row(i)[best]) {
								t.Fatalf("example %d output %d: %v at %d, want %v at %d", i, o, got, arg, x.row(i)[best], best)
							}
						}
					}
				}
			}
		})
	}
}

// Classify32 and Accuracy32 on Rows32(rows) give what Classify and
// Accuracy give on rows: the float64 rows are rounded to float32 on load.
func TestClassify32SameAsClassify(t *testing.T) {
	for _, tc := range testSpecs {
		t.Run(tc.name, func(t *testing.T) {
			r := rng.Seeded(5)
			n, _ := New(tc.spec, r)
			randomise(n, r)
			rows, labels := testBatch(r, tc.spec, 300) // more than one predictChunk
			want, err := n.Classify(rows)
			if err != nil {
				t.Fatal(err)
			}
			got, err := n.Classify32(Rows32(rows))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Errorf("Classify32 %v, Classify %v", got, want)
			}
			a64, err64 := n.Accuracy(rows, labels)
			a32, err32 := n.Accuracy32(Rows32(rows), labels)
			if a64 != a32 || err64 != nil || err32 != nil {
				t.Errorf("Accuracy32 %v (%v), Accuracy %v (%v)", a32, err32, a64, err64)
			}
		})
	}
}

// TestSparseRouteSameBits checks that the first layer's sparse products
// (taken for inputs mostly zero, on the SIMD route) give the dense
// products' clipped sums and predictions bit for bit, over a batch of two
// chunks and either activation.
func TestSparseRouteSameBits(t *testing.T) {
	if !f32.CanSparse(64) {
		t.Skip("no sparse products on this route")
	}
	defer func(old float64) { sparseShare = old }(sparseShare)
	for _, c := range []struct {
		act    string
		inputs int // 320: load builds the sparse rows; 300: the layer does
	}{{ReLU, 320}, {Tanh, 320}, {ReLU, 300}} {
		t.Run(fmt.Sprintf("%s-%d", c.act, c.inputs), func(t *testing.T) {
			s := Spec{Arch: MLP, Inputs: c.inputs, Classes: 3, Hidden: []int{128}, Activation: c.act}
			r := rng.Seeded(7)
			n, _ := New(s, r)
			rows, labels := testBatch(r, s, 300)
			for _, x := range rows {
				for j := range x {
					if j%5 != 0 || j > 250 { // 17 % nonzero, whole zero blocks past 256
						x[j] = 0
					}
				}
			}
			x32 := Rows32(rows)
			run := func(share float64) ([]float32, [][]float64) {
				sparseShare = share
				g, err := n.ClippedGrad32(x32, labels, 0.5, nil)
				if err != nil {
					t.Fatal(err)
				}
				p, err := n.Predict(rows)
				if err != nil {
					t.Fatal(err)
				}
				return append([]float32(nil), g...), p
			}
			dg, dp := run(0)
			sg, sp := run(0.4)
			if !n.layers[0].(*dense).sparse {
				t.Fatal("the sparse route was not taken")
			}
			for k := range dg {
				if math.Float32bits(sg[k]) != math.Float32bits(dg[k]) {
					t.Fatalf("parameter %d: %v sparse, %v dense", k, sg[k], dg[k])
				}
			}
			for i := range dp {
				for c := range dp[i] {
					if sp[i][c] != dp[i][c] {
						t.Fatalf("row %d class %d: %v sparse, %v dense", i, c, sp[i][c], dp[i][c])
					}
				}
			}
		})
	}
}

// TestConvUnfoldReuse checks that U, whose padding taps forward never
// writes, is what a fresh layer builds after batches of other sizes and
// data (shrinking and growing the buffer).
func TestConvUnfoldReuse(t *testing.T) {
	r := rng.Seeded(4)
	in := shape{9, 8, 3}
	batch := func(n int) matrix {
		x := matrix{n, in.size(), make([]float32, n*in.size())}
		for i := range x.d {
			x.d[i] = float32(r.NormFloat64())
		}
		return x
	}
	reused := newConv(in, 4, 2, 3, 5)
	for _, n := range []int{4, 2, 6, 1} {
		x := batch(n)
		fresh := newConv(in, 4, 2, 3, 5)
		for _, c := range []*conv{reused, fresh} {
			c.wt.rows, c.wt.cols = c.taps(), c.out
			p := make([]float64, c.numParams())
			c.bind(p, make([]float32, len(p)), make([]float32, len(p)))
			c.forward(x, true, nil)
		}
		if !slices.Equal(reused.u.d, fresh.u.d) {
			t.Fatalf("batch of %d: U differs from a fresh layer's", n)
		}
	}
}
