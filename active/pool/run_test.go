package pool

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dpal-dev/dpal/data"
	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/rng"
	"github.com/dpal-dev/dpal/dpsgd"
	"github.com/dpal-dev/dpal/model/nn"
)

// blobs is a 3-class problem: Gaussian clusters in 6 dimensions, scaled
// into the unit ball, class 2 rare (10 %).
func blobs(n int, seed uint64) *data.Dataset {
	g := rand.New(rand.NewPCG(seed, 1))
	d := &data.Dataset{Name: "blobs", ClassNames: []string{"a", "b", "c"}}
	for range n {
		c := g.IntN(2)
		if g.Float64() < 0.1 {
			c = 2
		}
		x := make([]float64, 6)
		for j := range x {
			x[j] = 0.15 * g.NormFloat64()
		}
		x[c] += 0.3
		d.X = append(d.X, x)
		d.Class = append(d.Class, c)
	}
	return d
}

func testPlan(t *testing.T, acc Accounting, epsSel float64) *Plan {
	return testPlanMode(t, StepAmplification, acc, epsSel)
}

func testPlanMode(t *testing.T, mode Mode, acc Accounting, epsSel float64) *Plan {
	t.Helper()
	p, err := Build(Config{Epsilon: 4, EpsilonSelect: epsSel, Delta: 1e-4, Batch: 64, Epochs: 4, Initial: 200,
		Queries: []int{100, 50, 50}, Mode: mode, Accounting: acc})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func testLearner(a Acquisition, spec nn.Spec) Learner {
	return Learner{Spec: spec, Acquisition: a, Passes: 4,
		Train: dpsgd.Config{Clip: 1, Optimizer: dpsgd.Momentum, LR: 0.5, Momentum: 0.9}}
}

func newLedger(t *testing.T, p *Plan) *ledger.Ledger {
	t.Helper()
	l, err := ledger.New(account.Budget{Epsilon: p.Config.Epsilon, Delta: p.Config.Delta})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestRunLedgerMatchesPlan runs the whole loop on a small synthetic pool:
// every record's ledger ε must be its group's planned ε to 1e-9 (trained
// records at the target, never-selected ones at the plan's ε_Sel reading),
// each query right after its selection at the plan's j·ε_Sel/T, and the
// model must beat the majority class.
func TestRunLedgerMatchesPlan(t *testing.T) {
	poolData, test := blobs(1200, 1), blobs(600, 2)
	logreg := nn.Spec{Arch: nn.LogReg, Inputs: 6, Classes: 3}
	mlp := nn.Spec{Arch: nn.MLP, Inputs: 6, Classes: 3, Hidden: []int{16}, Activation: nn.ReLU, Dropout: 0.2}
	for _, tc := range []struct {
		name   string
		mode   Mode
		acc    Accounting
		epsSel float64
		l      Learner
	}{
		{"entropy/basic", StepAmplification, Basic, 1, testLearner(Entropy, logreg)},
		{"margin/rdp", StepAmplification, RDP, 1, testLearner(MinimumMargin, logreg)},
		{"bald/basic", StepAmplification, Basic, 1, testLearner(BALD, mlp)},
		{"random", StepAmplification, Basic, 0, testLearner(Random, logreg)},
		{"lc not DP", StepAmplification, Basic, 0, Learner{Spec: logreg, Acquisition: LeastConfidence, NotDP: true, Train: testLearner(0, logreg).Train}},
		{"entropy/continual", Continual, Basic, 1, testLearner(Entropy, logreg)},
		{"entropy/naive/rdp", Naive, RDP, 1, testLearner(Entropy, logreg)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testPlanMode(t, tc.mode, tc.acc, tc.epsSel)
			led := newLedger(t, p)
			steps := 0
			res, err := Run(led, rng.Seeded(3), Input{Plan: p, Learner: tc.l, Pool: poolData.X,
				Oracle: DatasetOracle{Classes: poolData.Class}, Test: test, Progress: func() { steps++ }})
			if err != nil {
				t.Fatal(err)
			}
			if steps != p.TotalSteps() || res.Steps != steps {
				t.Errorf("%d progress calls, %d steps reported, plan %d", steps, res.Steps, p.TotalSteps())
			}
			if res.Privacy.MaxDeviation > 1e-9 {
				t.Errorf("ledger deviates from the plan by %g: %+v", res.Privacy.MaxDeviation, res.Privacy)
			}
			for g, gp := range res.Privacy.Trained {
				if gp.Records != p.Groups[g].Size || math.Abs(gp.Ledger.Max-p.Groups[g].EpsilonTotal) > 1e-9 || gp.Ledger.Max > 4*(1+1e-9) {
					t.Errorf("group %s: %+v, plan %+v", gp.Group, gp, p.Groups[g])
				}
			}
			if want := len(poolData.X) - 400; res.Privacy.NotSelected.Records != want {
				t.Errorf("%d records not selected, want %d", res.Privacy.NotSelected.Records, want)
			}
			for j, r := range res.Rounds[:3] {
				want := float64(j+1) * tc.epsSel / 3
				if tc.acc == Basic && math.Abs(r.Selected.Ledger.Max-want) > 1e-9 {
					t.Errorf("query-%d before training: ledger %v, want %v", j+1, r.Selected.Ledger, want)
				}
			}
			if res.DP == tc.l.NotDP || strings.Contains(res.Acquisition, "not DP") != tc.l.NotDP {
				t.Errorf("DP %v, acquisition %q for NotDP %v", res.DP, res.Acquisition, tc.l.NotDP)
			}
			if res.TestAccuracy < 0.7 {
				t.Errorf("test accuracy %.3f: no better than the majority class", res.TestAccuracy)
			}
		})
	}
}

func TestRunRefuses(t *testing.T) {
	poolData := blobs(500, 1)
	logreg := nn.Spec{Arch: nn.LogReg, Inputs: 6, Classes: 3}
	for _, tc := range []struct {
		name string
		eps  float64
		l    Learner
		pool [][]float64
		want string
	}{
		{"random with ε_Sel", 1, testLearner(Random, logreg), poolData.X, "ε_Sel = 0"},
		{"private without ε_Sel", 0, testLearner(Entropy, logreg), poolData.X, "needs ε_Sel > 0"},
		{"pool too small", 1, testLearner(Entropy, logreg), poolData.X[:300], "the plan labels 400"},
		{"NaN feature", 1, testLearner(Entropy, logreg), append([][]float64{{0, math.NaN(), 0, 0, 0, 0}}, poolData.X...), "record 0, feature 1 is NaN"},
		{"wrong width", 1, testLearner(Entropy, nn.Spec{Arch: nn.LogReg, Inputs: 5, Classes: 3}), poolData.X, "record 0 has 6 features"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testPlan(t, Basic, tc.eps)
			led := newLedger(t, p)
			_, err := Run(led, rng.Seeded(1), Input{Plan: p, Learner: tc.l, Pool: tc.pool, Oracle: DatasetOracle{Classes: poolData.Class}})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
			if led.Len() != 0 {
				t.Errorf("%d ledger entries after a refused run", led.Len())
			}
		})
	}
	t.Run("budget", func(t *testing.T) {
		p := testPlan(t, Basic, 1)
		led, _ := ledger.New(account.Budget{Epsilon: 2, Delta: p.Config.Delta})
		_, err := Run(led, rng.Seeded(1), Input{Plan: p, Learner: testLearner(Entropy, logreg), Pool: poolData.X, Oracle: DatasetOracle{Classes: poolData.Class}})
		if !errors.Is(err, account.ErrBudgetExceeded) {
			t.Errorf("error %v, want ErrBudgetExceeded", err)
		}
	})
}

