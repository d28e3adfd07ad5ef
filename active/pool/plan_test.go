package pool

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/model/nn"
)

// cifar is the CIFAR-10 setting of the paper's code (issue 11).
func cifar(m Mode, a Accounting) Config {
	return Config{Epsilon: 8, EpsilonSelect: 2, Delta: 1e-5, Batch: 4096, Epochs: 30, Initial: 10000,
		Queries: []int{10000, 3000, 1000, 1000}, Mode: m, Accounting: a}
}

// plans memoises the CIFAR plans several tests read (Build is pure).
var plans = map[[2]int]*Plan{}

// cifarPlan returns the memoised plan of cifar(m, a).
func cifarPlan(t *testing.T, m Mode, a Accounting) *Plan {
	t.Helper()
	key := [2]int{int(m), int(a)}
	if p, ok := plans[key]; ok {
		return p
	}
	p, err := Build(cifar(m, a))
	if err != nil {
		t.Fatal(err)
	}
	plans[key] = p
	return p
}

// checkPlan checks the guarantees every plan gives, and for step
// amplification and noise reduction the equal losses and batches.
func checkPlan(t *testing.T, cfg Config, p *Plan) {
	t.Helper()
	T := len(cfg.Queries)
	if len(p.Groups) != T+1 {
		t.Fatalf("%d groups, want %d", len(p.Groups), T+1)
	}
	top := 0.0
	for _, g := range p.Groups {
		if g.EpsilonTotal > cfg.Epsilon*(1+1e-9) {
			t.Errorf("group %s: ε = %.12g over the target %v", g.Group, g.EpsilonTotal, cfg.Epsilon)
		}
		top = math.Max(top, g.EpsilonTotal)
	}
	if top < cfg.Epsilon*0.999 {
		t.Errorf("largest group ε = %v uses less than 99.9%% of %v", top, cfg.Epsilon)
	}
	equal := cfg.Mode == StepAmplification || cfg.Mode == NoiseReduction
	for _, ph := range p.Phases {
		for _, g := range ph.Groups {
			if !(g.SampleRate >= 0 && g.SampleRate <= 1) {
				t.Errorf("round %d group %s: rate %v", ph.Round, g.Group, g.SampleRate)
			}
		}
		if (equal || cfg.Mode == Naive) && math.Abs(ph.ExpectedBatch-float64(cfg.Batch)) > 1e-9*float64(cfg.Batch) {
			t.Errorf("round %d: expected batch %.12g, want %d", ph.Round, ph.ExpectedBatch, cfg.Batch)
		}
	}
	if !equal {
		return
	}
	for _, g := range p.Groups {
		if g.EpsilonTotal < cfg.Epsilon*0.999 {
			t.Errorf("group %s: ε = %v uses less than 99.9%% of %v", g.Group, g.EpsilonTotal, cfg.Epsilon)
		}
	}
	for round := 1; round <= T+1; round++ {
		lo, hi := math.Inf(1), 0.0
		for g := 0; g < round; g++ {
			e, _, err := p.Epsilon(g, round)
			if err != nil {
				t.Fatal(err)
			}
			lo, hi = math.Min(lo, e), math.Max(hi, e)
		}
		if hi-lo > 1e-9*cfg.Epsilon {
			t.Errorf("round %d: group losses range over [%.12g, %.12g]", round, lo, hi)
		}
	}
}

func TestBuildCIFAR(t *testing.T) {
	for _, m := range []Mode{Naive, StepAmplification, NoiseReduction, Continual} {
		for _, a := range []Accounting{Basic, RDP} {
			t.Run(m.String()+"/"+a.String(), func(t *testing.T) {
				cfg := cifar(m, a)
				p := cifarPlan(t, m, a)
				checkPlan(t, cfg, p)
				for _, g := range p.Groups {
					t.Logf("%-8s ε_train %.6f ε_sel %.2f ε_total %.12f", g.Group, g.EpsilonTraining, g.EpsilonSelection, g.EpsilonTotal)
				}
			})
		}
	}
}

