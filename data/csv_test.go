package data

import (
	"strings"
	"testing"
)

func TestLoadCSV(t *testing.T) {
	tests := []struct {
		name, in string
		opt      CSVOptions
		wantErr  string
		wantX    [][]float64
		wantY    []float64
	}{
		{"last label", "1,2,1\n3,4,-1\n", CSVOptions{LabelColumn: -1}, "", [][]float64{{1, 2}, {3, 4}}, []float64{1, -1}},
		{"zero label", "0,5\n1,6\n", CSVOptions{LabelColumn: 1, ZeroIsNegative: true}, "", [][]float64{{5}, {6}}, []float64{-1, 1}},
		{"zero label rejected", "1,5\n0,6\n", CSVOptions{LabelColumn: 1}, "csv line 2 field 1 (label): label 0 is not −1 or +1", nil, nil},
		{"header", "a,b,y\n1,2,1\n", CSVOptions{Header: true, LabelColumn: 3}, "", [][]float64{{1, 2}}, []float64{1}},
		{"no label", "1,2\n", CSVOptions{}, "", [][]float64{{1, 2}}, nil},
		{"semicolon", "1;1\n", CSVOptions{Comma: ';', LabelColumn: -1}, "", [][]float64{{1}}, []float64{1}},
		{"bad number", "a,b,y\n1,x,1\n", CSVOptions{Header: true, LabelColumn: -1}, `csv line 2 field 2 (b): not a number: "x"`, nil, nil},
		{"bad label", "1,2,3\n", CSVOptions{LabelColumn: -1}, `line 1 field 3 (label): "3" is not −1 or +1`, nil, nil},
		{"bad label zero ok", "1,2,3\n", CSVOptions{LabelColumn: -1, ZeroIsNegative: true}, `"3" is not −1, 0 or +1`, nil, nil},
		{"nan", "NaN,1\n", CSVOptions{LabelColumn: -1}, `field 1 (x1): not a number`, nil, nil},
		{"ragged", "1,2\n1\n", CSVOptions{}, "wrong number of fields", nil, nil},
		{"label col too big", "1,2\n", CSVOptions{LabelColumn: 5}, "label column 5 but only 2 fields", nil, nil},
		{"bad label col", "1,2\n", CSVOptions{LabelColumn: -2}, "label column -2", nil, nil},
		{"empty", "", CSVOptions{}, "no data rows", nil, nil},
		{"header only", "a,b\n", CSVOptions{Header: true}, "no data rows", nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := LoadCSV(strings.NewReader(tc.in), tc.opt)
			if !checkLoaded(t, d, err, tc.wantErr, tc.wantX, tc.wantY) {
				return
			}
			if len(d.FeatureNames) != d.Dim() {
				t.Fatalf("names %v for dim %d", d.FeatureNames, d.Dim())
			}
			if err := d.Validate(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func FuzzCSV(f *testing.F) {
	f.Add("a,b,y\n1,2,1\n", true, -1, false)
	f.Add("1,2\n3,4\n", false, 0, false)
	f.Add("0,2\n1,4\n", false, 1, true)
	f.Fuzz(func(t *testing.T, in string, header bool, label int, zeroNeg bool) {
		d, err := LoadCSV(strings.NewReader(in), CSVOptions{Header: header, LabelColumn: label, ZeroIsNegative: zeroNeg})
		if err != nil {
			return
		}
		if err := d.Validate(); err != nil {
			t.Fatalf("accepted invalid data: %v", err)
		}
		if len(d.FeatureNames) != d.Dim() {
			t.Fatalf("names %d dim %d", len(d.FeatureNames), d.Dim())
		}
	})
}
