package dpsgd

import (
	"encoding/json"
	"errors"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/model/nn"
)

// resumeRun is one trainer of the resume tests: an MLP with dropout (1 378
// parameters: the noise takes the bulk path) under Adam, two groups at
// different rates, 12 steps in four uneven intervals.
type resumeRun struct {
	r      *rng.Rand
	d      Data
	net    *nn.Net
	tr     *Trainer
	groups []Group
}

var resumeEnds = []int{3, 5, 9, 12}

const resumeSteps = 12

// newResumeRun builds the run the same way every time: the data from a
// fixed seed, the network from r (seeded by seed, secure when nil), so
// that r is where a first run had it.
func newResumeRun(t *testing.T, seed *uint64, lr float64) *resumeRun {
	t.Helper()
	d := uniformData(rng.Seeded(100), 300, 40)
	r := rng.New(seed)
	net, err := nn.New(nn.Spec{Arch: nn.MLP, Inputs: 40, Classes: 2, Hidden: []int{32}, Activation: nn.ReLU, Dropout: 0.2}, r.Split())
	if err != nil {
		t.Fatal(err)
	}
	tr, err := New(net, Config{NoiseMultiplier: 1.1, Clip: 1, LR: lr, Optimizer: Adam})
	if err != nil {
		t.Fatal(err)
	}
	return &resumeRun{r: r, d: d, net: net, tr: tr,
		groups: []Group{{Name: "old", Records: all(300)[:200], Rate: 0.1}, {Name: "new", Records: all(300)[200:], Rate: 0.3}}}
}

func (u *resumeRun) run(led *ledger.Ledger, iv Intervals, after func(int) error) (RunResult, error) {
	if iv.Ends == nil {
		iv.Ends = resumeEnds
	}
	if iv.Binding == "" {
		iv.Binding = "resume test"
	}
	return u.tr.RunIntervals(led, u.r, u.d, u.groups, resumeSteps, iv, after)
}

func seedPtr(s uint64) *uint64 { return &s }

