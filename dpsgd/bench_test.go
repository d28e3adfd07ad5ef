package dpsgd

import (
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"testing"

	"github.com/dpal-dev/dpal/data"
	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/mech"
	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/model/nn"
)

// mnistTrain loads MNIST's training set from $DPAL_DATA_DIR or
// ../../shared/data, in float32, or skips.
func mnistTrain(b *testing.B) Data {
	dir := os.Getenv("DPAL_DATA_DIR")
	if dir == "" {
		dir = filepath.Join("..", "..", "shared", "data")
	}
	train, _, err := data.LoadIDX(filepath.Join(dir, data.MNISTFolder))
	if err != nil {
		b.Skipf("MNIST not available: %v", err)
	}
	return Data{X32: nn.Rows32(train.X), Labels: train.Class} // converted once, at load
}

// scatterDim is the length of a ScatterNet feature row of a 28×28 image
// (model/scatter.MNIST: 81 channels of 7×7), and scatterRows the rows of
// the benchmarks' stand-in for those features.
const (
	scatterDim  = 3969
	scatterRows = 16384
)

// benchData is mnist for 784 inputs, else (logistic regression on
// scatterDim features) the first scatterRows records with rows of dim
// values, each the record's pixels repeated: the shape of the ScatterNet
// features (the cost of a dense model depends on the shape only) without
// the minute of computing them, and cheap enough not to count in the CPU
// time bench/torch_mlp.py measures. 16 384 rows (260 MB) rather than
// 60 000 (950 MB) spare the shared machine's memory.
func benchData(mnist Data, dim int) Data {
	if dim == len(mnist.X32[0]) {
		return mnist
	}
	n := min(scatterRows, len(mnist.X32))
	flat := make([]float32, n*dim)
	out := Data{X32: make([][]float32, n), Labels: mnist.Labels[:n]}
	for i := range out.X32 {
		row := flat[i*dim : (i+1)*dim : (i+1)*dim]
		for k := 0; k < dim; k += len(mnist.X32[i]) {
			copy(row[k:], mnist.X32[i])
		}
		out.X32[i] = row
	}
	return out
}

