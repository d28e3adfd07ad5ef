package poolrepro

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpal-dev/dpal/data"
)

// blobs is a small 3-class problem with a rare class.
func blobs(n int, seed uint64) *data.Dataset {
	g := rand.New(rand.NewPCG(seed, 2))
	d := &data.Dataset{Name: "blobs", ClassNames: []string{"a", "b", "c"}}
	for range n {
		c := g.IntN(2)
		if g.Float64() < 0.1 {
			c = 2
		}
		x := []float64{0.1 * g.NormFloat64(), 0.1 * g.NormFloat64(), 0.1 * g.NormFloat64()}
		x[c] += 0.4
		d.X, d.Class = append(d.X, x), append(d.Class, c)
	}
	return d
}

func TestReproduceQuick(t *testing.T) {
	o := QuickOptions()
	o.Datasets = []string{"blobs"}
	s := o.Settings["mnist"]
	s.PoolSize, s.Initial, s.Queries, s.Batch, s.Epochs, s.RandomEpochs = 300, 60, []int{20, 20}, 30, 2, 4
	o.Settings = map[string]Setting{"blobs": s}
	o.Experiments = []string{Table1, Accounting}
	calls := 0
	sum, err := Reproduce(o, map[string]Data{"blobs": {Train: blobs(400, 1), Test: blobs(200, 2)}}, func() { calls++ })
	if err != nil {
		t.Fatal(err)
	}
	if calls != o.Total() {
		t.Errorf("%d runs, Total says %d", calls, o.Total())
	}
	if len(sum.Points) != len(Methods(Table1))+len(Methods(Accounting)) {
		t.Errorf("%d points", len(sum.Points))
	}
	for _, r := range sum.Rows {
		if r.MaxDeviation > 1e-9 || r.LedgerMax > r.Epsilon*(1+1e-9) {
			t.Errorf("%s %s: ledger deviates by %g, max ε %v", r.Experiment, r.Method, r.MaxDeviation, r.LedgerMax)
		}
		if r.DP == strings.Contains(r.Method, "not DP") {
			t.Errorf("%s: DP %v", r.Method, r.DP)
		}
		if r.Accuracy < sum.Trivial[0].Accuracy {
			t.Logf("%s: accuracy %.3f below the majority class %.3f", r.Method, r.Accuracy, sum.Trivial[0].Accuracy)
		}
	}
	dir := t.TempDir()
	if err := Write(dir, sum); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"rows.csv", "points.csv", "summary.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Options)
		want string
	}{
		{"unknown experiment", func(o *Options) { o.Experiments = []string{"table9"} }, "unknown experiment"},
		{"no runs", func(o *Options) { o.Runs[Table1] = 0 }, "at least one run"},
		{"no setting", func(o *Options) { o.Datasets = []string{"cifar"} }, "no setting"},
		{"pool below budget", func(o *Options) { s := o.Settings["mnist"]; s.PoolSize = 100; o.Settings["mnist"] = s }, "below the labelling budget"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := DefaultOptions()
			tc.edit(&o)
			if err := o.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestWithCNN checks that --cnn swaps the image sets' model and keeps
// logistic regression for the tabular set.
func TestWithCNN(t *testing.T) {
	o := DefaultOptions().WithCNN()
	for d, want := range map[string]string{"mnist": "cnn", "fashion-mnist": "cnn", "kdd99-5class": "logreg"} {
		if got := o.Settings[d].Model; got != want {
			t.Errorf("%s: model %q, want %q", d, got, want)
		}
	}
	if DefaultOptions().Settings["mnist"].Model != "logreg" {
		t.Error("WithCNN changed the defaults it was called on")
	}
}