// Charged interval by interval, a seeded run takes Run's steps bit for bit
// (on one core and two), and each group's charges compose to Run's whole
// charge: the same RDP curve to rounding, the same ε.
func TestIntervalsMatchRun(t *testing.T) {
	for _, procs := range []int{1, 2} {
		func() {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			a, b := newResumeRun(t, seedPtr(7), 0.05), newResumeRun(t, seedPtr(7), 0.05)
			ledA, ledB := newLedger(t, 100), newLedger(t, 100)
			if _, err := a.tr.Run(ledA, a.r, a.d, a.groups, resumeSteps, nil); err != nil {
				t.Fatal(err)
			}
			res, err := b.run(ledB, Intervals{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(a.net.Params(), b.net.Params()) {
				t.Errorf("%d cores: the interval run's parameters differ from Run's", procs)
			}
			if res.Steps != resumeSteps || res.Resumed != 0 || !(res.Seconds > 0) || len(res.Charges) != 8 || ledB.Len() != 8 || !strings.Contains(res.Run, "-") {
				t.Errorf("result %+v with %d entries", res, ledB.Len())
			}
			entries, _ := ledB.Entries()
			for i, e := range entries {
				g, k := a.groups[i%2], i/2
				steps := resumeEnds[k]
				if k > 0 {
					steps -= resumeEnds[k-1]
				}
				want, _ := account.SubsampledGaussian([]account.Phase{{SampleRate: g.Rate, NoiseMultiplier: 1.1, Steps: steps}})
				if e.Groups[0] != g.Name || !slices.Equal(e.Loss.RDP, want.RDP) || e.Loss.Params["steps"] != float64(steps) {
					t.Errorf("entry %d: %v, %v steps: not interval %d's charge to %s", i+1, e.Groups, e.Loss.Params["steps"], k+1, g.Name)
				}
			}
			for _, g := range a.groups {
				whole, parts := ledA.Loss(g.Name), ledB.Loss(g.Name)
				for i := range whole.RDP {
					if d := math.Abs(whole.RDP[i] - parts.RDP[i]); d > 1e-14*whole.RDP[i] {
						t.Fatalf("group %s, order %v: intervals sum to %v, the whole run is %v", g.Name, whole.Orders[i], parts.RDP[i], whole.RDP[i])
					}
				}
				ea, _ := ledA.Spent(g.Name)
				eb, _ := ledB.Spent(g.Name)
				if math.Abs(ea-eb) > 1e-13*ea {
					t.Errorf("group %s: ε %v charged by intervals, %v whole", g.Name, eb, ea)
				}
			}
		}()
	}
}

var errKill = errors.New("killed")

// A seeded run stopped after any checkpoint, or after any interval's
// charge, and resumed from its last checkpoint ends with the parameters of
// the uninterrupted run, bit for bit, and the same ledger: one charge per
// interval and group, the same ε. While stopped, the ledger holds at most
// one interval beyond the checkpoint.
func TestResumeSeeded(t *testing.T) {
	ref := newResumeRun(t, seedPtr(3), 0.05)
	refLed := newLedger(t, 100)
	if _, err := ref.run(refLed, Intervals{}, nil); err != nil {
		t.Fatal(err)
	}
	for _, procs := range []int{1, 2} {
		for k := range len(resumeEnds) + 1 {
			for _, stop := range []string{"after checkpoint", "after charge"} {
				if stop == "after charge" && k == len(resumeEnds) {
					continue
				}
				func() {
					defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
					led := newLedger(t, 100)
					at := 0 // the checkpoint to stop after
					if k > 0 {
						at = resumeEnds[k-1]
					}
					var saved []byte
					save := func(ck *Checkpoint) error {
						var err error
						if saved, err = json.Marshal(ck); err != nil {
							return err
						}
						if ck.Steps == at && stop == "after checkpoint" {
							return errKill
						}
						return nil
					}
					after := func(done int) error {
						if done == at+1 && stop == "after charge" {
							return errKill
						}
						return nil
					}
					u := newResumeRun(t, seedPtr(3), 0.05)
					if _, err := u.run(led, Intervals{Save: save}, after); !errors.Is(err, errKill) {
						t.Fatalf("stopped run: %v", err)
					}
					if intervals := led.Len() / 2; intervals > k+1 || intervals < k {
						t.Errorf("stopped with %d intervals charged and %d checkpointed", intervals, k)
					}
					var ck Checkpoint
					if err := json.Unmarshal(saved, &ck); err != nil {
						t.Fatal(err)
					}
					v := newResumeRun(t, seedPtr(3), 0.05)
					var dones []int
					res, err := v.run(led, Intervals{From: &ck}, func(done int) error {
						dones = append(dones, done)
						return nil
					})
					if err != nil {
						t.Fatalf("%d cores, stopped %s %d: resume: %v", procs, stop, k, err)
					}
					if res.Resumed != at || res.Steps != resumeSteps || res.Run != ck.Run {
						t.Errorf("resume result %+v", res)
					}
					if first := max(at, 1); len(dones) != resumeSteps-first+1 || dones[0] != first || dones[len(dones)-1] != resumeSteps {
						t.Errorf("resumed at %d: after called with %v", at, dones)
					}
					if !slices.Equal(v.net.Params(), ref.net.Params()) {
						t.Errorf("%d cores, stopped %s %d: the resumed parameters differ from the uninterrupted run's", procs, stop, k)
					}
					if led.Len() != refLed.Len() {
						t.Errorf("%d entries, the uninterrupted run made %d", led.Len(), refLed.Len())
					}
					for _, g := range ref.groups {
						e, _ := led.Spent(g.Name)
						if want, _ := refLed.Spent(g.Name); e != want {
							t.Errorf("group %s: ε %v after the resume, %v uninterrupted", g.Name, e, want)
						}
					}
				}()
			}
		}
	}
}

// A secure run resumes with fresh randomness and pays for nothing twice.
func TestResumeSecure(t *testing.T) {
	led, ref := newLedger(t, 100), newLedger(t, 100)
	if _, err := newResumeRun(t, nil, 0.05).run(ref, Intervals{}, nil); err != nil {
		t.Fatal(err)
	}
	var saved []byte
	save := func(ck *Checkpoint) error {
		saved, _ = json.Marshal(ck)
		if ck.Steps == resumeEnds[1] {
			return errKill
		}
		return nil
	}
	u := newResumeRun(t, nil, 0.05)
	if _, err := u.run(led, Intervals{Save: save}, nil); !errors.Is(err, errKill) {
		t.Fatal(err)
	}
	var ck Checkpoint
	if err := json.Unmarshal(saved, &ck); err != nil {
		t.Fatal(err)
	}
	if ck.dropout != nil {
		t.Error("a secure run saved its dropout stream")
	}
	v := newResumeRun(t, nil, 0.05)
	res, err := v.run(led, Intervals{From: &ck}, nil)
	if err != nil || res.Resumed != resumeEnds[1] || res.Steps != resumeSteps {
		t.Fatalf("%+v, %v", res, err)
	}
	for _, g := range u.groups {
		e, _ := led.Spent(g.Name)
		want, _ := ref.Spent(g.Name)
		if e != want || led.Len() != ref.Len() {
			t.Errorf("group %s: ε %v in %d entries, uninterrupted %v in %d", g.Name, e, led.Len(), want, ref.Len())
		}
	}
}

// A resume is refused when its checkpoint is of another run (settings,
// seed), when the ledger lacks the checkpoint's charges or holds charges
// only a later checkpoint could have made (a rolled-back checkpoint), and
// a run whose remaining charges exceed the budget is refused before any.
func TestResumeRefuses(t *testing.T) {
	led := newLedger(t, 100)
	var cks [][]byte
	save := func(ck *Checkpoint) error {
		b, _ := json.Marshal(ck)
		cks = append(cks, b)
		return nil
	}
	if _, err := newResumeRun(t, seedPtr(5), 0.05).run(led, Intervals{Save: save}, nil); err != nil {
		t.Fatal(err)
	}
	if len(cks) != len(resumeEnds)+1 {
		t.Fatalf("%d checkpoints, want one at the start and one per interval", len(cks))
	}
	ck := func(i int) *Checkpoint {
		var c Checkpoint
		if err := json.Unmarshal(cks[i], &c); err != nil {
			t.Fatal(err)
		}
		return &c
	}
	resume := func(seed *uint64, lr float64, l *ledger.Ledger, c *Checkpoint, iv Intervals) error {
		iv.From = c
		_, err := newResumeRun(t, seed, lr).run(l, iv, nil)
		return err
	}
	last := len(cks) - 1
	if err := resume(seedPtr(5), 0.05, led, ck(last), Intervals{}); err != nil {
		t.Fatalf("resuming the finished run: %v", err)
	}
	for _, c := range []struct {
		name string
		err  error
	}{
		{"other learning rate", resume(seedPtr(5), 0.06, led, ck(last), Intervals{})},
		{"other seed", resume(seedPtr(6), 0.05, led, ck(last), Intervals{})},
		{"secure", resume(nil, 0.05, led, ck(last), Intervals{})},
		{"other binding", resume(seedPtr(5), 0.05, led, ck(last), Intervals{Binding: "another dataset"})},
		{"other intervals", resume(seedPtr(5), 0.05, led, ck(last), Intervals{Ends: []int{6, 12}})},
	} {
		if !errors.Is(c.err, ErrOtherRun) {
			t.Errorf("%s: got %v, want ErrOtherRun", c.name, c.err)
		}
	}
	if err := resume(seedPtr(5), 0.05, newLedger(t, 100), ck(2), Intervals{}); err == nil || !strings.Contains(err.Error(), "never charged") {
		t.Errorf("another ledger: %v", err)
	}
	n := led.Len()
	if err := resume(seedPtr(5), 0.05, led, ck(1), Intervals{}); err == nil || !strings.Contains(err.Error(), "rolled back") {
		t.Errorf("a rolled-back checkpoint: %v", err)
	}
	if err := resume(seedPtr(5), 0.05, led, ck(last-1), Intervals{}); err != nil {
		t.Errorf("the checkpoint before the last interval, whose charge is made: %v", err)
	}
	if led.Len() != n {
		t.Errorf("the resumes charged %d entries", led.Len()-n)
	}

	// Room for the run and a tenth: a second one is refused before its first
	// charge.
	small := newLedger(t, 100)
	if _, err := newResumeRun(t, seedPtr(5), 0.05).run(small, Intervals{}, nil); err != nil {
		t.Fatal(err)
	}
	eps, _ := small.Spent("new")
	tight := newLedger(t, eps*1.1)
	if _, err := newResumeRun(t, seedPtr(5), 0.05).run(tight, Intervals{}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := newResumeRun(t, seedPtr(5), 0.05).run(tight, Intervals{Save: func(*Checkpoint) error {
		t.Error("a refused run saved a checkpoint")
		return nil
	}}, nil); !errors.Is(err, account.ErrBudgetExceeded) {
		t.Errorf("got %v, want ErrBudgetExceeded", err)
	}
	if tight.Len() != 8 {
		t.Errorf("the refused run charged %d entries", tight.Len()-8)
	}
	for _, ends := range [][]int{nil, {12, 12}, {5, 3, 12}, {3, 5}, {0, 12}} {
		iv := Intervals{Ends: ends}
		if ends == nil {
			iv.Ends = []int{}
		}
		if _, err := newResumeRun(t, seedPtr(5), 0.05).run(newLedger(t, 100), iv, nil); err == nil {
			t.Errorf("interval ends %v accepted", ends)
		}
	}
}