// BenchmarkEpoch times one full DP-SGD epoch on MNIST (logreg-3969-10: on
// benchData's scatter-shaped rows) (batch 256, σ 1.1,
// C 1, SGD): sampling, clipping, noise and update included. ex/s counts
// expected examples (steps × batch).
func BenchmarkEpoch(b *testing.B) {
	mnist := mnistTrain(b)
	for _, c := range []struct {
		name string
		spec nn.Spec
	}{
		{"logreg-784-10", nn.Spec{Arch: nn.LogReg, Inputs: 784, Classes: 10}},
		{"logreg-3969-10", nn.Spec{Arch: nn.LogReg, Inputs: scatterDim, Classes: 10}},
		{"mlp-784-256-10", nn.Spec{Arch: nn.MLP, Inputs: 784, Classes: 10, Hidden: []int{256}, Activation: nn.ReLU}},
		{"mlp-784-256-10-tanh", nn.Spec{Arch: nn.MLP, Inputs: 784, Classes: 10, Hidden: []int{256}, Activation: nn.Tanh}},
		{"cnn", nn.Spec{Arch: nn.CNN, Inputs: 784, Classes: 10, Image: [3]int{28, 28, 1}}},
	} {
		b.Run(c.name, func(b *testing.B) {
			d := benchData(mnist, c.spec.Inputs)
			n := len(d.X32)
			r := rng.Seeded(1)
			net, _ := nn.New(c.spec, r)
			tr, err := New(net, Config{NoiseMultiplier: 1.1, Clip: 1, LR: 0.1})
			if err != nil {
				b.Fatal(err)
			}
			steps := n / 256
			groups := []Group{{Name: "all", Records: all(n), Rate: 256 / float64(n)}}
			idle0, total0 := idleCPU()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				led, _ := ledger.New(account.Budget{Epsilon: 1e6, Delta: 1e-5})
				if _, err := tr.Run(led, r, d, groups, steps, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			idle1, total1 := idleCPU()
			b.ReportMetric(float64(steps*256*b.N)/b.Elapsed().Seconds(), "ex/s")
			b.ReportMetric(100*(idle1-idle0)/(total1-total0), "idle%")
			b.ReportMetric(peakRSS(), "peak-RSS-MB")
		})
	}
}

// BenchmarkNonPrivate times one epoch of the non-private twin
// (NonPrivate: the same sampling, batch 256 and SGD, no clipping or noise)
// of BenchmarkEpoch's models: the reference a private epoch's cost is
// compared with where PyTorch is not installed (not named Epoch…, so that
// bench/torch_mlp.py's -bench Epoch/… patterns leave it out).
func BenchmarkNonPrivate(b *testing.B) {
	mnist := mnistTrain(b)
	for _, c := range []struct {
		name string
		spec nn.Spec
	}{
		{"logreg-3969-10", nn.Spec{Arch: nn.LogReg, Inputs: scatterDim, Classes: 10}},
		{"mlp-784-256-10", nn.Spec{Arch: nn.MLP, Inputs: 784, Classes: 10, Hidden: []int{256}, Activation: nn.ReLU}},
		{"cnn", nn.Spec{Arch: nn.CNN, Inputs: 784, Classes: 10, Image: [3]int{28, 28, 1}}},
	} {
		b.Run(c.name, func(b *testing.B) {
			d := benchData(mnist, c.spec.Inputs)
			n := len(d.X32)
			r := rng.Seeded(1)
			net, _ := nn.New(c.spec, r)
			tr, err := NewNonPrivate(net, Config{LR: 0.1})
			if err != nil {
				b.Fatal(err)
			}
			steps := n / 256
			groups := []Group{{Name: "all", Records: all(n), Rate: 256 / float64(n)}}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := tr.Run(r, d, groups, steps, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(steps*256*b.N)/b.Elapsed().Seconds(), "ex/s")
			b.ReportMetric(peakRSS(), "peak-RSS-MB")
		})
	}
}

// idleCPU returns the runtime's estimates of the CPU time its Ps have had
// nothing to run and of GOMAXPROCS × wall time, both since the start: the
// share of the cores a run leaves idle (work spinning counts as busy, and
// so does time the OS gave to other processes). A GC first brings the
// estimates up to date. The first run after -cpu changes GOMAXPROCS can
// show a few percent carried over from before the change (seen with
// -benchtime 1x); later runs do not.
func idleCPU() (idle, total float64) {
	runtime.GC()
	s := []metrics.Sample{{Name: "/cpu/classes/idle:cpu-seconds"}, {Name: "/cpu/classes/total:cpu-seconds"}}
	metrics.Read(s)
	return s[0].Value.Float64(), s[1].Value.Float64()
}

// BenchmarkNoise is one step's noise for the MLP's 203 530 parameters.
func BenchmarkNoise(b *testing.B) {
	m, _ := mech.NewGaussianVector(1.1, 1, 203530)
	v := make([]float64, 203530)
	r := rng.Seeded(1)
	for i := 0; i < b.N; i++ {
		_ = m.AddTo(r, v)
	}
}

// BenchmarkNoiseOnly is one step's noise as Run draws it: Noise (no
// rounding pass) on a bulk stream keyed once.
func BenchmarkNoiseOnly(b *testing.B) {
	m, _ := mech.NewGaussianVector(1.1, 1, 203530)
	v := make([]float64, 203530)
	r := rng.Seeded(1).Bulk()
	for i := 0; i < b.N; i++ {
		_ = m.Noise(r, v)
	}
}

// BenchmarkSample is one step's Poisson sampling of MNIST's 60 000 records.
func BenchmarkSample(b *testing.B) {
	groups := []Group{{Name: "all", Records: all(60000), Rate: 256.0 / 60000}}
	r := rng.Seeded(1).Bulk() // as Run's sampling stream
	var idx []int
	for i := 0; i < b.N; i++ {
		idx = sample(r, groups, idx[:0])
	}
}
