package mech

import "sync"

// tableMemo shares built tables by σ² = num/den. A tableGauss is
// immutable once built (dirTable already shares one), and building one
// costs 0.1–0.4 ms, which every GaussianVector pays: the pool loop
// (active/pool) makes one per DP-SGD phase, at the same σ phase after
// phase and run after run, and a short phase of a small model is cheaper
// than its table. The tableMemoSize most recently used tables are kept.
type tableMemo struct {
	mu      sync.Mutex
	entries []tableMemoEntry // least recently used first
}

type tableMemoEntry struct {
	num, den uint64
	tab      *tableGauss
}

// tableMemoSize bounds the tables kept (~90 KB each).
const tableMemoSize = 8

var theTableMemo tableMemo

// get returns the table for σ² = num/den, building it (outside the lock)
// if it is not kept.
func (m *tableMemo) get(num, den uint64) (*tableGauss, error) {
	if tab := m.lookup(num, den); tab != nil {
		return tab, nil
	}
	tab, err := newTableGauss(num, den)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range m.entries { // built meanwhile by another caller
		if e.num == num && e.den == den {
			return e.tab, nil
		}
	}
	if len(m.entries) >= tableMemoSize {
		m.entries = append(m.entries[:0], m.entries[1:]...)
	}
	m.entries = append(m.entries, tableMemoEntry{num, den, tab})
	return tab, nil
}

// lookup returns the kept table for num/den (nil if none), marking it
// most recently used.
func (m *tableMemo) lookup(num, den uint64) *tableGauss {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, e := range m.entries {
		if e.num == num && e.den == den {
			m.entries = append(append(m.entries[:i:i], m.entries[i+1:]...), e)
			return e.tab
		}
	}
	return nil
}
