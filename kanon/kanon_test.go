package kanon

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/audit"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/rng"
)

func TestReadLog(t *testing.T) {
	t.Run("lines-and-labels", func(t *testing.T) {
		q, err := ReadLog(strings.NewReader("what time is it\ttime_query\n\n  volume up  \n"))
		if err != nil {
			t.Fatal(err)
		}
		want := []Query{{"what time is it", "time_query"}, {"volume up", ""}}
		if fmt.Sprint(q) != fmt.Sprint(want) {
			t.Fatalf("got %v, want %v", q, want)
		}
	})
	for _, c := range []struct {
		name, in, want string
	}{
		{"empty", "", "log is empty"},
		{"blank-only", "\n \n\t\n", "log is empty"},
		{"non-utf8", "ok\n\xff\xfe bad\n", "line 2: not valid UTF-8"},
		{"too-long", strings.Repeat("a", maxLine+10), "too long"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadLog(strings.NewReader(c.in))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}

func FuzzReadLog(f *testing.F) {
	f.Add([]byte("what time is it\ttime\nvolume up\n"))
	f.Add([]byte("\xff\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		q, err := ReadLog(bytes.NewReader(b))
		if err != nil {
			return
		}
		for _, x := range q {
			if x.Text == "" || strings.ContainsAny(x.Text, "\n") {
				t.Fatalf("bad query %q", x.Text)
			}
		}
	})
}

// synthLog is a small labelled log: each (intent, variant) sentence is
// repeated by a Zipf-like count, so thresholds have something to cut.
func synthLog() []Query {
	intents := map[string][]string{
		"alarm":   {"set an alarm", "wake me up", "alarm for seven", "set alarm at six", "cancel my alarm"},
		"weather": {"will it rain", "weather today", "is it sunny", "forecast for tomorrow", "how hot is it"},
		"music":   {"play some jazz", "play music", "next song", "pause the music", "turn up the music"},
	}
	var out []Query
	for _, intent := range slices.Sorted(maps.Keys(intents)) {
		ss := intents[intent]
		for i, s := range ss {
			for v := range 6 {
				text := fmt.Sprintf("%s %d", s, v)
				for range 1 + 60/((i+1)*(v+1)) {
					out = append(out, Query{Text: text, Label: intent})
				}
			}
		}
	}
	return out
}

func smallConfig() Config {
	c := DefaultConfig()
	c.Golden, c.LabelsBudget, c.Rounds, c.Members, c.Epochs, c.Hidden, c.Passes = 6, 20, 2, 2, 3, 8, 3
	return c
}

func TestRunCharges(t *testing.T) {
	log := synthLog()
	cfg := smallConfig()
	cfg.Beta, cfg.K, cfg.Delta = 0.3, 8, 1e-3
	led, err := ledger.New(account.Budget{Epsilon: 10, Delta: 1e-2})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(cfg, log, rng.Seeded(1), led)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := Epsilon(0.3, 8, cfg.Delta)
	if !res.Private || res.Epsilon != want.Epsilon || res.Delta != want.Delta || led.Len() != 1 {
		t.Fatalf("result (%v, %v) private=%v, ledger entries %d; want (%v, %v) charged once", res.Epsilon, res.Delta, res.Private, led.Len(), want.Epsilon, want.Delta)
	}
	if eps, _ := led.Spent(Group); eps != want.Epsilon {
		t.Fatalf("ledger spent %v, want %v", eps, want.Epsilon)
	}
	if len(res.Curve) < 2 || res.LabelsUsed != min(cfg.LabelsBudget/cfg.Copies, res.Released)*cfg.Copies {
		t.Fatalf("curve %v, labels used %d of released %d", res.Curve, res.LabelsUsed, res.Released)
	}
	t.Run("budget-exceeded", func(t *testing.T) {
		small, _ := ledger.New(account.Budget{Epsilon: want.Epsilon / 2, Delta: 1e-2})
		_, err := Run(cfg, log, rng.Seeded(1), small)
		if !errors.Is(err, account.ErrBudgetExceeded) || small.Len() != 0 {
			t.Fatalf("err %v, entries %d", err, small.Len())
		}
	})
	t.Run("dp-threshold", func(t *testing.T) {
		c := cfg
		c.Threshold, c.NoiseEpsilon = ThresholdDP, 1
		led, _ := ledger.New(account.Budget{Epsilon: 10, Delta: 1e-2})
		res, err := Run(c, log, rng.Seeded(2), led)
		if err != nil {
			t.Fatal(err)
		}
		m, _ := NewNoisyThreshold(1, 8, 0.3)
		if res.Epsilon != m.Loss().Epsilon || res.Delta != m.Loss().Delta {
			t.Fatalf("charged (%v, %v), want %+v", res.Epsilon, res.Delta, m.Loss())
		}
	})
}

func TestRunRefusals(t *testing.T) {
	log := synthLog()
	led, _ := ledger.New(account.Budget{Epsilon: 100, Delta: 0.5})
	for _, c := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"beta1-private", func(c *Config) { c.Beta, c.K = 1, 1 }, "no (ε, δ) guarantee"},
		{"k0", func(c *Config) { c.K = 0 }, "k must be >= 1"},
		{"beta0", func(c *Config) { c.Beta = 0 }, "0 < beta <= 1"},
		{"unreachable-delta", func(c *Config) { c.Beta, c.K = 0.9, 5 }, "beta^k"},
		{"dp-k1", func(c *Config) { c.Threshold, c.K = ThresholdDP, 1 }, "k must be >= 2"},
		{"mode", func(c *Config) { c.Threshold = "fuzzy" }, "threshold must be"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := smallConfig()
			c.edit(&cfg)
			_, err := Run(cfg, log, rng.Seeded(1), led)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
	if _, err := Run(smallConfig(), nil, rng.Seeded(1), led); err == nil {
		t.Error("empty log accepted")
	}
	if _, err := Run(smallConfig(), []Query{{"a", ""}, {"b", ""}}, rng.Seeded(1), led); err == nil || !strings.Contains(err.Error(), "2 labels") {
		t.Errorf("unlabelled log: %v", err)
	}
}

func TestRunBaseline(t *testing.T) {
	cfg := smallConfig()
	cfg.Beta, cfg.K, cfg.Baseline = 1, 1, true
	res, err := Run(cfg, synthLog(), rng.Seeded(3), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Private || res.Epsilon != 0 || res.Released == 0 {
		t.Fatalf("baseline: %+v", res)
	}
}

// TestExactKeepIsExact checks the exact mode's pre-filter end to end:
// with a 2-counter-wide sketch, or one sized by HyperLogLog (width 0), the
// counted set is exactly {q : count ≥ k} with exact counts.
func TestExactKeepIsExact(t *testing.T) {
	var log []string
	counts := map[string]uint64{}
	for _, q := range synthLog() {
		log = append(log, q.Text)
		counts[q.Text]++
	}
	for _, c := range []struct{ k, width int }{{1, 2}, {3, 2}, {10, 2}, {40, 2}, {3, 0}, {10, 0}} {
		cfg := DefaultConfig()
		cfg.K, cfg.SketchWidth = c.k, c.width
		st, err := NewStage(cfg, SeededCoins(1))
		if err != nil {
			t.Fatal(err)
		}
		got, err := st.poolCounts(slices.Values(log))
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]uint64{}
		for q, n := range counts {
			if n >= uint64(c.k) {
				want[q] = n
			}
		}
		if !maps.Equal(got, want) {
			t.Fatalf("k=%d width=%d: counted %v, want %v", c.k, c.width, got, want)
		}
	}
}

func TestNoisyThresholdLoss(t *testing.T) {
	m, err := NewNoisyThreshold(0.5, 10, 0.2)
	if err != nil {
		t.Fatal(err)
	}
	p := math.Exp(-m.eps)
	inner := math.Pow(p, 9) / (1 + p)
	l := m.Loss()
	if math.Abs(l.Epsilon-math.Log1p(0.2*math.Expm1(m.eps))) > 1e-15 || math.Abs(l.Delta-0.2*inner) > 1e-18 || m.eps > 0.5 || m.eps < 0.5-1e-9 {
		t.Fatalf("loss %+v (inner delta %v)", l, inner)
	}
	for _, c := range []struct {
		eps, beta float64
		k         int
	}{{0, 0.5, 5}, {1, 0, 5}, {1, 1.5, 5}, {1, 0.5, 1}, {1e-12, 0.5, 5}} {
		if _, err := NewNoisyThreshold(c.eps, c.k, c.beta); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

// TestNoisyThresholdStatistics checks the release probability of a key
// seen k − 1 times, P(Z ≥ 1) = p/(1 + p), against 40,000 draws.
func TestNoisyThresholdStatistics(t *testing.T) {
	m, _ := NewNoisyThreshold(1, 5, 1)
	r := rng.Seeded(4)
	const n = 40_000
	hits := 0
	for range n {
		if ok, _ := m.keep(r, 4); ok {
			hits++
		}
	}
	p := math.Exp(-m.eps)
	want := p / (1 + p)
	if got := float64(hits) / n; math.Abs(got-want) > 4*math.Sqrt(want*(1-want)/n) {
		t.Fatalf("release rate %v, want %v", got, want)
	}
}

// TestAuditNoisyThreshold audits neighbouring counts k − 1 and k (the ε
// part of the claim): the true mechanism stays within ε = 1, a mutant with
// the noise scale halved is caught.
func TestAuditNoisyThreshold(t *testing.T) {
	run := func(eps float64) audit.Result {
		m, _ := NewNoisyThreshold(eps, 5, 1)
		rel := func(c uint64) func(*rng.Rand) bool {
			return func(r *rng.Rand) bool { ok, _ := m.keep(r, c); return ok }
		}
		res, err := audit.Bool(rng.Seeded(5), rel(4), rel(5), audit.Config{Trials: 40_000})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if r := run(1); r.Epsilon > 1 {
		t.Errorf("true mechanism: lower bound %v above its claimed epsilon 1", r.Epsilon)
	}
	if r := run(2); r.Epsilon <= 1 {
		t.Errorf("halved noise not caught: lower bound %v", r.Epsilon)
	}
}

// TestLoaders reads the shared SLURP and CLINC150 files ($DPAL_DATA_DIR,
// else ../../shared/data; skipped when absent, as package data's tests do)
// and checks the counts their PROVENANCE notes give.
func TestLoaders(t *testing.T) {
	dir := os.Getenv("DPAL_DATA_DIR")
	if dir == "" {
		dir = filepath.Join("..", "..", "shared", "data")
	}
	s, err := LoadSLURP(dir)
	if err != nil {
		t.Skipf("shared data not available: %v", err)
	}
	if len(s) != 12538 {
		t.Errorf("SLURP: %d spoken events, want 12538", len(s))
	}
	c, err := LoadCLINC(dir, ZipfCLINC{C: 10, S: 1}, 1)
	if err != nil {
		t.Fatal(err)
	}
	labels := Labels(c)
	if len(labels) != 150 || !strings.Contains(labels[0], ":") {
		t.Errorf("CLINC: %d labels (first %q), want 150 domain:intent labels", len(labels), labels[0])
	}
	if c[0].Text != c[9].Text || c[0].Text == c[10].Text {
		t.Errorf("CLINC: the top utterance should occur exactly 10 times")
	}
}

func TestRelabel(t *testing.T) {
	got := relabel([]Query{{"a", "iot_on"}, {"b", "qa_fact"}, {"c", "alarm_set"}}, "iot_,alarm_")
	if got[0].Label != "positive" || got[1].Label != "negative" || got[2].Label != "positive" {
		t.Fatalf("got %v", got)
	}
}

// TestStage checks Release against its definition (held-out test and
// golden sets, then Sampled(q, n, β) ≥ k on the rest), its independence
// of the log's order, and the sampling rate.
func TestStage(t *testing.T) {
	var log []string
	counts := map[string]uint64{}
	for _, q := range synthLog() {
		log = append(log, q.Text)
		counts[q.Text]++
	}
	cfg := DefaultConfig()
	cfg.Beta, cfg.K, cfg.Golden, cfg.SketchWidth = 0.5, 6, 10, 64
	coins := SeededCoins(9)
	st, err := NewStage(cfg, coins)
	if err != nil {
		t.Fatal(err)
	}
	got, err := st.Release(log)
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]bool{}
	for _, q := range slices.Concat(got.Test, got.Golden) {
		if held[q] {
			t.Fatalf("%q held out twice", q)
		}
		held[q] = true
	}
	if len(got.Golden) != 10 || len(got.Test) == 0 {
		t.Fatalf("golden %d, test %d", len(got.Golden), len(got.Test))
	}
	var want []string
	for q, n := range counts {
		if !held[q] && coins.Sampled(q, n, 0.5) >= 6 {
			want = append(want, q)
		}
	}
	slices.Sort(want)
	if !slices.Equal(got.Released, want) || len(want) == 0 {
		t.Fatalf("stage kept %v, want %v", got.Released, want)
	}
	shuffled := slices.Clone(log)
	rng.Seeded(3).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	again, err := st.Release(shuffled)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(again) != fmt.Sprint(got) {
		t.Fatal("the stage depends on the log's order")
	}
	kept := coins.Sampled("q", 20_000, 0.3)
	if math.Abs(float64(kept)/20_000-0.3) > 4*math.Sqrt(0.3*0.7/20_000) {
		t.Fatalf("Sampled kept %d of 20000 at rate 0.3", kept)
	}
	if SeededCoins(1) == SeededCoins(2) || coins.Sampled("q", 100, 0.5) == coins.Sampled("r", 100, 0.5) && coins.Sampled("s", 100, 0.5) == coins.Sampled("t", 100, 0.5) {
		t.Fatal("coins do not depend on the seed or the query")
	}
}

// TestSmallestMerges checks that per-shard golden accumulators, merged,
// hold what one pass over all queries holds.
func TestSmallestMerges(t *testing.T) {
	st, _ := NewStage(smallConfig(), SeededCoins(4))
	one, shards := st.NewGolden(), []*Smallest{st.NewGolden(), st.NewGolden(), st.NewGolden()}
	for i, q := range synthLog() {
		one.Add(st.Key(q.Text))
		shards[i%3].Add(st.Key(q.Text))
	}
	shards[0].Merge(shards[2])
	shards[1].Merge(shards[0])
	if !slices.Equal(one.Texts(), shards[1].Texts()) || len(one.Items) != one.N {
		t.Fatalf("merged %v, one pass %v", shards[1].Texts(), one.Texts())
	}
}

func TestNoisyThresholdFor(t *testing.T) {
	for _, c := range []struct{ eps, delta, beta float64 }{{1.11, 1e-6, 1}, {0.105, 1e-6, 1}, {1.11, 4e-7, 0.3}, {2.3, 1e-10, 0.9}} {
		m, err := NoisyThresholdFor(c.eps, c.delta, c.beta)
		if err != nil {
			t.Fatal(err)
		}
		l := m.Loss()
		if l.Epsilon > c.eps || l.Delta > c.delta {
			t.Errorf("%+v: loss (%v, %v) above target", c, l.Epsilon, l.Delta)
		}
		if m.K() > 2 {
			smaller, _ := NewNoisyThreshold(m.eps, m.K()-1, c.beta)
			if smaller.Loss().Delta <= c.delta {
				t.Errorf("%+v: k = %d also meets delta", c, m.K()-1)
			}
		}
	}
	if _, err := NoisyThresholdFor(1, 0, 1); err == nil {
		t.Error("delta 0 accepted")
	}
}

// TestRunReleased checks that continuing from Run's own released set with
// the same seed learns exactly what Run learned, charging nothing, and
// that Config.Loss is what Run charged.
func TestRunReleased(t *testing.T) {
	cfg := smallConfig()
	cfg.Beta, cfg.K, cfg.Delta = 0.3, 8, 1e-3
	led, _ := ledger.New(account.Budget{Epsilon: 10, Delta: 1e-2})
	want, err := Run(cfg, synthLog(), rng.Seeded(5), led)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteReleased(&buf, want.Queries); err != nil {
		t.Fatal(err)
	}
	back, err := ReadReleased(&buf)
	if err != nil || !slices.Equal(back, want.Queries) {
		t.Fatalf("read back %v (%v), want %v", back, err, want.Queries)
	}
	got, err := RunReleased(cfg, synthLog(), back, rng.Seeded(5))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("continued run %+v, want %+v", got, want)
	}
	if l, err := cfg.Loss(); err != nil || l.Epsilon != want.Epsilon || l.Delta != want.Delta {
		t.Fatalf("Config.Loss %+v (%v), Run charged (%v, %v)", l, err, want.Epsilon, want.Delta)
	}
	if _, err := RunReleased(cfg, synthLog(), []string{"never asked"}, rng.Seeded(5)); err == nil || !strings.Contains(err.Error(), "not in the log") {
		t.Fatalf("unknown released query: %v", err)
	}
	if _, err := ReadReleased(strings.NewReader("b\na\n")); err == nil {
		t.Fatal("unsorted released file accepted")
	}
}
