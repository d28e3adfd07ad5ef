package dpsgd

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/mech"
	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/dpsgd/internal/grid"
	"github.com/dpal-dev/dpal/internal/par"
	"github.com/dpal-dev/dpal/model/nn"
)

// Config is what stays fixed across a Trainer's runs.
type Config struct {
	// NoiseMultiplier is σ: the noise per coordinate has standard
	// deviation σ·Clip (finite, > 0).
	NoiseMultiplier float64
	// Clip is C, the per-example ℓ2 clipping norm (finite, > 0).
	Clip float64
	// Optimizer is SGD (default), Momentum, Adam or NAdam.
	Optimizer string
	// LR is the learning rate (> 0).
	LR float64
	// Momentum is the momentum coefficient (Momentum only; 0 means 0.9).
	Momentum float64
	// WeightDecay adds WeightDecay·θ to each noisy gradient.
	WeightDecay float64
	// Schedule is Constant (default) or Cosine, which anneals the rate to
	// zero over TotalSteps steps of all runs together.
	Schedule string
	// TotalSteps is the cosine schedule's length.
	TotalSteps int
	// Divisor, if > 0, divides every noisy sum instead of the groups'
	// expected batch Σ_g q_g·|g|. Poisson active learning needs it: there
	// the groups' sizes are private, and a divisor read from them would
	// release them; the plan fixes it from expected sizes instead.
	Divisor float64
	// ReplaceOne charges every group under the replace-one relation
	// (account.SubsampledGaussianReplace) instead of add/remove: for
	// groups that are fixed-size samples of a larger set (the paper's
	// top-k active learning), where a record that enters pushes another
	// out and neighbouring training sets differ by a substitution.
	ReplaceOne bool
}

// Group is a set of records sampled at one Poisson rate and charged as one
// ledger group.
type Group struct {
	// Name is the ledger group the group's loss is charged to.
	Name string
	// Records index the run's Data; no record may be in two groups.
	Records []int
	// Rate is each record's probability of joining each step's batch.
	Rate float64
}

// Data is a labelled training set.
type Data struct {
	// X holds the feature rows.
	X [][]float64
	// X32, if not nil, is X in float32 (nn.Rows32(X)), and X may then be
	// nil. The steps read their batches in float32: given X only, Run
	// converts it once at its start; converting once at load spares even
	// that. It changes no privacy property: the conversion is per record.
	X32 [][]float32
	// Labels holds each row's class, 0 ≤ label < the model's classes.
	Labels []int
}

// rows32 is d's rows in float32.
func (d Data) rows32() [][]float32 {
	if d.X32 != nil {
		return d.X32
	}
	return nn.Rows32(d.X)
}

// Charge is one group's ledger entry for a run.
type Charge struct {
	Group   string       `json:"group"`
	Rate    float64      `json:"sample_rate"`
	Records int          `json:"records"`
	Loss    account.Loss `json:"-"`
	Seq     uint64       `json:"ledger_seq"`
}

// RunResult describes a finished run. It holds nothing data-dependent
// beyond what the ledger covers: no realised batch sizes, no losses.
type RunResult struct {
	// Steps is the number of steps taken (by RunIntervals: of the run's
	// steps, those restored from its checkpoint included).
	Steps int `json:"steps"`
	// ExpectedBatch is Σ_g q_g·|g|, the divisor of every noisy sum.
	ExpectedBatch float64 `json:"expected_batch"`
	// Charges are the ledger entries made before the first step (by
	// RunIntervals: before each interval's first step, with the Seq of
	// the earlier entry for a charge a resumed run found made).
	Charges []Charge `json:"charges"`
	// Seconds is the wall time of the steps.
	Seconds float64 `json:"seconds"`
	// Run is RunIntervals' run id, which names its charges.
	Run string `json:"run,omitempty"`
	// Resumed is the number of steps RunIntervals restored from a
	// checkpoint rather than took (Steps counts them).
	Resumed int `json:"resumed_steps,omitempty"`
}

// Trainer runs DP-SGD on one network; the optimiser state carries over
// from run to run (the phases of an active learner).
type Trainer struct {
	net   *nn.Net
	cfg   Config
	opt   *optimizer
	noise *mech.GaussianVector
	steps int
}

