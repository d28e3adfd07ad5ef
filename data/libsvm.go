package data

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"strconv"
)

// maxLibSVMDim bounds the dimension LoadLibSVM accepts, so that a stray huge
// index cannot make it allocate without limit.
const maxLibSVMDim = 1 << 20

// LoadLibSVM reads the LibSVM sparse format, "label index:value ...", with
// 1-based, strictly increasing indices, into dense rows of length dim; dim 0
// means the largest index seen. Labels are −1/+1, and 0 is read as −1 (as
// LoadCSV does with ZeroIsNegative) because 0/1 labels are common in LibSVM
// files.
// Blank lines and lines starting with '#' are skipped. Rows are not scaled
// or projected.
func LoadLibSVM(r io.Reader, dim int) (*Dataset, error) {
	if dim < 0 || dim > maxLibSVMDim {
		return nil, fmt.Errorf("libsvm: dimension %d: want 0..%d", dim, maxLibSVMDim)
	}
	type entry struct {
		i int
		v float64
	}
	var rows [][]entry
	var lines []int // the line of each row, for errors
	d := &Dataset{Name: "libsvm", ClassNames: []string{"-1", "+1"}}
	maxIdx := 0
	limit := dim
	if dim == 0 {
		limit = maxLibSVMDim
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<26)
	for ln := 1; sc.Scan(); ln++ {
		f := bytes.Fields(sc.Bytes())
		if len(f) == 0 || f[0][0] == '#' {
			continue
		}
		y, err := parseLabel(string(f[0]), true)
		if err != nil {
			return nil, fmt.Errorf("libsvm line %d field 1 (label): %w", ln, err)
		}
		var row []entry
		prev := 0
		for k, tok := range f[1:] {
			if tok[0] == '#' {
				break
			}
			is, vs, ok := bytes.Cut(tok, []byte{':'})
			if !ok {
				return nil, fmt.Errorf("libsvm line %d field %d: want index:value, got %s", ln, k+2, Quote(tok))
			}
			i, err := strconv.Atoi(string(is))
			if err != nil || i <= prev || i > limit {
				return nil, fmt.Errorf("libsvm line %d field %d (index): %s is not an integer in %d..%d (indices are 1-based and increasing)", ln, k+2, Quote(is), prev+1, limit)
			}
			v, err := strconv.ParseFloat(string(vs), 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("libsvm line %d field %d (value of %d): not a number: %s", ln, k+2, i, Quote(vs))
			}
			row = append(row, entry{i, v})
			prev = i
		}
		maxIdx = max(maxIdx, prev)
		rows = append(rows, row)
		lines = append(lines, ln)
		d.Y = append(d.Y, y)
		d.Class = append(d.Class, int(y+1)/2)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("libsvm: %w", err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("libsvm: no data rows")
	}
	if dim == 0 {
		dim = maxIdx
	}
	if dim == 0 {
		return nil, fmt.Errorf("libsvm: no features in any row; give the dimension")
	}
	back := make([]float64, len(rows)*dim)
	for r, row := range rows {
		x := back[r*dim : (r+1)*dim : (r+1)*dim]
		for _, e := range row {
			x[e.i-1] = e.v
		}
		if err := checkNorm(x); err != nil {
			return nil, fmt.Errorf("libsvm line %d: %w", lines[r], err)
		}
		d.X = append(d.X, x)
	}
	for j := range dim {
		d.FeatureNames = append(d.FeatureNames, fmt.Sprintf("x%d", j+1))
	}
	return d, nil
}
