package nn

import (
	"fmt"
	"math"

	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/internal/par"
	"github.com/dpal-dev/dpal/model/nn/internal/f32"
)

// Net is a classifier built from a Spec, with its parameters in one flat
// vector (the vector DP-SGD noises and the optimiser updates).
type Net struct {
	spec   Spec
	layers []layer
	params []float64
	grad   []float64
	p32    []float32 // the float32 copy of params the products use
	g32    []float32 // the clipped sum, as the products leave it
	x, gl  matrix
	inSq   []float64 // each input row's squared norm
	norms  []float64
}

// New builds the network s describes with parameters drawn from r (uniform
// in ±1/√fan_in, PyTorch's default; logistic regression starts at zero).
// Initialisation reads no data, so any source will do.
func New(s Spec, r *rng.Rand) (*Net, error) {
	n, err := build(s)
	if err != nil {
		return nil, err
	}
	for _, l := range n.layers {
		l.initParams(r)
	}
	return n, nil
}

func build(s Spec) (*Net, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	s.Hidden = append([]int(nil), s.Hidden...)
	n := &Net{spec: s, layers: s.layers()}
	total := s.NumParams()
	n.params, n.grad = make([]float64, total), make([]float64, total)
	n.p32, n.g32 = make([]float32, total), make([]float32, total)
	off := 0
	for _, l := range n.layers {
		k := l.numParams()
		l.bind(n.params[off:off+k], n.p32[off:off+k], n.g32[off:off+k])
		off += k
	}
	return n, nil
}

// Spec returns what the network was built from.
func (n *Net) Spec() Spec {
	s := n.spec
	s.Hidden = append([]int(nil), s.Hidden...)
	return s
}

// NumParams is the number of parameters.
func (n *Net) NumParams() int { return len(n.params) }

// Params returns the parameter vector itself: an optimiser updates it in
// place.
func (n *Net) Params() []float64 { return n.params }

// binary reports a one-logit (sigmoid) output.
func (n *Net) binary() bool { return n.layers[len(n.layers)-1].outDim() == 1 }

// checkBatch validates a batch before anything runs.
func (n *Net) checkBatch(rows [][]float64, labels []int) error {
	return checkRows(n.spec, rows, labels)
}

// checkRows validates a batch of float64 or float32 rows against s.
func checkRows[T float32 | float64](s Spec, rows [][]T, labels []int) error {
	if labels != nil && len(labels) != len(rows) {
		return fmt.Errorf("nn: %d rows but %d labels", len(rows), len(labels))
	}
	for i, x := range rows {
		if len(x) != s.Inputs {
			return fmt.Errorf("nn: row %d has %d features, model expects %d", i, len(x), s.Inputs)
		}
		if labels != nil && (labels[i] < 0 || labels[i] >= s.Classes) {
			return fmt.Errorf("nn: row %d has label %d, model has classes 0..%d", i, labels[i], s.Classes-1)
		}
	}
	return nil
}

// forward runs the batch through every layer and returns the logits. It
// first refreshes the layers' float32 weights from the parameters, which
// an optimiser may have changed since the last call.
func (n *Net) forward(rows [][]float64, train bool, r *rng.Rand) matrix {
	load(n, rows, f32.Convert, true)
	return n.run(train, r)
}

// Chunk sizes of the passes spread over the cores (internal/par): each
// piece is a few microseconds of work, enough to amortise handing it out.
const (
	loadRows   = 16    // rows copied (from scattered records) per piece
	syncParams = 16384 // parameters converted to float32 per piece
)

// load copies rows into n.x with conv (f32.Convert or f32.Copy) and their
// squared norms, which conv returns, into n.inSq, and with sync refreshes
// the float32 copy of the parameters that the products read (an optimiser
// may have changed them since the last pass): one round of tasks over the
// cores, since each round costs the other cores a wake-up. The rows are a
// sample of records scattered in memory, so the copy waits on cache
// misses: spread over the cores it overlaps more of them. Every piece is
// its own task, so the result does not depend on the core count.
func load[T float32 | float64](n *Net, rows [][]T, conv func([]float32, []T) float64, sync bool) {
	n.x = n.x.resize(len(rows), n.spec.Inputs)
	n.inSq = resizeFloats(n.inSq, len(rows))
	rowTasks, syncTasks := (len(rows)+loadRows-1)/loadRows, 0
	if x32, ok := any(rows).([][]float32); ok && n.loadSparse(x32) {
		rowTasks = 0 // the first layer reads its input from its nonzeros
	}
	if sync {
		syncTasks = (len(n.params) + syncParams - 1) / syncParams
	}
	par.For(rowTasks+syncTasks, func(t int) {
		if t >= rowTasks {
			lo := (t - rowTasks) * syncParams
			n.syncRange(lo, min(lo+syncParams, len(n.params)))
			return
		}
		for i := t * loadRows; i < min((t+1)*loadRows, len(rows)); i++ {
			n.inSq[i] = conv(n.x.row(i), rows[i])
		}
	})
}

