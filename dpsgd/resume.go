package dpsgd

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/rng"
)

// CheckpointFormat names a sealed DP-SGD checkpoint file (see
// session.SealAs): its MAC covers the name, so a stream learner's state
// never passes for a checkpoint, nor the other way round.
const CheckpointFormat = "dpal-dpsgd-checkpoint"

// checkpointVersion is the version of Checkpoint's JSON form.
const checkpointVersion = 1

// ErrOtherRun is wrapped by RunIntervals' error when the checkpoint to
// resume is not of this run: other settings, seed, groups or data.
var ErrOtherRun = errors.New("the checkpoint is of a run with other settings, seed or data")

// Intervals has a run charged, and checkpointed, interval by interval
// (RunIntervals).
type Intervals struct {
	// Ends are the steps at which the intervals end: increasing, the
	// last one the run's steps (an epoch per interval, say).
	Ends []int
	// Binding describes what the caller knows of the run and the trainer
	// does not (the dataset's name, the target it was calibrated for); it
	// is bound into the run's id with what the trainer knows.
	Binding string
	// From resumes the run that wrote this checkpoint; nil starts a new
	// run.
	From *Checkpoint
	// Save, if not nil, is called with the run's checkpoint before a new
	// run's first charge and at the end of every interval; it must keep
	// it, atomically and privately, before it returns. Its error stops
	// the run.
	Save func(*Checkpoint) error
}

// Checkpoint is a run's state at the start or at the end of one of its
// intervals: what RunIntervals needs to take the run on from there. Its
// JSON form holds the run's id and the digest of its settings, the
// parameters and the optimiser's state bit for bit (little-endian float64,
// base64), and under a seeded source the dropout stream's position. The
// parameters are the intermediate model of a step already charged (the
// threat model releases them all); the state is sealed so that it cannot
// be edited (an earlier step count would redo charged steps with fresh
// noise) and kept private like the stream learner's.
type Checkpoint struct {
	// Run is the run's id, which names its charges in the ledger.
	Run string
	// Steps is the number of steps done: 0 or an interval's end.
	Steps int
	// Extra is the caller's to fill in Save (the epoch reports so far,
	// say); it is saved and restored as it is.
	Extra json.RawMessage

	binding      string
	trainerSteps int
	params       []float64
	optT         int
	optM, optV   []float64
	dropout      []byte
}

// checkpointJSON is Checkpoint's JSON form.
type checkpointJSON struct {
	Version      int             `json:"version"`
	Run          string          `json:"run"`
	Binding      string          `json:"binding"`
	Steps        int             `json:"steps"`
	TrainerSteps int             `json:"trainer_steps"`
	Params       []byte          `json:"params"`
	OptT         int             `json:"optimizer_t"`
	OptM         []byte          `json:"optimizer_m,omitempty"`
	OptV         []byte          `json:"optimizer_v,omitempty"`
	Dropout      []byte          `json:"dropout_rng,omitempty"`
	Extra        json.RawMessage `json:"extra,omitempty"`
}

// MarshalJSON writes the checkpoint.
func (c *Checkpoint) MarshalJSON() ([]byte, error) {
	return json.Marshal(checkpointJSON{Version: checkpointVersion, Run: c.Run, Binding: c.binding, Steps: c.Steps,
		TrainerSteps: c.trainerSteps, Params: floatBytes(c.params), OptT: c.optT, OptM: floatBytes(c.optM),
		OptV: floatBytes(c.optV), Dropout: c.dropout, Extra: c.Extra})
}

