package dpsgd

import (
	"errors"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/audit"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/mech"
	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/model/nn"
)

func TestCalibrateExact(t *testing.T) {
	for _, c := range []struct {
		name        string
		eps, epochs float64
		batch, n    int
	}{
		{"mnist-eps3", 3, 30, 512, 60000},
		{"mnist-eps1", 1, 15, 512, 60000},
		{"small", 2, 5, 64, 1000},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := Calibrate(c.eps, 1e-5, c.epochs, c.batch, c.n)
			if err != nil {
				t.Fatal(err)
			}
			at := func(sigma float64) float64 {
				res, err := account.Epsilon([]account.Phase{{SampleRate: p.SampleRate, NoiseMultiplier: sigma, Steps: p.Steps}}, 1e-5, account.Options{})
				if err != nil {
					t.Fatal(err)
				}
				return res.Epsilon
			}
			if e := at(p.NoiseMultiplier); e > c.eps {
				t.Errorf("σ=%v gives ε=%v > %v", p.NoiseMultiplier, e, c.eps)
			}
			if e := at(p.NoiseMultiplier * (1 - 2e-9)); e <= c.eps {
				t.Errorf("σ·(1−2e-9) still gives ε=%v ≤ %v: σ is not tight to 1e-9", e, c.eps)
			}
			if want := int(math.Ceil(c.epochs * float64(c.n) / float64(c.batch))); p.Steps != want {
				t.Errorf("steps %d, want %d", p.Steps, want)
			}
		})
	}
	if _, err := Calibrate(1, 1e-5, 1, 0, 10); err == nil {
		t.Error("batch 0 accepted")
	}
}

// blobs is a linearly separable 3-class problem in 4 dimensions.
func blobs(r *rng.Rand, n int) Data {
	var d Data
	for i := range n {
		c := i % 3
		x := make([]float64, 4)
		for j := range x {
			x[j] = 0.3 * (2*r.Float64() - 1)
		}
		x[c] += 1
		d.X, d.Labels = append(d.X, x), append(d.Labels, c)
	}
	return d
}

func all(n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return idx
}