// loadSparse puts float32 rows straight into the first layer's sparse
// input (f32.CSR.AppendRowSq: one pass over the scattered records, no
// dense copy, the same squared norms as the copy's) with their squared
// norms in n.inSq, and reports whether it did: not when the first layer
// cannot take sparse products, the batch has more than sparseShare
// nonzeros (then the layer is told so), or AppendRowSq cannot give the
// copy's norms; then load copies the rows as usual. It runs on one core
// (the sparse rows are appended in order), prefetching two rows ahead.
func (n *Net) loadSparse(rows [][]float32) bool {
	d, ok := n.layers[0].(*dense)
	if !ok || !f32.CanSparse(d.out) {
		return false
	}
	d.loaded = notLoaded
	limit := int(sparseShare * float64(len(rows)*n.spec.Inputs))
	d.xs.Reset()
	for i, x := range rows {
		sq, ok := d.xs.AppendRowSq(x, rows[min(i+2, len(rows)-1)])
		if !ok {
			return false
		}
		if len(d.xs.Idx) > limit {
			d.loaded = loadedDense
			return false
		}
		n.inSq[i] = sq
	}
	d.loaded = loadedSparse
	return true
}

// sync refreshes the float32 copy of the parameters that the products
// read, which an optimiser may have changed since the last pass.
func (n *Net) sync() {
	par.Chunks(len(n.params), syncParams, n.syncRange)
}

// syncRange refreshes parameters lo…hi−1 of the float32 copy.
func (n *Net) syncRange(lo, hi int) { f32.Convert(n.p32[lo:hi], n.params[lo:hi]) }

// run runs the batch loaded in n.x by load (with its rows' squared norms
// in n.inSq, and the float32 parameters refreshed) through every layer.
func (n *Net) run(train bool, r *rng.Rand) matrix {
	if d, ok := n.layers[0].(*dense); ok {
		d.xSq, d.sparseIn = n.inSq, true
	}
	z := n.x
	for _, l := range n.layers {
		z = l.forward(z, train, r)
	}
	return z
}

// lossGrad sets n.gl to the gradient of each example's cross-entropy with
// respect to its logits: softmax(z) − onehot(y), or σ(z) − y for one logit.
func (n *Net) lossGrad(z matrix, labels []int) matrix {
	n.gl = n.gl.resize(z.r, z.c)
	p := make([]float64, max(z.c, 2))
	for i := range z.r {
		gi := n.gl.row(i)
		n.probs(p, z.row(i))
		if n.binary() {
			gi[0] = float32(p[1] - float64(labels[i]))
			continue
		}
		for j := range gi {
			gi[j] = float32(p[j])
		}
		gi[labels[i]]--
	}
	return n.gl
}

// backward propagates g (the logits' gradient) through every layer.
func (n *Net) backward(g matrix) {
	for k := len(n.layers) - 1; k >= 0; k-- {
		g = n.layers[k].backward(g, k > 0)
	}
}

// ClippedGrad returns Σ_i c_i ∇ℓ_i(θ) over the batch, where ℓ_i is example
// i's cross-entropy, c_i = min(1, clip/‖∇ℓ_i‖) (Abadi et al. 2016, Alg. 1,
// the clipped sum before noise), computed without materialising the
// per-example gradients of dense layers (see the package doc). Dropout, if
// any, draws from r. The returned slice is the Net's own gradient buffer,
// valid until the next call; an empty batch gives zeros.
func (n *Net) ClippedGrad(rows [][]float64, labels []int, clip float64, r *rng.Rand) ([]float64, error) {
	if err := checkClip(clip); err != nil {
		return nil, err
	}
	if err := n.checkBatch(rows, labels); err != nil {
		return nil, err
	}
	clippedSum(n, rows, labels, clip, r, f32.Convert)
	widen(n.grad, n.g32)
	return n.grad, nil
}

func checkClip(clip float64) error {
	if !(clip > 0) || math.IsInf(clip, 0) {
		return fmt.Errorf("nn: clipping norm must be finite and > 0, got %v", clip)
	}
	return nil
}

