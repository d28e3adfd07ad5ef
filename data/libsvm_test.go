package data

import (
	"strings"
	"testing"
)

func TestLoadLibSVM(t *testing.T) {
	tests := []struct {
		name, in string
		dim      int
		wantErr  string
		wantX    [][]float64
		wantY    []float64
	}{
		{"ok", "+1 1:0.5 3:2\n-1 2:1\n", 0, "", [][]float64{{0.5, 0, 2}, {0, 1, 0}}, []float64{1, -1}},
		{"fixed dim", "1 2:1\n", 4, "", [][]float64{{0, 1, 0, 0}}, []float64{1}},
		{"comments", "# head\n0 1:1 # tail\n\n", 0, "", [][]float64{{1}}, []float64{-1}},
		{"index beyond dim", "1 5:1\n", 4, "line 1 field 2 (index): \"5\"", nil, nil},
		{"decreasing", "1 2:1 1:1\n", 0, "line 1 field 3 (index)", nil, nil},
		{"zero index", "1 0:1\n", 0, "field 2 (index)", nil, nil},
		{"bad value", "1 1:x\n", 0, `line 1 field 2 (value of 1): not a number: "x"`, nil, nil},
		{"no colon", "1 3\n", 0, "want index:value", nil, nil},
		{"bad label", "2 1:1\n", 0, `line 1 field 1 (label): "2" is not`, nil, nil},
		{"no rows", "\n", 0, "no data rows", nil, nil},
		{"no features", "1\n", 0, "no features", nil, nil},
		{"bad dim", "1 1:1\n", -1, "dimension -1", nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := LoadLibSVM(strings.NewReader(tc.in), tc.dim)
			if !checkLoaded(t, d, err, tc.wantErr, tc.wantX, tc.wantY) {
				return
			}
		})
	}
}

func FuzzLibSVM(f *testing.F) {
	f.Add("+1 1:0.5 3:2\n-1 2:1\n", 0)
	f.Add("0 1:1\n", 3)
	f.Fuzz(func(t *testing.T, in string, dim int) {
		if dim > 1000 {
			dim %= 1000
		}
		d, err := LoadLibSVM(strings.NewReader(in), dim)
		if err != nil {
			return
		}
		if err := d.Validate(); err != nil {
			t.Fatalf("accepted invalid data: %v", err)
		}
	})
}
