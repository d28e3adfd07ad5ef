package f32

// AddColSums adds the column sums of the rows×cols row-major matrix m to
// acc[:cols]: acc[j] += m[0·cols+j] + … in row order, float32 additions,
// as the plain loop does (which it is under purego and without AVX2);
// the AVX2 loop adds eight columns per instruction in the same order, so
// the same bits.
func AddColSums(acc, m []float32, rows, cols int) {
	acc, m = acc[:cols], m[:rows*cols]
	j := 0
	if poolSIMD && rows > 0 {
		if n := cols &^ 7; n > 0 {
			addColSumsAVX2(&acc[0], &m[0], rows, cols, n)
			j = n
		}
	}
	for i := range rows {
		row := m[i*cols : (i+1)*cols]
		for c := j; c < cols; c++ {
			acc[c] += row[c]
		}
	}
}