// UnmarshalJSON reads a checkpoint; RunIntervals checks it against the
// run it resumes.
func (c *Checkpoint) UnmarshalJSON(b []byte) error {
	var w checkpointJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	if w.Version != checkpointVersion {
		return fmt.Errorf("dpsgd: checkpoint version %d, this dpal reads %d", w.Version, checkpointVersion)
	}
	if w.Run == "" || strings.Contains(w.Run, "/") || w.Steps < 0 || w.TrainerSteps < 0 || w.OptT < 0 {
		return errors.New("dpsgd: invalid checkpoint")
	}
	var err error
	*c = Checkpoint{Run: w.Run, Steps: w.Steps, Extra: w.Extra, binding: w.Binding, trainerSteps: w.TrainerSteps,
		optT: w.OptT, dropout: w.Dropout}
	for _, f := range []struct {
		dst *[]float64
		b   []byte
	}{{&c.params, w.Params}, {&c.optM, w.OptM}, {&c.optV, w.OptV}} {
		if *f.dst, err = bytesFloat(f.b); err != nil {
			return err
		}
	}
	return nil
}

func floatBytes(v []float64) []byte {
	var b []byte
	for _, x := range v {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
	}
	return b
}

func bytesFloat(b []byte) ([]float64, error) {
	if len(b)%8 != 0 {
		return nil, errors.New("dpsgd: checkpoint vector of a length not a multiple of 8 bytes")
	}
	var v []float64
	for i := 0; i < len(b); i += 8 {
		v = append(v, math.Float64frombits(binary.LittleEndian.Uint64(b[i:])))
	}
	return v, nil
}

// RunIntervals is Run made to survive a kill: the run's steps are split
// into intervals (iv.Ends), each charged just before its first step, and
// checkpointed at its end (iv.Save), so a run killed midway has paid for
// the intervals it began and no more, and resuming it (iv.From) pays for
// nothing twice.
//
// Charges. Interval k's charge to each group with Rate > 0 is
// account.SubsampledGaussian({Rate, σ, steps of k}); its ledger Once key
// is "dpsgd/<run>/<k>/<group>", so recording it again (a resumed run
// redoing interval k) is a no-op. RDP composes by adding curves over
// steps, so the intervals' charges add up to the whole run's curve (to
// rounding), and the run's ε is the one Run would charge. Before the
// first interval, all the charges still to come are checked together
// against the budget (ledger.Check): a run that could not finish is
// refused before it spends anything (errors.Is(err,
// account.ErrBudgetExceeded)).
//
// The run's id is random (crypto/rand: a second run with the same
// settings pays again) followed by a digest of everything that defines
// the run: iv.Binding, the trainer's Config and network, the seed (or that
// there is none), the groups with their rates and records, the steps and
// intervals, and the data. A checkpoint whose digest differs is refused
// (ErrOtherRun). So is one that the ledger contradicts: a step it holds
// whose charge is not in led (another ledger), or a charge of the interval
// after next, which only a later checkpoint could have made (the file was
// rolled back to an older copy, whose intervals would be redone with
// fresh noise under charges already spent).
//
// Releases. Save is called before after is for an interval's last step,
// and values derived from the parameters may leave only after the
// checkpoint that holds them is kept (after at an interval's end, or Save
// itself once it has kept the checkpoint): a resumed run redoes the steps
// after its checkpoint, under their charges, with fresh noise unless
// seeded, so a value of those steps that had left the killed run would
// be a second release paid once. after at other steps may report
// progress only. A resumed run calls after once with the steps it
// restored before it takes any (the state after them is its checkpoint's,
// whose values may leave).
//
// Randomness. A new run splits the same streams from r as Run does, and
// draws the same values: a seeded RunIntervals gives Run's parameters.
// A resumed seeded run splits them again and draws the sampling and noise
// of the steps done once more, dropping them (they depend on the seed,
// the groups' sizes and rates and the dimension, not on the data), and
// restores the dropout stream's position from the checkpoint: its
// parameters are then bit for bit those of an uninterrupted run. Under a
// secure source a resumed run draws fresh streams: no noise is reused.
func (t *Trainer) RunIntervals(led *ledger.Ledger, r *rng.Rand, d Data, groups []Group, steps int, iv Intervals, after func(done int) error) (RunResult, error) {
	if led == nil {
		return RunResult{}, errors.New("dpsgd: a ledger is required: every step is charged before it runs")
	}
	b, err := t.divisor(d, groups, steps)
	if err != nil {
		return RunResult{}, err
	}
	if err := checkEnds(iv.Ends, steps); err != nil {
		return RunResult{}, err
	}
	u := &intervalRun{t: t, led: led, iv: iv, x: d.rows32(), labels: d.Labels, groups: groups, b: b, paid: charged(groups), after: after}
	u.bind = t.binding(iv.Binding, r, u.x, d.Labels, groups, steps, iv.Ends)
	if iv.From == nil {
		if u.id, err = newRunID(u.bind); err != nil {
			return RunResult{}, err
		}
	} else if err := t.checkResume(iv.From, u.bind, iv.Ends); err != nil {
		return RunResult{}, err
	} else {
		u.id, u.from = iv.From.Run, iv.From.Steps
	}
	res := RunResult{ExpectedBatch: b, Run: u.id, Steps: u.from, Resumed: u.from}
	first := sort.SearchInts(iv.Ends, u.from+1) // the first interval to run
	if u.plan, err = t.intervalCharges(u.id, u.paid, iv.Ends); err != nil {
		return res, err
	}
	if err := checkLedger(led, u.plan, first); err != nil {
		return res, err
	}
	u.st = t.streams(r)
	if err := u.begin(); err != nil {
		return res, err
	}
	start := time.Now()
	for k := first; k < len(iv.Ends) && err == nil; k++ {
		err = u.interval(k, &res)
	}
	res.Seconds = time.Since(start).Seconds()
	return res, err
}