func TestReaderOracle(t *testing.T) {
	names := []string{"normal", "dos", "probe"}
	t.Run("names and indices", func(t *testing.T) {
		var prompt strings.Builder
		o := NewReaderOracle(strings.NewReader("# answers\nDoS\n\n2\nnormal\n"), &prompt, names)
		got, err := o.Label([]int{7, 8, 9})
		if err != nil || got[0] != 1 || got[1] != 2 || got[2] != 0 {
			t.Fatalf("labels %v, %v", got, err)
		}
		if !strings.Contains(prompt.String(), "pool record 8") {
			t.Errorf("prompt %q does not name record 8", prompt.String())
		}
	})
	for _, tc := range []struct{ in, want string }{
		{"dos\nsmurf\n", `line 2: "smurf" is not a class`},
		{"3\n", `"3" is not a class`},
		{"dos\n", "record 8: no more answers"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			_, err := NewReaderOracle(strings.NewReader(tc.in), nil, names).Label([]int{7, 8})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func FuzzReaderOracle(f *testing.F) {
	f.Add("dos\n1\n#x\nnormal\n")
	f.Fuzz(func(t *testing.T, in string) {
		got, err := NewReaderOracle(strings.NewReader(in), nil, []string{"a", "b"}).Label([]int{0, 1, 2})
		for _, c := range got {
			if err == nil && (c < 0 || c > 1) {
				t.Fatalf("label %d out of range", c)
			}
		}
	})
}
