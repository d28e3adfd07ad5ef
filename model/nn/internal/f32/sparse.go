package f32

// CSR is a sparse m×k matrix in compressed rows: row i's nonzero entries
// are at columns Idx[Ptr[i]:Ptr[i+1]], in ascending order, with values
// Val[Ptr[i]:Ptr[i+1]]; len(Ptr) = m+1.
type CSR struct {
	Ptr []int
	Idx []int32
	Val []float32
}

// Reset empties a, keeping its storage.
func (a *CSR) Reset() {
	a.Ptr = append(a.Ptr[:0], 0)
	a.Idx, a.Val = a.Idx[:0], a.Val[:0]
}

// Rows is the number of rows appended since Reset.
func (a *CSR) Rows() int { return len(a.Ptr) - 1 }

// AppendRow appends row's nonzero entries as a's next row and reports
// whether a then holds at most limit entries (if not, the caller falls
// back to the dense product). Zeros
// of either sign are left out: SparseGemm's sums are exact without them
// (see there).
func (a *CSR) AppendRow(row []float32, limit int) bool {
	appendNonzeros(a, row)
	a.Ptr = append(a.Ptr, len(a.Idx))
	return len(a.Idx) <= limit
}

// appendNonzerosGo appends row's nonzero entries from column lo on.
func appendNonzerosGo(a *CSR, row []float32, lo int) {
	i := lo
	for ; i+8 <= len(row); i += 8 {
		v := row[i : i+8 : i+8]
		if v[0] == 0 && v[1] == 0 && v[2] == 0 && v[3] == 0 && v[4] == 0 && v[5] == 0 && v[6] == 0 && v[7] == 0 {
			continue // the common case in images' backgrounds
		}
		for j, x := range v {
			if x != 0 {
				a.Idx, a.Val = append(a.Idx, int32(i+j)), append(a.Val, x)
			}
		}
	}
	for ; i < len(row); i++ {
		if x := row[i]; x != 0 {
			a.Idx, a.Val = append(a.Idx, int32(i)), append(a.Val, x)
		}
	}
}

// Transpose sets t to the k×m transpose of a (which is m×k), each of its
// rows in ascending order of a's rows, reusing t's storage: a counting
// sort of a's entries by column.
func (a *CSR) Transpose(k int, t *CSR) {
	nnz := len(a.Idx)
	t.Ptr = growInts(t.Ptr, k+1)
	ptr := t.Ptr[:k+1]
	clear(ptr)
	cols := a.Idx[:nnz]
	for _, j := range cols {
		ptr[j+1]++
	}
	for j := range k {
		ptr[j+1] += ptr[j]
	}
	t.Idx, t.Val = growInt32s(t.Idx, nnz), grow(t.Val, nnz)
	idx, val, vals := t.Idx[:nnz], t.Val[:nnz], a.Val[:nnz]
	// ptr[j] is the next free slot of row j while a's rows are dealt out
	// in order, which leaves it at row j's end, the start of row j+1.
	for i := range a.Rows() {
		lo, hi := a.Ptr[i], a.Ptr[i+1]
		for p, j := range cols[lo:hi] {
			q := ptr[j]
			ptr[j] = q + 1
			idx[q], val[q] = int32(i), vals[lo+p]
		}
	}
	copy(ptr[1:], ptr[:k])
	ptr[0] = 0
}

// grow returns s resized to n, reallocated if it is too short (contents
// unspecified).
func grow(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

// growInt32s is grow for int32s.
func growInt32s(s []int32, n int) []int32 {
	if cap(s) < n {
		return make([]int32, n)
	}
	return s[:n]
}

// growInts is grow for ints.
func growInts(s []int, n int) []int {
	if cap(s) < n {
		return make([]int, n)
	}
	return s[:n]
}