// intervalRun is one call of RunIntervals.
type intervalRun struct {
	t        *Trainer
	led      *ledger.Ledger
	iv       Intervals
	st       streams
	x        [][]float32
	labels   []int
	groups   []Group
	b        float64
	paid     []Group           // the groups charged
	plan     [][]ledger.Charge // each interval's charges, one per paid group
	id, bind string
	from     int // the steps restored from iv.From
	after    func(int) error
}

// begin restores a resumed run (and reports the state restored to after),
// or saves a new run's first checkpoint.
func (u *intervalRun) begin() error {
	if u.iv.From == nil {
		if u.iv.Save == nil {
			return nil
		}
		return u.iv.Save(u.t.checkpoint(u.id, u.bind, 0, u.st.drop))
	}
	if err := u.t.restore(u.iv.From, u.st, u.groups, u.b); err != nil {
		return err
	}
	if u.after != nil && u.from > 0 {
		return u.after(u.from)
	}
	return nil
}

// interval charges interval k (a no-op where a killed run already did),
// runs its steps and saves its checkpoint before after hears of its last
// step.
func (u *intervalRun) interval(k int, res *RunResult) error {
	for j, c := range u.plan[k] {
		e, err := u.led.Record(c)
		if err != nil {
			return fmt.Errorf("dpsgd: charging group %q for interval %d: %w", u.paid[j].Name, k+1, err)
		}
		g := u.paid[j]
		res.Charges = append(res.Charges, Charge{Group: g.Name, Rate: g.Rate, Records: len(g.Records), Loss: c.Loss, Seq: e.Seq})
	}
	lo, hi := 0, u.iv.Ends[k]
	if k > 0 {
		lo = u.iv.Ends[k-1]
	}
	end := func(done int) error {
		if done == hi && u.iv.Save != nil {
			if err := u.iv.Save(u.t.checkpoint(u.id, u.bind, done, u.st.drop)); err != nil {
				return err
			}
		}
		if u.after != nil {
			return u.after(done)
		}
		return nil
	}
	return u.t.runSteps(u.st, u.x, u.labels, u.groups, lo, hi, u.b, res, end)
}

// checkEnds accepts increasing interval ends, the last one steps ≥ 1.
func checkEnds(ends []int, steps int) error {
	if steps < 1 || len(ends) == 0 || ends[len(ends)-1] != steps {
		return fmt.Errorf("dpsgd: the intervals must end at the run's last step (%d)", steps)
	}
	for i, e := range ends {
		if e < 1 || (i > 0 && e <= ends[i-1]) {
			return fmt.Errorf("dpsgd: interval ends %v are not increasing from 1", ends)
		}
	}
	return nil
}

