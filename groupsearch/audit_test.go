package groupsearch

import (
	"testing"

	"github.com/dpal-dev/dpal/dp/audit"
	"github.com/dpal-dev/dpal/dp/rng"
)

// neighbours are anomaly-restricted neighbours (Definition 1): the anomaly
// (index 0, score t_h = 2) is shared, and index 1 — outside the query —
// moves across the whole non-anomalous range [0, t_ℓ = 1].
var neighbours = [2][]float64{{2, 1, 0.5, 0}, {2, 0, 0.5, 0}}

// auditQuery holds the anomaly, so the changing point is in Q̄.
var auditQuery = []int32{0, 2}

// maxOracles builds the max oracle on both neighbours; noiseFactor 2 is the
// halved-noise mutant.
func maxOracles(t *testing.T, noiseFactor float64, seed uint64) [2]*maxOracle {
	t.Helper()
	p := Params{TLow: 1, THigh: 2, Epsilon: 1}
	var out [2]*maxOracle
	for k, xs := range neighbours {
		b := oracleBase{scores: xs, p: p, ledger: newLedger(t, 1e9), group: "audit", r: rng.Seeded(seed + uint64(k))}
		o, err := newMaxOracleScaled(b, false, noiseFactor)
		if err != nil {
			t.Fatal(err)
		}
		out[k] = o
	}
	return out
}

func answer(t *testing.T, o Oracle) Response {
	resp, err := o.Ask(auditQuery)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestAuditNoisyMaxAnswer audits one noisy-max answer (its Ȳ, the half a
// neighbour can move) at ε = 1: the lower bound must stay below the claim,
// and the halved-noise mutant (true ε = 2) must be caught above it.
func TestAuditNoisyMaxAnswer(t *testing.T) {
	cfg := audit.Config{Trials: 50000, Confidence: 0.95}
	for _, c := range []struct {
		name   string
		factor float64
		caught bool
	}{{"claimed noise", 1, false}, {"halved noise", 2, true}} {
		os := maxOracles(t, c.factor, 10)
		res, err := audit.Continuous(rng.Seeded(11),
			func(*rng.Rand) float64 { return answer(t, os[0]).YBar },
			func(*rng.Rand) float64 { return answer(t, os[1]).YBar }, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: ε lower bound %.3f (%s, p0=%.4f p1=%.4f)", c.name, res.Epsilon, res.Event, res.P0, res.P1)
		if caught := res.Epsilon > 1; caught != c.caught {
			t.Errorf("%s: audit lower bound %.3f vs claimed ε = 1", c.name, res.Epsilon)
		}
	}
}

// TestAuditBitOracles audits one binarised answer (ε = 1 claimed) and one
// randomized-response answer. The RR bit depends on the data only through
// i*, which anomaly-restricted neighbours share, so its audit finds nothing.
func TestAuditBitOracles(t *testing.T) {
	p := Params{TLow: 1, THigh: 2, Epsilon: 1}
	cfg := audit.Config{Trials: 40000, Confidence: 0.95}
	for _, kind := range []Kind{Binarized, RR} {
		var os [2]Oracle
		for k, xs := range neighbours {
			o, err := NewOracle(kind, xs, p, newLedger(t, 1e9), "audit", rng.Seeded(20+uint64(k)))
			if err != nil {
				t.Fatal(err)
			}
			os[k] = o
		}
		res, err := audit.Bool(rng.Seeded(21),
			func(*rng.Rand) bool { return answer(t, os[0]).Bit },
			func(*rng.Rand) bool { return answer(t, os[1]).Bit }, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: ε lower bound %.3f (p0=%.4f p1=%.4f)", kind, res.Epsilon, res.P0, res.P1)
		if res.Epsilon > 1 || (kind == RR && res.Epsilon > 0.1) {
			t.Errorf("%s: audit lower bound %.3f exceeds what the answer can leak", kind, res.Epsilon)
		}
	}
}