// TestEquation6 checks the selection losses of eq. 6 and §3.5: query j has
// paid j·ε_Sel/T; with labelled records scored too, everyone pays ε_Sel.
func TestEquation6(t *testing.T) {
	for _, c := range []struct {
		scored bool
		acc    Accounting
	}{{false, Basic}, {true, Basic}, {true, RDP}} {
		scored := c.scored
		cfg := cifar(StepAmplification, c.acc)
		cfg.ScoresLabelled = scored
		p, err := Build(cfg)
		if err != nil {
			t.Fatal(err)
		}
		checkPlan(t, cfg, p)
		for j, g := range p.Groups {
			want := float64(j) * 0.5
			if scored {
				want = 2
			}
			if math.Abs(g.EpsilonSelection-want) > 1e-12 {
				t.Errorf("scored=%v %s: ε_sel %v, want %v", scored, g.Group, g.EpsilonSelection, want)
			}
			if c.acc == Basic && math.Abs(g.EpsilonTraining+g.EpsilonSelection-g.EpsilonTotal) > 1e-12 {
				t.Errorf("basic composition: %v + %v ≠ %v", g.EpsilonTraining, g.EpsilonSelection, g.EpsilonTotal)
			}
		}
		u, err := p.UnselectedEpsilon()
		if c.acc == Basic && (err != nil || u != 2) {
			t.Errorf("never-selected ε = %v (%v), want ε_Sel = 2", u, err)
		}
	}
}

// TestJointRDPLeavesMore checks that joint RDP accounting leaves more ε
// for the training of every selected group than basic composition.
func TestJointRDPLeavesMore(t *testing.T) {
	basic, joint := cifarPlan(t, StepAmplification, Basic), cifarPlan(t, StepAmplification, RDP)
	for j := 1; j < len(basic.Groups); j++ {
		b, r := basic.Groups[j], joint.Groups[j]
		if !(r.EpsilonTraining > b.EpsilonTraining) {
			t.Errorf("%s: training ε %v under RDP, %v under basic", b.Group, r.EpsilonTraining, b.EpsilonTraining)
		}
	}
}

// TestAnyGroups plans random settings with 1 to 7 queries.
func TestAnyGroups(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 1))
	for i := range 4 {
		T := 1 + r.IntN(7)
		cfg := Config{Epsilon: 1 + 9*r.Float64(), Delta: 1e-6, Batch: 100 + r.IntN(900), Epochs: 1 + r.IntN(20),
			Mode: StepAmplification, Accounting: Accounting(i % 2)}
		cfg.EpsilonSelect = cfg.Epsilon * r.Float64() / 3
		cfg.Initial = cfg.Batch + r.IntN(5000)
		for range T {
			cfg.Queries = append(cfg.Queries, 50+r.IntN(3000))
		}
		for _, m := range []Mode{StepAmplification, NoiseReduction} {
			cfg.Mode = m
			p, err := Build(cfg)
			if err != nil {
				t.Fatalf("%+v: %v", cfg, err)
			}
			checkPlan(t, cfg, p)
		}
	}
}

// TestInitialIsBatch plans a first round that must sample every record
// (|D_1| = b): its σ is the one that lands the group on E_1, not the
// largest σ that keeps the batch at b.
func TestInitialIsBatch(t *testing.T) {
	cfg := cifar(StepAmplification, Basic)
	cfg.Initial, cfg.Epochs, cfg.Queries = 4096, 1, []int{100000, 100}
	p, err := Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkPlan(t, cfg, p)
	// Under replace-one the curve at q < 1 is a quadrature, at q = 1 a
	// closed form: the search may stop a rounding short of 1.
	if q := p.Phases[0].Groups[0].SampleRate; q < 1-1e-9 {
		t.Errorf("round 1 rate %v, want 1", q)
	}
}