// newRunID is a random name followed by the first 16 hex digits of the
// run's binding digest.
func newRunID(bind string) (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("dpsgd: run id: %w", err)
	}
	return hex.EncodeToString(b[:]) + "-" + bind[:16], nil
}

// binding is the hex SHA-256 of what defines a run (see RunIntervals).
func (t *Trainer) binding(caller string, r *rng.Rand, x [][]float32, labels []int, groups []Group, steps int, ends []int) string {
	h := sha256.New()
	var buf []byte
	u := func(v ...uint64) {
		buf = buf[:0]
		for _, x := range v {
			buf = binary.LittleEndian.AppendUint64(buf, x)
		}
		h.Write(buf)
	}
	str := func(s string) {
		u(uint64(len(s)))
		h.Write([]byte(s))
	}
	str("dpal-dpsgd-run/1")
	str(caller)
	cfg, _ := json.Marshal(t.cfg) // plain fields: it cannot fail
	spec, _ := json.Marshal(t.net.Spec())
	str(string(cfg))
	str(string(spec))
	seed, seeded := r.Seed()
	u(b2u(seeded), seed, uint64(steps), uint64(len(ends)))
	for _, e := range ends {
		u(uint64(e))
	}
	u(uint64(len(groups)))
	for _, g := range groups {
		str(g.Name)
		u(math.Float64bits(g.Rate), uint64(len(g.Records)))
		for _, i := range g.Records {
			u(uint64(i))
		}
	}
	hashData(h, x, labels)
	return hex.EncodeToString(h.Sum(nil))
}