func newLedger(t *testing.T, eps float64) *ledger.Ledger {
	l, err := ledger.New(account.Budget{Epsilon: eps, Delta: 1e-5})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestTrainLearnsAndCharges(t *testing.T) {
	for _, opt := range []string{SGD, Momentum, Adam, NAdam} {
		t.Run(opt, func(t *testing.T) {
			r := rng.Seeded(1)
			d := blobs(r, 600)
			net, _ := nn.New(nn.Spec{Arch: nn.LogReg, Inputs: 4, Classes: 3}, r)
			lr := 0.5
			if opt == Adam || opt == NAdam {
				lr = 0.05
			}
			tr, err := New(net, Config{NoiseMultiplier: 1, Clip: 1, Optimizer: opt, LR: lr})
			if err != nil {
				t.Fatal(err)
			}
			led := newLedger(t, 50)
			groups := []Group{{Name: "old", Records: all(300), Rate: 0.1}, {Name: "new", Records: all(600)[300:], Rate: 0.2}}
			res, err := tr.Run(led, r, d, groups, 40, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.ExpectedBatch != 90 || res.Steps != 40 || len(res.Charges) != 2 {
				t.Errorf("result %+v", res)
			}
			for _, g := range groups {
				want, _ := account.SubsampledGaussian([]account.Phase{{SampleRate: g.Rate, NoiseMultiplier: 1, Steps: 40}})
				we, _ := want.EpsilonAt(1e-5, account.Balle2020)
				got, _ := led.Spent(g.Name)
				if math.Abs(got-we) > 1e-9*we {
					t.Errorf("group %s charged ε=%v, want %v", g.Name, got, we)
				}
			}
			acc, _ := net.Accuracy(d.X, d.Labels)
			if acc < 0.9 {
				t.Errorf("accuracy %v after 40 steps", acc)
			}
		})
	}
}

func TestOverBudgetTakesNoStep(t *testing.T) {
	r := rng.Seeded(2)
	d := blobs(r, 100)
	net, _ := nn.New(nn.Spec{Arch: nn.LogReg, Inputs: 4, Classes: 3}, r)
	before := slices.Clone(net.Params())
	tr, _ := New(net, Config{NoiseMultiplier: 0.5, Clip: 1, LR: 1})
	_, err := tr.Run(newLedger(t, 0.1), r, d, []Group{{Name: "all", Records: all(100), Rate: 0.5}}, 10, nil)
	if !errors.Is(err, account.ErrBudgetExceeded) {
		t.Fatalf("want ErrBudgetExceeded, got %v", err)
	}
	if !slices.Equal(before, net.Params()) || tr.Steps() != 0 {
		t.Error("parameters changed although the charge failed")
	}
}

func TestEmptyBatchIsAStep(t *testing.T) {
	r := rng.Seeded(3)
	d := blobs(r, 10)
	net, _ := nn.New(nn.Spec{Arch: nn.LogReg, Inputs: 4, Classes: 3}, r)
	tr, _ := New(net, Config{NoiseMultiplier: 1, Clip: 1, LR: 1})
	// Rate 2^-40: the batch is empty at every step, yet each step is taken
	// and moves the parameters by noise alone.
	res, err := tr.Run(newLedger(t, 10), r, d, []Group{{Name: "g", Records: all(10), Rate: math.Ldexp(1, -40)}}, 3, nil)
	if err != nil || res.Steps != 3 {
		t.Fatalf("%+v, %v", res, err)
	}
	moved := false
	for _, v := range net.Params() {
		moved = moved || v != 0
	}
	if !moved {
		t.Error("an empty batch left the parameters unchanged: no noise was added")
	}
}

func TestRunRejects(t *testing.T) {
	r := rng.Seeded(4)
	d := blobs(r, 10)
	net, _ := nn.New(nn.Spec{Arch: nn.LogReg, Inputs: 4, Classes: 3}, r)
	tr, _ := New(net, Config{NoiseMultiplier: 1, Clip: 1, LR: 1})
	one := []Group{{Name: "a", Records: []int{1}, Rate: 0.5}}
	for _, c := range []struct {
		name   string
		groups []Group
		steps  int
		data   *Data
	}{
		{"record twice", []Group{{Name: "a", Records: []int{1, 1}, Rate: 0.5}}, 1, nil},
		{"record in two groups", []Group{{Name: "a", Records: []int{1}, Rate: 0.5}, {Name: "b", Records: []int{1}, Rate: 0.5}}, 1, nil},
		{"rate above one", []Group{{Name: "a", Records: []int{1}, Rate: 1.5}}, 1, nil},
		{"record out of range", []Group{{Name: "a", Records: []int{10}, Rate: 0.5}}, 1, nil},
		{"no name", []Group{{Records: []int{1}, Rate: 0.5}}, 1, nil},
		{"nothing sampled", []Group{{Name: "a", Records: []int{1}, Rate: 0}}, 1, nil},
		{"negative steps", []Group{{Name: "a", Records: []int{1}, Rate: 0.5}}, -1, nil},
		{"X and X32 differ in length", one, 1, &Data{X: d.X, X32: nn.Rows32(d.X[1:]), Labels: d.Labels}},
		{"X32 and labels differ in length", one, 1, &Data{X32: nn.Rows32(d.X), Labels: d.Labels[1:]}},
	} {
		t.Run(c.name, func(t *testing.T) {
			led := newLedger(t, 10)
			dc := d
			if c.data != nil {
				dc = *c.data
			}
			if _, err := tr.Run(led, r, dc, c.groups, c.steps, nil); err == nil {
				t.Error("accepted")
			}
			if led.Len() != 0 {
				t.Error("a rejected run charged the ledger")
			}
		})
	}
	if _, err := tr.Run(nil, r, d, []Group{{Name: "a", Records: []int{1}, Rate: 0.5}}, 1, nil); err == nil {
		t.Error("nil ledger accepted")
	}
	for _, cfg := range []Config{{NoiseMultiplier: 0, Clip: 1, LR: 1}, {NoiseMultiplier: 1, Clip: 0, LR: 1},
		{NoiseMultiplier: 1, Clip: 1, LR: 0}, {NoiseMultiplier: 1, Clip: 1, LR: 1, Optimizer: "rmsprop"},
		{NoiseMultiplier: 1, Clip: 1, LR: 1, Schedule: Cosine}} {
		if _, err := New(net, cfg); err == nil {
			t.Errorf("config %+v accepted", cfg)
		}
	}
}

// Under a seed the run does not depend on the number of cores: on two the
// MLP's products are split into tasks over rows of C (two kc blocks deep),
// the inputs are copied and the parameters converted in pieces, the noise
// is drawn ahead in chunks by par's helpers between the products (and by
// the step itself for what they left) and the noisy update runs in chunks
// on both cores;
// the CNN spreads its per-example work over the cores.
func TestSeededRunIndependentOfCores(t *testing.T) {
	for _, spec := range []nn.Spec{
		{Arch: nn.MLP, Inputs: 300, Classes: 2, Hidden: []int{256}, Activation: nn.ReLU, Dropout: 0.1},
		{Arch: nn.CNN, Inputs: 300, Classes: 2, Image: [3]int{15, 20, 1}},
	} {
		t.Run(spec.Arch, func(t *testing.T) {
			run := func(procs int) []float64 {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
				r := rng.Seeded(5)
				d := uniformData(r, 400, 300)
				net, _ := nn.New(spec, r)
				tr, _ := New(net, Config{NoiseMultiplier: 1, Clip: 1, LR: 0.1, Optimizer: Adam})
				if _, err := tr.Run(newLedger(t, 100), r, d, []Group{{Name: "all", Records: all(400), Rate: 0.8}}, 3, nil); err != nil {
					t.Fatal(err)
				}
				return slices.Clone(net.Params())
			}
			one := run(1)
			for _, procs := range []int{2, 3} {
				if !slices.Equal(one, run(procs)) {
					t.Errorf("seeded run differs between 1 and %d cores", procs)
				}
			}
		})
	}
}

// The noise drawn ahead is the stream's, in order, whoever draws which
// chunks: goroutines calling more at random moments while the steps take
// their vectors (and write over them, as the update does) give the
// vectors of one stream drawn in a single pass.
func TestNoiseAheadMatchesStream(t *testing.T) {
	const dim, steps = 3*noiseChunk + 123, 7
	m, _ := mech.NewGaussianVector(1, 1, dim)
	want := make([]float64, dim*steps)
	m.NewNoiseStream(rng.Seeded(3).Bulk()).Next(want)
	a := newNoiseAhead(m.NewNoiseStream(rng.Seeded(3).Bulk()), dim, steps)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
					if !a.more() {
						runtime.Gosched()
					}
				}
			}
		}()
	}
	for s := range steps {
		got := a.get(s)
		if !slices.Equal(got, want[s*dim:(s+1)*dim]) {
			t.Errorf("step %d: the vector drawn ahead differs from the stream's", s)
		}
		clear(got) // as the update, which writes the noisy mean over it
		a.release(s)
	}
	close(stop)
	wg.Wait()
}

