package kanonrepro

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/dpal-dev/dpal/kanon"
)

// TestGuaranteesOnPaperGrid pins which cells of the paper's β × k grid
// have any (ε, δ ≤ 1e-6) guarantee: none with k = 1 (δ ≥ β), and a cell
// only when β^k < 1e-6.
func TestGuaranteesOnPaperGrid(t *testing.T) {
	o := DefaultOptions()
	g, err := kanon.Guarantees(o.Betas, o.PaperKs, o.Delta)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range g {
		feasibleByFloor := r.K > 0 && pow(r.Beta, r.K) < o.Delta
		if r.Guaranteed != feasibleByFloor {
			t.Errorf("beta %v k %d: guaranteed %v, but beta^k < delta is %v", r.Beta, r.K, r.Guaranteed, feasibleByFloor)
		}
		if r.Guaranteed && (r.Delta > o.Delta || r.Epsilon <= 0) {
			t.Errorf("beta %v k %d: %+v", r.Beta, r.K, r)
		}
	}
}

func pow(b float64, k int) float64 {
	out := 1.0
	for range k {
		out *= b
	}
	return out
}

// TestReproduceSmall runs a tiny synthetic grid end to end and writes
// every output file.
func TestReproduceSmall(t *testing.T) {
	o := QuickOptions()
	o.Betas, o.SlurpKs = []float64{0.5}, []int{2, 30}
	o.Run.Hidden, o.Run.Passes = 8, 3 // a small MLP keeps the test fast
	o.Delta = 1e-3
	var log []kanon.Query
	for i := range 30 {
		label := []string{"play_music", "qa_fact", "iot_on"}[i%3]
		for range 100 / (i + 1) {
			log = append(log, kanon.Query{Text: "query " + string(rune('a'+i%26)) + string(rune('a'+i/26)), Label: label})
		}
	}
	s := Summary{Options: o}
	for _, b := range []bool{true, false} {
		for _, k := range o.SlurpKs {
			beta := 0.5
			if b {
				beta, k = 1, 1
			}
			row, err := Cell(o, SLURP, "binary", log, beta, k, b)
			if err != nil {
				t.Fatal(err)
			}
			s.Rows = append(s.Rows, row)
		}
	}
	// k = 2 at β = 0.5 has δ ≥ 0.25 > 1e-3: a what-if; k = 30 is private.
	if s.Rows[2].Guaranteed || !s.Rows[3].Guaranteed || s.Rows[3].Epsilon <= 0 {
		t.Fatalf("rows %+v", s.Rows)
	}
	v := o
	v.Run.Copies = 5
	row, err := Cell(v, SLURP, "binary", log, 0.5, 30, false)
	if err != nil {
		t.Fatal(err)
	}
	if row.Method != "lqs-vote" || row.Copies != 5 || row.LabelsUsed%5 != 0 || row.Epsilon != s.Rows[3].Epsilon {
		t.Fatalf("voted row %+v", row)
	}
	s.Rows = append(s.Rows, row)
	out := t.TempDir()
	if err := Write(out, s); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"fig2_slurp_binary.png", "fig3_slurp_binary.csv", "fig4_slurp_binary.png", "rows.csv", "appendix.csv", "summary.json"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
}