// New returns a trainer for net.
func New(net *nn.Net, cfg Config) (*Trainer, error) {
	if !(cfg.Divisor >= 0) || math.IsInf(cfg.Divisor, 0) {
		return nil, fmt.Errorf("dpsgd: divisor must be finite and >= 0, got %v", cfg.Divisor)
	}
	noise, err := mech.NewGaussianVector(cfg.NoiseMultiplier, cfg.Clip, net.NumParams())
	if err != nil {
		return nil, fmt.Errorf("dpsgd: %w", err)
	}
	opt, err := newOptimizer(cfg, net.NumParams())
	if err != nil {
		return nil, err
	}
	return &Trainer{net: net, cfg: cfg, opt: opt, noise: noise}, nil
}

// Steps is the number of steps taken over all runs.
func (t *Trainer) Steps() int { return t.steps }

// NoiseSigma is the noise standard deviation per coordinate actually used
// (≥ σ·C: the grid's rounding is covered, see mech.GaussianVector).
func (t *Trainer) NoiseSigma() float64 { return t.noise.Sigma() }

// Run takes steps DP-SGD steps on d, sampling the records of each group at
// the group's rate. Before the first step it charges each group with
// Rate > 0 the loss of steps Poisson-subsampled Gaussian steps at its rate
// to led; if a charge fails (errors.Is(err, account.ErrBudgetExceeded) when
// over budget) no step is taken, and the groups charged before it stay
// charged (conservative). after, if not nil, is called after every step
// with the number of steps of this run done; its error stops the run.
// Randomness is split from r: pass rng.Secure() outside experiments.
// RunIntervals is the same run charged and checkpointed as it goes, which
// a killed process can resume.
func (t *Trainer) Run(led *ledger.Ledger, r *rng.Rand, d Data, groups []Group, steps int, after func(done int) error) (RunResult, error) {
	if led == nil {
		return RunResult{}, errors.New("dpsgd: a ledger is required: every step is charged before it runs")
	}
	b, err := t.divisor(d, groups, steps)
	if err != nil {
		return RunResult{}, err
	}
	res := RunResult{ExpectedBatch: b}
	if res.Charges, err = t.charge(led, groups, steps); err != nil {
		return res, err
	}
	start := time.Now()
	err = t.runSteps(t.streams(r), d.rows32(), d.Labels, groups, 0, steps, b, &res, after)
	res.Seconds = time.Since(start).Seconds()
	return res, err
}

// streams is a run's randomness: the Poisson sampling's, the noise's and
// the dropout's streams, each split from the caller's source.
type streams struct {
	samp, drop *rng.Rand
	noise      *mech.NoiseStream
}

// streams splits a run's streams from r, in the order every run splits
// them.
func (t *Trainer) streams(r *rng.Rand) streams {
	sampR, noiseR, dropR := r.Split().Bulk(), r.Split().Bulk(), r.Split()
	return streams{samp: sampR, drop: dropR, noise: t.noise.NewNoiseStream(noiseR)}
}

// runSteps takes steps from…to−1 of a run (loop) with the streams st; on
// more than one core the noise of these steps, and only theirs, is drawn
// ahead (noiseAhead).
func (t *Trainer) runSteps(st streams, x [][]float32, labels []int, groups []Group, from, to int, b float64,
	res *RunResult, after func(done int) error) error {
	noise := noiseSource{stream: st.noise}
	run := func() error {
		return loop(st.samp, x, labels, groups, from, to, b, res, func(s int, rows [][]float32, labels []int) error {
			noise.step = s - from
			if err := t.step(rows, labels, b, noise, st.drop); err != nil {
				return fmt.Errorf("dpsgd: step %d: %w", s+1, err)
			}
			return nil
		}, after)
	}
	if runtime.GOMAXPROCS(0) > 1 {
		noise.ahead = newNoiseAhead(noise.stream, t.net.NumParams(), to-from)
		return par.Background(noise.ahead.more, run)
	}
	return run()
}

