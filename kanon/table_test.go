package kanon

import "testing"

// TestAppendixClaims checks the appendix's reading of its table
// (Feyisetan et al. 2019, Appendix): stronger privacy (smaller ε or δ)
// needs a larger k at a fixed β, and a larger β needs a larger k; the top
// right corner (ε = 1, δ = 1e-6) is where the smallest k suffices.
func TestAppendixClaims(t *testing.T) {
	g := AppendixGrid()
	cells, err := Table(g)
	if err != nil {
		t.Fatal(err)
	}
	nE, nB := len(g.Epsilons), len(g.Betas)
	at := func(di, ei, bi int) Cell { return cells[(di*nE+ei)*nB+bi] }
	minK := at(0, nE-1, 0).K
	for di := range g.Deltas {
		for ei := range g.Epsilons {
			for bi := range g.Betas {
				c := at(di, ei, bi)
				if !c.Feasible {
					continue
				}
				if c.DeltaAtK > c.Delta || c.K < minK {
					t.Errorf("cell %+v: delta above target or k below the corner's %d", c, minK)
				}
				if ei+1 < nE && at(di, ei+1, bi).K > c.K {
					t.Errorf("k grows with epsilon at %+v", c)
				}
				if di+1 < len(g.Deltas) && at(di+1, ei, bi).K < c.K {
					t.Errorf("k shrinks as delta falls at %+v", c)
				}
				if bi+1 < nB && at(di, ei, bi+1).Feasible && at(di, ei, bi+1).K < c.K {
					t.Errorf("k shrinks as beta grows at %+v", c)
				}
			}
		}
	}
}
