package mech

import (
	"reflect"
	"testing"
)

// TestTableMemo: two vector mechanisms at one σ share one table, which is
// the table newTableGauss builds; another σ gets its own; the memo keeps
// at most tableMemoSize tables, the most recently used.
func TestTableMemo(t *testing.T) {
	a, err := NewGaussianVector(1.3, 1, 10)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewGaussianVector(1.3, 1, 10)
	if err != nil {
		t.Fatal(err)
	}
	if a.dg.tab == nil || a.dg.tab != b.dg.tab {
		t.Fatalf("tables %p and %p: not shared", a.dg.tab, b.dg.tab)
	}
	fresh, err := newTableGauss(a.dg.num, a.dg.den)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fresh, a.dg.tab) {
		t.Error("the shared table differs from a freshly built one")
	}
	c, err := NewGaussianVector(1.4, 1, 10)
	if err != nil {
		t.Fatal(err)
	}
	if c.dg.tab == a.dg.tab {
		t.Error("σ 1.3 and 1.4 share a table")
	}
	for i := range tableMemoSize + 3 {
		if _, err := theTableMemo.get(uint64(1000+i), 3); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(theTableMemo.entries); n != tableMemoSize {
		t.Errorf("memo holds %d tables, want %d", n, tableMemoSize)
	}
	if last := theTableMemo.entries[tableMemoSize-1]; last.num != uint64(1000+tableMemoSize+2) || last.den != 3 {
		t.Errorf("most recent entry %d/%d", last.num, last.den)
	}
}