// widen sets dst to src in float64, turning −0 into +0 (as adding src to a
// zeroed vector would).
func widen(dst []float64, src []float32) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = float64(v) + 0
	}
}

// ClippedGrad32 is ClippedGrad for rows already in float32 (see Rows32),
// with the sum in the float32 the products compute it in: for rows
// x32 = Rows32(x), ClippedGrad(x …) is this one's values converted to
// float64 (−0 as +0), up to the clipping factors, which here use the norms
// of the float32 rows rather than of the float64 ones (a relative
// difference below 1e-7). It spares a trainer that reads the sum once the
// per-step conversion of its inputs and the passes that widen the sum.
// The returned slice is the Net's own, valid until the next call.
func (n *Net) ClippedGrad32(rows [][]float32, labels []int, clip float64, r *rng.Rand) ([]float32, error) {
	if err := checkClip(clip); err != nil {
		return nil, err
	}
	if err := checkRows(n.spec, rows, labels); err != nil {
		return nil, err
	}
	clippedSum(n, rows, labels, clip, r, f32.Copy)
	return n.g32, nil
}

// Rows32 returns rows in float32, in one allocation: the form ClippedGrad32
// reads, converted once rather than at every pass.
func Rows32(rows [][]float64) [][]float32 {
	size := 0
	for _, x := range rows {
		size += len(x)
	}
	all, out := make([]float32, size), make([][]float32, len(rows))
	for i, x := range rows {
		out[i] = all[:len(x):len(x)]
		f32.Convert(out[i], x)
		all = all[len(x):]
	}
	return out
}

// clipChunk is the most examples one pass of clippedSum holds in the
// layers' buffers: a larger batch runs in chunks of clipChunk, which bounds
// the memory of a large batch (the CNN's activations, im2col and gradient
// buffers take about 220 KB an example, 450 MB at Fashion-MNIST's batch of
// 2048). Chunking does not change the sum on the SIMD route: clipChunk is a
// multiple of f32's k-block of 256, and that route sums a product over k
// block after block in order, each block from zero and then added to C, so
// the chunks' products added in turn are the whole batch's, bit for bit;
// the bias sums and dropout's draws run in example order either way. (The
// blas32 route blocks its products its own way, so there a batch above
// clipChunk rounds differently.)
var clipChunk = 256 // a variable only for TestClippedGradChunks

// clippedSum sets n.g32 to the clipped sum of the batch, loaded with conv
// (f32.Convert or f32.Copy), clipChunk examples at a time.
func clippedSum[T float32 | float64](n *Net, rows [][]T, labels []int, clip float64, r *rng.Rand, conv func([]float32, []T) float64) {
	if len(rows) == 0 {
		clear(n.g32)
		return
	}
	for lo := 0; lo < len(rows); lo += clipChunk {
		hi := min(lo+clipChunk, len(rows))
		load(n, rows[lo:hi], conv, lo == 0)
		n.clippedChunk(n.run(true, r), labels[lo:hi], clip, lo > 0)
	}
}

// clippedChunk sets n.g32 to the clipped sum of the chunk whose logits z
// run returned, or adds it to n.g32 with add.
func (n *Net) clippedChunk(z matrix, labels []int, clip float64, add bool) {
	n.backward(n.lossGrad(z, labels))
	n.norms = resizeFloats(n.norms, z.r)
	clear(n.norms)
	for _, l := range n.layers {
		l.sqNorms(n.norms)
	}
	for i, s := range n.norms {
		// s is a squared norm; NaN (a diverged model) clips to zero.
		n.norms[i] = clipFactor(math.Sqrt(s), clip)
	}
	for _, l := range n.layers {
		l.accumulate(n.norms, add)
	}
}

// clipFactor is min(1, clip/norm), 0 for a non-finite norm.
func clipFactor(norm, clip float64) float64 {
	switch {
	case math.IsNaN(norm) || math.IsInf(norm, 0):
		return 0
	case norm <= clip:
		return 1
	}
	return clip / norm
}

// PerExampleGrads returns every example's full gradient ∇ℓ_i(θ),
// materialised (one backward pass per example): the reference the fast
// path is tested and audited against.
func (n *Net) PerExampleGrads(rows [][]float64, labels []int, r *rng.Rand) ([][]float64, error) {
	if err := n.checkBatch(rows, labels); err != nil {
		return nil, err
	}
	out := make([][]float64, len(rows))
	for i := range rows {
		z := n.forward(rows[i:i+1], true, r)
		n.backward(n.lossGrad(z, labels[i:i+1]))
		for _, l := range n.layers {
			l.accumulate([]float64{1}, false)
		}
		out[i] = make([]float64, len(n.g32))
		widen(out[i], n.g32)
	}
	return out, nil
}