// uniformData is n records of dim features uniform in [0, 1), labelled
// alternately 0 and 1.
func uniformData(r *rng.Rand, n, dim int) Data {
	d := Data{}
	for i := range n {
		x := make([]float64, dim)
		for j := range x {
			x[j] = r.Float64()
		}
		d.X, d.Labels = append(d.X, x), append(d.Labels, i%2)
	}
	return d
}

// A diverged model (a NaN parameter) stops the run with an error naming
// the first non-finite coordinate, and leaves the same parameters on any
// number of cores.
func TestDivergedRunIndependentOfCores(t *testing.T) {
	spec := nn.Spec{Arch: nn.MLP, Inputs: 300, Classes: 2, Hidden: []int{256}, Activation: nn.ReLU}
	run := func(procs int) ([]uint64, error) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		r := rng.Seeded(6)
		d := uniformData(r, 300, 300)
		net, _ := nn.New(spec, r)
		net.Params()[len(net.Params())-1] = math.NaN() // the last output bias
		tr, _ := New(net, Config{NoiseMultiplier: 1, Clip: 1, LR: 0.1})
		_, err := tr.Run(newLedger(t, 100), r, d, []Group{{Name: "all", Records: all(300), Rate: 0.9}}, 2, nil)
		bits := make([]uint64, net.NumParams())
		for i, v := range net.Params() {
			bits[i] = math.Float64bits(v)
		}
		return bits, err
	}
	one, err1 := run(1)
	two, err2 := run(2)
	if err1 == nil || !strings.Contains(err1.Error(), "diverged") {
		t.Fatalf("one core: error %v, want a diverged model", err1)
	}
	if err2 == nil || err1.Error() != err2.Error() {
		t.Errorf("errors differ: %v on one core, %v on two", err1, err2)
	}
	if !slices.Equal(one, two) {
		t.Error("parameters after the failed step differ between 1 and 2 cores")
	}
}