// loop is the part of a run that Trainer and NonPrivate share: each of the
// steps from…to−1 samples the groups' records, gathers their float32 rows
// (of x) and labels, and hands them to step (with the step's index, from 0
// at the run's start); after, if not nil, is called with the number of
// steps done, and its error stops the run.
func loop(sampR *rng.Rand, x [][]float32, labels []int, groups []Group, from, to int, b float64, res *RunResult,
	step func(s int, rows [][]float32, labels []int) error, after func(done int) error) error {
	idx := make([]int, 0, int(2*b)+16)
	rows, labs := make([][]float32, 0, cap(idx)), make([]int, 0, cap(idx))
	for s := from; s < to; s++ {
		idx = sample(sampR, groups, idx[:0])
		rows, labs = gather(x, labels, idx, rows[:0], labs[:0])
		if err := step(s, rows, labs); err != nil {
			return err
		}
		res.Steps = s + 1
		if after != nil {
			if err := after(s + 1); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkRun validates a run and returns its expected batch size.
func checkRun(d Data, groups []Group, steps int) (float64, error) {
	if steps < 0 {
		return 0, fmt.Errorf("dpsgd: steps must be >= 0, got %d", steps)
	}
	n := len(d.X)
	if d.X32 != nil {
		if d.X != nil && len(d.X) != len(d.X32) {
			return 0, fmt.Errorf("dpsgd: %d rows in X but %d in X32", len(d.X), len(d.X32))
		}
		n = len(d.X32)
	}
	if len(d.Labels) != n {
		return 0, fmt.Errorf("dpsgd: %d rows but %d labels", n, len(d.Labels))
	}
	seen := make([]bool, n)
	names := map[string]bool{}
	b := 0.0
	for _, g := range groups {
		if g.Name == "" || names[g.Name] {
			return 0, fmt.Errorf("dpsgd: group names must be non-empty and distinct, got %q twice or empty", g.Name)
		}
		names[g.Name] = true
		if !(g.Rate >= 0 && g.Rate <= 1) {
			return 0, fmt.Errorf("dpsgd: group %q: rate %v is not in [0, 1]", g.Name, g.Rate)
		}
		for _, i := range g.Records {
			if i < 0 || i >= n {
				return 0, fmt.Errorf("dpsgd: group %q: record %d is outside the data (0..%d)", g.Name, i, n-1)
			}
			if seen[i] {
				return 0, fmt.Errorf("dpsgd: record %d is in two groups (or twice in one): its loss would be undercharged", i)
			}
			seen[i] = true
		}
		b += g.Rate * float64(len(g.Records))
	}
	if !(b > 0) {
		return 0, errNoBatch
	}
	return b, nil
}

// divisor checks a run (checkRun) and returns the divisor of its noisy
// sums: Config.Divisor when set (then groups that can sample no record are
// no error: their steps are pure noise), else the groups' expected batch.
func (t *Trainer) divisor(d Data, groups []Group, steps int) (float64, error) {
	b, err := checkRun(d, groups, steps)
	if t.cfg.Divisor > 0 && (err == nil || err == errNoBatch) {
		return t.cfg.Divisor, nil
	}
	return b, err
}

// errNoBatch is checkRun's error for groups that can sample no record.
var errNoBatch = errors.New("dpsgd: no record can be sampled (expected batch 0)")

// TrainingLoss is the loss of DP-SGD phases under add/remove
// (account.SubsampledGaussian) or, with replaceOne, under replace-one
// (account.SubsampledGaussianReplace): the one place that picks the curve.
func TrainingLoss(phases []account.Phase, replaceOne bool) (account.Loss, error) {
	if replaceOne {
		return account.SubsampledGaussianReplace(phases)
	}
	return account.SubsampledGaussian(phases)
}

// charge records each sampled group's loss for the whole run.
func (t *Trainer) charge(led *ledger.Ledger, groups []Group, steps int) ([]Charge, error) {
	var out []Charge
	if steps == 0 {
		return nil, nil
	}
	for _, g := range charged(groups) {
		c, err := t.groupCharge(g, steps)
		if err != nil {
			return out, err
		}
		e, err := led.Record(c)
		if err != nil {
			return out, fmt.Errorf("dpsgd: charging group %q: %w", g.Name, err)
		}
		out = append(out, Charge{Group: g.Name, Rate: g.Rate, Records: len(g.Records), Loss: c.Loss, Seq: e.Seq})
	}
	return out, nil
}

// charged returns the groups a run charges: those that can be sampled.
func charged(groups []Group) []Group {
	var out []Group
	for _, g := range groups {
		if g.Rate > 0 && len(g.Records) > 0 {
			out = append(out, g)
		}
	}
	return out
}

// groupCharge is the ledger charge of steps Poisson-subsampled Gaussian
// steps for group g (steps ≥ 1).
func (t *Trainer) groupCharge(g Group, steps int) (ledger.Charge, error) {
	loss, err := TrainingLoss([]account.Phase{{SampleRate: g.Rate, NoiseMultiplier: t.cfg.NoiseMultiplier, Steps: steps}}, t.cfg.ReplaceOne)
	if err != nil {
		return ledger.Charge{}, fmt.Errorf("dpsgd: group %q: %w", g.Name, err)
	}
	loss.Mechanism = "dp-sgd"
	loss.Params["clip"] = t.cfg.Clip
	return ledger.Charge{Groups: []string{g.Name}, Loss: loss,
		Note: fmt.Sprintf("DP-SGD: %d steps, rate %v, σ %v, C %v, %d records", steps, g.Rate, t.cfg.NoiseMultiplier, t.cfg.Clip, len(g.Records))}, nil
}

// sample appends each group's records, each with its group's rate, to
// idx. Each record joins independently with probability exactly
// q, its group's rate: the Poisson sampling that the amplification bound of
// account.SubsampledGaussian assumes.
//
// Why exactly q, at one random byte per record: write 256q = t + f with
// t = ⌊256q⌋ and f ∈ [0, 1) (both exact in float64: scaling by 256 and
// taking the fractional part are exact). A record's byte B is uniform on
// 0..255; it joins when B < t, or when B = t and a fresh Bernoulli(f) draw
// (mech.BernoulliFloat, exact for any float64) succeeds: probability
// t/256 + f/256 = q. Distinct records read distinct bytes (eight per
// random word) and the ties fresh bits, so the draws are independent.
// For q < 1/2 (t ≤ 127) a word whose eight bytes all exceed t is skipped
// with one test (hasByteBelow), which is what makes this cheap: at
// q = 256/60000 about 6 % of the words need a look at their bytes.
func sample(r *rng.Rand, groups []Group, idx []int) []int {
	var words [sampleBlock]uint64
	for _, g := range groups {
		if g.Rate == 0 {
			continue
		}
		t, f := byteRate(g.Rate)
		recs := g.Records
		for len(recs) > 0 {
			n := min(len(words), (len(recs)+7)/8)
			r.Fill(words[:n])
			for k, u := range words[:n] {
				if t < 128 && !hasByteBelow(u, t+1) {
					continue
				}
				for lane, i := range recs[8*k : min(8*k+8, len(recs))] {
					if b := u >> (8 * lane) & 0xff; b < t || (b == t && mech.BernoulliFloat(r, f)) {
						idx = append(idx, i)
					}
				}
			}
			recs = recs[min(len(recs), 8*n):]
		}
	}
	return idx
}

// gather appends the rows and labels of records idx to rows and labels.
func gather(x [][]float32, labels []int, idx []int, rows [][]float32, labs []int) ([][]float32, []int) {
	for _, i := range idx {
		rows, labs = append(rows, x[i]), append(labs, labels[i])
	}
	return rows, labs
}

// sampleBlock is how many random words sample fetches at once.
const sampleBlock = 128

// byteRate splits q ∈ [0, 1] as 256q = t + f, t = ⌊256q⌋, f ∈ [0, 1),
// both exact.
func byteRate(q float64) (uint64, float64) {
	t := math.Floor(q * 256)
	return uint64(t), q*256 - t
}

// hasByteBelow reports whether some byte of u is below n, for 1 ≤ n ≤ 128:
// the borrow of u − n·0x01…01 reaches a byte's top bit exactly when the
// lowest byte below n does (the classic SWAR test; checked exhaustively
// per byte position in TestHasByteBelow).
func hasByteBelow(u, n uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	return (u-ones*n)&^u&highs != 0
}

// noiseSource is one step's noise: a vector given (z), or drawn ahead
// (ahead, step), or the stream to draw it from chunk by chunk while the
// gradient is in cache. All give the same values (mech.NoiseStream), so a
// seeded run does not depend on which one the number of cores chose.
type noiseSource struct {
	z      []float64
	ahead  *noiseAhead
	step   int
	stream *mech.NoiseStream
}

// vector returns the step's noise vector, or nil to draw from the stream.
func (n noiseSource) vector() []float64 {
	if n.ahead != nil {
		return n.ahead.get(n.step)
	}
	return n.z
}

// noiseChunk is how many noise coordinates noisyMean draws at a time when
// it draws them itself: 32 KiB, well inside L1 with the gradient's chunk.
const noiseChunk = 4096

// noiseAhead draws the noise vectors of a run's steps, in the stream's
// order, up to two steps ahead of the gradient work, for runs on more than
// one core: par's helpers draw a chunk (noiseChunk coordinates) whenever
// they have no product task (par.Background), which fills the second
// core's gaps between a step's parallel passes; the step takes over the
// drawing of its own vector if it is not finished. On one core drawing
// each chunk just before it is used is cheaper (no 1.6 MB vector written
// and read back per step for the MLP) and overlaps nothing anyway. The
// draws are the stream's, whoever makes them and in whatever chunks, so a
// seeded run does not depend on the number of cores.
type noiseAhead struct {
	mu     sync.Mutex // held while drawing; guards the fields below
	stream *mech.NoiseStream
	bufs   [3][]float64 // step s's vector is bufs[s%3]
	dim    int
	total  int // coordinates of all the run's steps
	drawn  int // coordinates drawn so far, over all steps
	done   int // steps whose vector has been used (released)
}

func newNoiseAhead(stream *mech.NoiseStream, dim, steps int) *noiseAhead {
	return &noiseAhead{stream: stream, dim: dim, total: dim * steps}
}

// more draws the next chunk if the vector it belongs to has a free buffer
// (at most two steps ahead of the step in progress) and reports whether it
// did; it returns false at once if another goroutine is drawing.
func (a *noiseAhead) more() bool {
	if !a.mu.TryLock() {
		return false
	}
	defer a.mu.Unlock()
	return a.drawChunk(a.done + 2)
}

// drawChunk draws the next chunk if it belongs to a step ≤ last, and
// reports whether it did. The caller holds a.mu.
func (a *noiseAhead) drawChunk(last int) bool {
	s, off := a.drawn/a.dim, a.drawn%a.dim
	if a.drawn == a.total || s > last {
		return false
	}
	buf := a.bufs[s%3]
	if buf == nil {
		buf = make([]float64, a.dim)
		a.bufs[s%3] = buf
	}
	hi := min(off+noiseChunk, a.dim)
	a.stream.Next(buf[off:hi])
	a.drawn += hi - off
	return true
}

// get returns step s's noise vector, drawing what is left of it.
func (a *noiseAhead) get(s int) []float64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	for a.drawChunk(s) {
	}
	return a.bufs[s%3]
}

// release marks step s's vector as used: its buffer may take step s+3's.
func (a *noiseAhead) release(s int) {
	a.mu.Lock()
	a.done = s + 1
	a.mu.Unlock()
}

// step releases one noisy gradient and applies it, chunk by chunk (noiseChunk
// coordinates) in one pass over the float32 clipped sum, the noise and the
// parameters, so that no gradient-sized vector is written and read back.
// Each chunk is the mechanism and its scaling: the clipped sum rounded to
// the noise's grid plus the noise, exactly GaussianVector.AddTo's output
// (g·round(v/g) + g·Y, all exact in float64; v/g = v·(1/g) since g is a
// power of two), then multiplied by 1/b, b the expected batch size; the
// optimiser's update of the chunk is post-processing. With the noise drawn
// ahead the chunks are independent and spread over the cores, each noisy
// mean written over its own noise (one of noiseAhead's three buffers,
// which no one draws into before the step releases it). A
// non-finite coordinate of the sum stops the run with an error naming the
// first one; its chunk is not updated, the others are (on any number of
// cores alike; the model has diverged either way).
func (t *Trainer) step(rows [][]float32, labels []int, b float64, z noiseSource, dropR *rng.Rand) error {
	sum, err := t.net.ClippedGrad32(rows, labels, t.cfg.Clip, dropR)
	if err != nil {
		return err
	}
	theta, lr := t.net.Params(), t.opt.begin()
	g := t.noise.Granularity()
	ig, ib := 1/g, 1/b
	var bad firstBad
	release := func(lo, hi int, zs, mean []float64) {
		if k := grid.NoisyMean(mean, sum[lo:hi], zs, g, ig, ib); k >= 0 {
			bad.note(lo + k)
			return
		}
		t.opt.update(theta[lo:hi], mean, lo, lr)
	}
	if zs := z.vector(); zs != nil {
		par.Chunks(len(sum), noiseChunk, func(lo, hi int) {
			release(lo, hi, zs[lo:hi], zs[lo:hi])
		})
		if z.ahead != nil {
			z.ahead.release(z.step)
		}
	} else {
		var noise, mean [noiseChunk]float64
		for lo := 0; lo < len(sum); lo += noiseChunk {
			hi := min(lo+noiseChunk, len(sum))
			z.stream.Next(noise[:hi-lo])
			release(lo, hi, noise[:hi-lo], mean[:hi-lo])
		}
	}
	if k := bad.first(); k >= 0 {
		return fmt.Errorf("gradient coordinate %d is %v: the model diverged (lower the learning rate)", k, sum[k])
	}
	t.steps++
	return nil
}

// firstBad is the lowest index noted by concurrent chunks, −1 for none.
type firstBad struct{ k atomic.Int64 }

func (f *firstBad) note(k int) {
	for {
		old := f.k.Load()
		if old != 0 && old-1 <= int64(k) {
			return
		}
		if f.k.CompareAndSwap(old, int64(k)+1) {
			return
		}
	}
}

func (f *firstBad) first() int { return int(f.k.Load()) - 1 }