// TestNoSelectionLoss plans random acquisition (ε_Sel = 0) and the
// classic conversion.
func TestNoSelectionLoss(t *testing.T) {
	cfg := cifar(StepAmplification, RDP)
	cfg.EpsilonSelect, cfg.Conversion = 0, account.Classic
	p, err := Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkPlan(t, cfg, p)
	for _, g := range p.Groups {
		if g.EpsilonSelection != 0 || g.EpsilonTraining != g.EpsilonTotal {
			t.Errorf("%+v", g)
		}
	}
}

// TestNaiveSteps checks the rounding n_i = ⌊e·|D_i|/b⌋.
func TestNaiveSteps(t *testing.T) {
	cfg := cifar(Naive, Basic)
	for i, want := range []int{73, 146, 168, 175, 183} {
		if got := cfg.NaiveSteps(i + 1); got != want {
			t.Errorf("round %d: %d steps, want %d", i+1, got, want)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"epsilon", func(c *Config) { c.Epsilon = 0 }, "epsilon"},
		{"epsilon NaN", func(c *Config) { c.Epsilon = math.NaN() }, "epsilon"},
		{"select above total", func(c *Config) { c.EpsilonSelect = 8 }, "epsilon-select"},
		{"select negative", func(c *Config) { c.EpsilonSelect = -1 }, "epsilon-select"},
		{"delta", func(c *Config) { c.Delta = 0 }, "delta"},
		{"batch", func(c *Config) { c.Batch = 0 }, "batch"},
		{"epochs", func(c *Config) { c.Epochs = 0 }, "epochs"},
		{"initial below batch", func(c *Config) { c.Initial = 100 }, "initial"},
		{"no queries", func(c *Config) { c.Queries = nil }, "query"},
		{"empty query", func(c *Config) { c.Queries = []int{10, 0} }, "query 2"},
		{"mode", func(c *Config) { c.Mode = 9 }, "mode"},
		{"too few steps", func(c *Config) { c.Initial, c.Epochs, c.Queries = 4096, 1, []int{100, 100} }, "even sampled at every step"},
		{"selection leaves no room", func(c *Config) { c.Epsilon, c.EpsilonSelect = 0.5, 0.45 }, "cannot train"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := cifar(StepAmplification, Basic)
			c.edit(&cfg)
			_, err := Build(cfg)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one naming %q", err, c.want)
			}
		})
	}
}

func TestParse(t *testing.T) {
	for _, m := range []Mode{Naive, StepAmplification, NoiseReduction, Continual} {
		if got, err := ParseMode(m.String()); err != nil || got != m {
			t.Errorf("%v: %v %v", m, got, err)
		}
	}
	for _, a := range []Accounting{Basic, RDP} {
		if got, err := ParseAccounting(a.String()); err != nil || got != a {
			t.Errorf("%v: %v %v", a, got, err)
		}
	}
	if _, err := ParseMode("fast"); err == nil {
		t.Error("bad mode accepted")
	}
	if _, err := ParseAccounting("pld"); err == nil {
		t.Error("bad accounting accepted")
	}
}