// Loss returns the mean cross-entropy of the batch (no dropout).
func (n *Net) Loss(rows [][]float64, labels []int) (float64, error) {
	if err := n.checkBatch(rows, labels); err != nil {
		return 0, err
	}
	if len(rows) == 0 {
		return 0, nil
	}
	z := n.forward(rows, false, nil)
	p := make([]float64, max(z.c, 2))
	sum := 0.0
	for i := range z.r {
		n.probs(p, z.row(i))
		sum -= math.Log(p[labels[i]])
	}
	return sum / float64(len(rows)), nil
}

// predictChunk bounds the batch of a prediction pass, and so its memory.
const predictChunk = 256

// Predict returns each row's class probabilities (dropout off).
func (n *Net) Predict(rows [][]float64) ([][]float64, error) {
	return predict(n, rows, f32.Convert)
}

// predict is Predict for float64 rows (conv f32.Convert) or float32 ones
// (f32.Copy): the same logits for rows that are float32-exact.
func predict[T float32 | float64](n *Net, rows [][]T, conv func([]float32, []T) float64) ([][]float64, error) {
	if err := checkRows(n.spec, rows, nil); err != nil {
		return nil, err
	}
	out := make([][]float64, len(rows))
	for lo := 0; lo < len(rows); lo += predictChunk {
		hi := min(lo+predictChunk, len(rows))
		load(n, rows[lo:hi], conv, true)
		z := n.run(false, nil)
		for i := range z.r {
			out[lo+i] = make([]float64, n.spec.Classes)
			n.probs(out[lo+i], z.row(i))
		}
	}
	return out, nil
}

// Classify returns each row's most probable class.
func (n *Net) Classify(rows [][]float64) ([]int, error) {
	return classes(predict(n, rows, f32.Convert))
}

// Classify32 is Classify for rows in float32 (see Rows32): the classes
// Classify gives the same rows in float64.
func (n *Net) Classify32(rows [][]float32) ([]int, error) {
	return classes(predict(n, rows, f32.Copy))
}

// classes is each row's most probable class under probs.
func classes(probs [][]float64, err error) ([]int, error) {
	if err != nil {
		return nil, err
	}
	out := make([]int, len(probs))
	for i, p := range probs {
		out[i] = Argmax(p)
	}
	return out, nil
}

// Argmax is the index of p's largest entry (the first on ties).
func Argmax(p []float64) int {
	best := 0
	for c, v := range p {
		if v > p[best] {
			best = c
		}
	}
	return best
}

// Accuracy is the fraction of rows classified as their label.
func (n *Net) Accuracy(rows [][]float64, labels []int) (float64, error) {
	if err := n.checkBatch(rows, labels); err != nil {
		return 0, err
	}
	pred, err := n.Classify(rows)
	return accuracy(pred, labels, err)
}

// Accuracy32 is Accuracy for rows in float32 (see Rows32).
func (n *Net) Accuracy32(rows [][]float32, labels []int) (float64, error) {
	if err := checkRows(n.spec, rows, labels); err != nil {
		return 0, err
	}
	pred, err := n.Classify32(rows)
	return accuracy(pred, labels, err)
}

// accuracy is the fraction of pred that equals labels.
func accuracy(pred, labels []int, err error) (float64, error) {
	if err != nil {
		return 0, err
	}
	if len(pred) == 0 {
		return 0, fmt.Errorf("nn: accuracy of an empty set")
	}
	right := 0
	for i, c := range pred {
		if c == labels[i] {
			right++
		}
	}
	return float64(right) / float64(len(pred)), nil
}

// probs writes the class probabilities of one row of logits into p.
func (n *Net) probs(p []float64, z []float32) {
	if n.binary() {
		p[1] = sigmoid(float64(z[0]))
		p[0] = 1 - p[1]
		return
	}
	softmax(p, z)
}

func sigmoid(z float64) float64 {
	if z >= 0 {
		return 1 / (1 + math.Exp(-z))
	}
	e := math.Exp(z)
	return e / (1 + e)
}

// softmax writes softmax(z) into p, stably, in float64.
func softmax(p []float64, z []float32) {
	m := math.Inf(-1)
	for _, v := range z {
		m = max(m, float64(v))
	}
	s := 0.0
	for j, v := range z {
		p[j] = math.Exp(float64(v) - m)
		s += p[j]
	}
	for j := range z {
		p[j] /= s
	}
}

func resizeFloats(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}