// hashData writes the rows (their float32 bits) and labels to h.
func hashData(h hash.Hash, x [][]float32, labels []int) {
	var buf []byte
	buf = binary.LittleEndian.AppendUint64(buf, uint64(len(x)))
	for i, row := range x {
		buf = binary.LittleEndian.AppendUint64(buf, uint64(len(row)))
		buf = binary.LittleEndian.AppendUint64(buf, uint64(labels[i]))
		for _, v := range row {
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
		}
		h.Write(buf)
		buf = buf[:0]
	}
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// intervalCharges returns each interval's charges, one per group of
// groups in order, with their Once keys.
// A step's curve times the interval's steps is bit for bit the curve
// groupCharge computes for those steps (account.ScheduleRDP multiplies the
// per-step curve by the steps), at one evaluation of the curve per group.
func (t *Trainer) intervalCharges(id string, groups []Group, ends []int) ([][]ledger.Charge, error) {
	out := make([][]ledger.Charge, len(ends))
	for _, g := range groups {
		one, err := t.groupCharge(g, 1)
		if err != nil {
			return nil, err
		}
		lo := 0
		for k, hi := range ends {
			c := one
			if c.Loss, err = one.Loss.Times(hi - lo); err != nil {
				return nil, err
			}
			c.Loss.Mechanism = one.Loss.Mechanism
			c.Loss.Params["steps"] = float64(hi - lo)
			c.Once = fmt.Sprintf("dpsgd/%s/%d/%s", id, k, g.Name)
			c.Note = fmt.Sprintf("DP-SGD run %s, interval %d of %d: steps %d–%d, rate %v, σ %v, C %v, %d records",
				id, k+1, len(ends), lo+1, hi, g.Rate, t.cfg.NoiseMultiplier, t.cfg.Clip, len(g.Records))
			out[k] = append(out[k], c)
			lo = hi
		}
	}
	return out, nil
}

// checkLedger checks, for a run about to start interval first, that led
// holds the charges of the intervals before it and none of those after
// next, and that the charges still to come fit the budget together.
func checkLedger(led *ledger.Ledger, plan [][]ledger.Charge, first int) error {
	for k, cs := range plan {
		for _, c := range cs {
			switch {
			case k < first && !led.Charged(c.Once):
				return fmt.Errorf("dpsgd: the checkpoint's interval %d was never charged to this ledger (%s): is it the run's ledger?", k+1, c.Once)
			case k > first && led.Charged(c.Once):
				return fmt.Errorf("dpsgd: this ledger holds the charge of interval %d, which only a later checkpoint than this one (%d intervals done) could make: the checkpoint was rolled back, and resuming it would redo charged steps with new noise", k+1, first)
			}
		}
	}
	var todo = map[string][]account.Loss{}
	var names []string
	for _, cs := range plan[first:] {
		for _, c := range cs {
			if led.Charged(c.Once) {
				continue
			}
			g := c.Groups[0]
			if todo[g] == nil {
				names = append(names, g)
			}
			todo[g] = append(todo[g], c.Loss)
		}
	}
	for _, g := range names {
		loss, err := account.Compose(todo[g]...)
		if err != nil {
			return fmt.Errorf("dpsgd: group %q: %w", g, err)
		}
		loss.Mechanism = "dp-sgd"
		if err := led.Check(ledger.Charge{Groups: []string{g}, Loss: loss}); err != nil {
			return fmt.Errorf("dpsgd: the rest of the run (%d intervals) does not fit: %w", len(todo[g]), err)
		}
	}
	return nil
}

// checkResume checks that ck is a checkpoint of the run bound by bind,
// taken at the start or at an interval's end, with state of the trainer's
// shape.
func (t *Trainer) checkResume(ck *Checkpoint, bind string, ends []int) error {
	if ck.binding != bind {
		return fmt.Errorf("dpsgd: %w: resume it with the settings, seed and data it was started with", ErrOtherRun)
	}
	if i := sort.SearchInts(ends, ck.Steps); ck.Steps != 0 && (i == len(ends) || ends[i] != ck.Steps) {
		return fmt.Errorf("dpsgd: the checkpoint is at step %d, which ends no interval", ck.Steps)
	}
	dim := t.net.NumParams()
	if len(ck.params) != dim || len(ck.optM) != len(t.opt.m) || len(ck.optV) != len(t.opt.v) {
		return errors.New("dpsgd: the checkpoint's state does not fit the network and optimiser")
	}
	return nil
}

// checkpoint is the trainer's state after done steps of run id.
func (t *Trainer) checkpoint(id, bind string, done int, drop *rng.Rand) *Checkpoint {
	ck := &Checkpoint{Run: id, Steps: done, binding: bind, trainerSteps: t.steps, params: slices.Clone(t.net.Params()),
		optT: t.opt.t, optM: slices.Clone(t.opt.m), optV: slices.Clone(t.opt.v)}
	if _, seeded := drop.Seed(); seeded {
		ck.dropout, _ = drop.MarshalBinary() // a split of a seeded source: it cannot fail
	}
	return ck
}

// restore puts the trainer and the run's streams where ck left them: the
// parameters, the optimiser and, under a seeded source, the streams'
// positions (see RunIntervals).
func (t *Trainer) restore(ck *Checkpoint, st streams, groups []Group, b float64) error {
	if _, seeded := st.drop.Seed(); seeded {
		if err := st.drop.UnmarshalBinary(ck.dropout); err != nil {
			return fmt.Errorf("dpsgd: the checkpoint's dropout stream: %w", err)
		}
		t.replay(st, groups, ck.Steps, b)
	}
	copy(t.net.Params(), ck.params)
	copy(t.opt.m, ck.optM)
	copy(t.opt.v, ck.optV)
	t.opt.t, t.steps = ck.optT, ck.trainerSteps
	return nil
}

// replay draws the sampling and the noise of n steps and drops them,
// which puts a seeded run's sampling and noise streams where n steps left
// them: neither depends on the data (sample reads a fixed number of bytes
// per record and ties; the noise is NumParams coordinates per step, the
// same values however they are chunked).
func (t *Trainer) replay(st streams, groups []Group, n int, b float64) {
	dim := t.net.NumParams()
	idx := make([]int, 0, int(2*b)+16)
	buf := make([]float64, min(dim, noiseChunk))
	for range n {
		idx = sample(st.samp, groups, idx[:0])
		for lo := 0; lo < dim; lo += noiseChunk {
			st.noise.Next(buf[:min(noiseChunk, dim-lo)])
		}
	}
}