// TestAuditOneStep audits one DP-SGD step on add/remove neighbours: D0 is
// empty, D1 holds one record whose clipped gradient has weight coordinate
// ≈ C. The released coordinate is the noisy sum's weight coordinate, read off
// the parameters after one whole step (SGD at rate 1 from θ = 0). The
// audit's lower bound must stay below the ε the ledger is charged, and a
// trainer whose noise has half the σ must be caught.
func TestAuditOneStep(t *testing.T) {
	const (
		q, sigma, delta = 0.5, 1.0, 1e-5
		trials          = 400000
	)
	loss, _ := account.SubsampledGaussian([]account.Phase{{SampleRate: q, NoiseMultiplier: sigma, Steps: 1}})
	claimed, _ := loss.EpsilonAt(delta, account.Balle2020)
	d1 := Data{X: [][]float64{{100}}, Labels: []int{0}}
	d0 := Data{}
	groups1 := []Group{{Name: "g", Records: []int{0}, Rate: q}}
	mk := func(z float64) func(*rng.Rand, Data, []Group) float64 {
		net, _ := nn.New(nn.Spec{Arch: nn.LogReg, Inputs: 1, Classes: 2}, rng.Seeded(0))
		tr, _ := New(net, Config{NoiseMultiplier: z, Clip: 1, LR: 1})
		buf := make([]float64, 2)
		var idx []int
		var rows [][]float32
		var labels []int
		return func(r *rng.Rand, d Data, groups []Group) float64 {
			_ = tr.noise.Noise(r, buf)
			idx = sample(r, groups, idx[:0])
			rows, labels = gather(d.rows32(), d.Labels, idx, rows[:0], labels[:0])
			// From θ = 0, one SGD step at rate 1 leaves θ = −(noisy sum).
			theta := net.Params()
			clear(theta)
			if err := tr.step(rows, labels, 1, noiseSource{z: buf}, r); err != nil {
				t.Fatal(err)
			}
			return -theta[0]
		}
	}
	cfg := audit.Config{Trials: trials, Confidence: 0.999, Delta: delta}
	for _, c := range []struct {
		name   string
		z      float64
		caught bool
	}{{"genuine", sigma, false}, {"halved-sigma mutant", sigma / 2, true}} {
		rel := mk(c.z)
		res, err := audit.Continuous(rng.Seeded(7),
			func(r *rng.Rand) float64 { return rel(r, d0, nil) },
			func(r *rng.Rand) float64 { return rel(r, d1, groups1) }, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: ε lower bound %.3f, claimed %.3f (%s)", c.name, res.Epsilon, claimed, res.Event)
		if (res.Epsilon > claimed) != c.caught {
			t.Errorf("%s: ε lower bound %.3f against claimed %.3f", c.name, res.Epsilon, claimed)
		}
	}
}

// byteRate splits q exactly: (t + f)/256 == q in float64 and f ∈ [0, 1).
func TestByteRate(t *testing.T) {
	for _, q := range []float64{0, 1, 0.5, 256.0 / 60000, 3.5 / 256, math.Ldexp(1, -40), math.Nextafter(1, 0), 0.999, 1e-300} {
		tt, f := byteRate(q)
		if !(f >= 0 && f < 1) || (float64(tt)+f)/256 != q || tt > 256 {
			t.Errorf("q = %v: t = %d, f = %v", q, tt, f)
		}
	}
}

// hasByteBelow agrees with a byte-by-byte check for every threshold, byte
// position and byte value, the other bytes drawn at random or at n (the
// boundary where a borrow could leak).
func TestHasByteBelow(t *testing.T) {
	r := rng.Seeded(1)
	for n := uint64(1); n <= 128; n++ {
		for pos := range 8 {
			for v := range uint64(256) {
				for _, rest := range []uint64{r.Uint64(), n * 0x0101010101010101, 0xffffffffffffffff, r.Uint64() | 0x8080808080808080} {
					u := rest&^(0xff<<(8*pos)) | v<<(8*pos)
					want := false
					for k := range 8 {
						want = want || u>>(8*k)&0xff < n
					}
					if got := hasByteBelow(u, n); got != want {
						t.Fatalf("hasByteBelow(%#x, %d) = %v", u, n, got)
					}
				}
			}
		}
	}
}

// Every record joins each step's batch with its group's rate: the count of
// each record position modulo 8 (its byte lane) and each group's total
// match Binomial(steps·records, q), and no record joins twice in a step.
func TestSampleRates(t *testing.T) {
	const n, steps = 1003, 400
	groups := []Group{
		{Name: "tiny", Records: all(n)[:300], Rate: 256.0 / 60000},
		{Name: "tie", Records: all(n)[300:600], Rate: 3.5 / 256},
		{Name: "half", Records: all(n)[600:900], Rate: 0.7},
		{Name: "sure", Records: all(n)[900:1000], Rate: 1},
		{Name: "never", Records: all(n)[1000:], Rate: 0},
	}
	group := make([]int, n)
	for k, g := range groups {
		for _, i := range g.Records {
			group[i] = k
		}
	}
	var counts [5][8]int
	r := rng.Seeded(3).Bulk()
	var idx []int
	for range steps {
		idx = sample(r, groups, idx[:0])
		seen := map[int]bool{}
		for _, i := range idx {
			if seen[i] {
				t.Fatalf("record %d sampled twice in a step", i)
			}
			seen[i] = true
			g := groups[group[i]]
			counts[group[i]][(i-g.Records[0])%8]++
		}
	}
	for k, g := range groups {
		total := 0
		for lane, c := range counts[k] {
			total += c
			m := float64(steps * ((len(g.Records) - lane + 7) / 8))
			if sd := math.Sqrt(m * g.Rate * (1 - g.Rate)); math.Abs(float64(c)-m*g.Rate) > 5*sd+1e-9 {
				t.Errorf("group %s lane %d: %d joins, want %.1f ± %.1f", g.Name, lane, c, m*g.Rate, sd)
			}
		}
		m := float64(steps * len(g.Records))
		if sd := math.Sqrt(m * g.Rate * (1 - g.Rate)); math.Abs(float64(total)-m*g.Rate) > 5*sd+1e-9 {
			t.Errorf("group %s: %d joins, want %.1f ± %.1f", g.Name, total, m*g.Rate, sd)
		}
	}
}
