package online

import (
	"math"
	"runtime"
	"testing"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dp/rng"
)

// TestMemoryBytes: the estimate bounds what a private FTL run and its
// synthetic data hold live at the end of the run, and not loosely (the
// estimate adds the eigendecompositions a floored solve would make).
func TestMemoryBytes(t *testing.T) {
	const d, n = 200, 400
	spec := Spec{Algorithm: "ftl", Cost: Cost{Loss: Squared, Alpha: 1, Radius: math.Inf(1)}, Batch: 1,
		Calibration: Calibration{Exact: true, Epsilon: 1, Delta: 1e-5}}
	live := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := live()
	data, err := LoadData("synthetic", "", Squared, n, d, 1)
	if err != nil {
		t.Fatal(err)
	}
	spec.Cost.Dim, spec.Cost.FeatureBound, spec.Cost.LabelBound, spec.Steps = data.Dim, 1, 1, len(data.Train)
	led, err := ledger.New(account.Budget{Epsilon: math.MaxFloat64, Delta: 1e-5})
	if err != nil {
		t.Fatal(err)
	}
	learner, _, err := NewLearner(spec, led, []string{"g"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(rng.Seeded(1), learner, spec.Cost, data.Train, []int{n}, nil); err != nil {
		t.Fatal(err)
	}
	held := float64(live() - before)
	est := MemoryBytes(spec) + SyntheticBytes(n, d)
	runtime.KeepAlive(learner)
	runtime.KeepAlive(data)
	t.Logf("held %.3g B live, estimated %.3g B", held, est)
	if held > est || held < est/3 {
		t.Errorf("held %.3g B live, estimated %.3g B", held, est)
	}
}