// BenchmarkBuildCIFAR is the planner on the CIFAR-10 setting.
func BenchmarkBuildCIFAR(b *testing.B) {
	for _, a := range []Accounting{Basic, RDP} {
		b.Run(a.String(), func(b *testing.B) {
			for b.Loop() {
				if _, err := Build(cifar(StepAmplification, a)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// FuzzBuild plans arbitrary small settings: Build must never panic, and a
// plan it returns must keep every group within ε.
func FuzzBuild(f *testing.F) {
	f.Add(8.0, 2.0, 1e-5, 256, 3, 1000, 500, 100, uint8(1), false)
	f.Add(1.0, 0.1, 1e-6, 64, 1, 64, 10, 1000, uint8(2), true)
	f.Add(3.0, 0.0, 1e-3, 10, 30, 100, 1, 1, uint8(3), false)
	f.Add(0.5, 0.2, 0.5, 1, 1, 1, 1, 1, uint8(0), true)
	f.Fuzz(func(t *testing.T, eps, sel, delta float64, batch, epochs, initial, q1, q2 int, mode uint8, rdp bool) {
		if batch > 5000 || initial > 20000 || q1 > 20000 || q2 > 20000 || epochs > 50 {
			t.Skip("keeps each plan fast")
		}
		cfg := Config{Epsilon: eps, EpsilonSelect: sel, Delta: delta, Batch: batch, Epochs: epochs, Initial: initial,
			Queries: []int{q1, q2}, Mode: Mode(mode % 4)}
		if rdp {
			cfg.Accounting = RDP
		}
		p, err := Build(cfg)
		if err != nil {
			return
		}
		for _, g := range p.Groups {
			if !(g.EpsilonTotal <= eps*(1+1e-9)) {
				t.Errorf("%+v: group %s at ε = %v", cfg, g.Group, g.EpsilonTotal)
			}
		}
	})
}

// TestEpsilonUnder reads one plan both ways: a basic plan read jointly is
// below ε for every selected group, a joint plan read by basic composition
// is above it.
func TestEpsilonUnder(t *testing.T) {
	for _, acc := range []Accounting{Basic, RDP} {
		p := cifarPlan(t, StepAmplification, acc)
		for g := 1; g < len(p.Groups); g++ {
			other := RDP
			if acc == RDP {
				other = Basic
			}
			e, err := p.EpsilonUnder(other, g)
			if err != nil {
				t.Fatal(err)
			}
			if (acc == Basic) != (e < 8) {
				t.Errorf("%s plan, group %d read under %s: ε = %v", acc, g, other, e)
			}
		}
	}
}

// TestTopKReplaceOne checks the honest top-k plan (issue 30 §1): the plan
// the paper's own accounting makes for the setting (every group at
// ε = 8 under add/remove) really costs 17.33 for the initial group and
// 14.45 for query-4 under replace-one (training 12.45 + selection 2; an
// independent integration in the issue found "about 17" and "about 12.5"
// for the training), while dpal's plan charges replace-one and lands every
// group at 8, which the paper's reading would call 3.6–4.8.
func TestTopKReplaceOne(t *testing.T) {
	cfg := Config{Epsilon: 8, EpsilonSelect: 2, Delta: 0.000333333, Batch: 400, Epochs: 10, Initial: 1000,
		Queries: []int{500, 500, 500, 500}, Mode: StepAmplification}
	t.Run("paper's plan", func(t *testing.T) {
		c := cfg
		c.PaperTopK = true
		p, err := Build(c)
		if err != nil {
			t.Fatal(err)
		}
		for g, want := range map[int]float64{0: 17.3347, 4: 14.4510} {
			gr := p.Groups[g]
			if math.Abs(gr.EpsilonAddRemove-8) > 1e-8 || math.Abs(gr.EpsilonReplace-want) > 1e-3 {
				t.Errorf("%s: paper ε %v, true ε %v; want 8 and %v", gr.Group, gr.EpsilonAddRemove, gr.EpsilonReplace, want)
			}
		}
		led := newLedger(t, p)
		_, err = Run(led, nil, Input{Plan: p, Oracle: DatasetOracle{}, Learner: testLearner(Entropy, nn.Spec{Arch: nn.LogReg, Inputs: 6, Classes: 3})})
		if err == nil || !strings.Contains(err.Error(), "comparison only") {
			t.Errorf("Run on the paper's plan: %v", err)
		}
	})
	t.Run("dpal's plan", func(t *testing.T) {
		p, err := Build(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, gr := range p.Groups {
			if math.Abs(gr.EpsilonTotal-8) > 1e-8 || gr.EpsilonReplace != gr.EpsilonTotal || !(gr.EpsilonAddRemove < 5) {
				t.Errorf("%s: charged %v, replace-one %v, add/remove %v", gr.Group, gr.EpsilonTotal, gr.EpsilonReplace, gr.EpsilonAddRemove)
			}
		}
		loss, ok, err := p.PhaseLoss(0, 0)
		if err != nil || !ok || loss.Mechanism != "subsampled-gaussian-replace" {
			t.Errorf("phase loss %v %v %v: want the replace-one curve", loss.Mechanism, ok, err)
		}
	})
}
