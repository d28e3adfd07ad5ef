package data

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// CSVOptions controls LoadCSV.
type CSVOptions struct {
	// Name names the dataset (and its errors); "csv" if empty.
	Name string
	// Header says the first line names the columns.
	Header bool
	// LabelColumn is the 1-based column holding the label; 0 means no label
	// column (Y is nil) and −1 means the last column.
	LabelColumn int
	// Comma is the field separator; ',' if zero.
	Comma rune
	// ZeroIsNegative reads label 0 as −1, for 0/1-labelled files. When
	// false (the default) a label 0 is an error naming its line and field.
	ZeroIsNegative bool
}

// LoadCSV reads a numeric CSV: every field except the label is a finite
// number, and every line has the same number of fields. The label must be
// −1 or +1 (or 0, read as −1, when opt.ZeroIsNegative is set). Class is 0
// for −1 and 1 for +1. Rows are not scaled or projected.
func LoadCSV(r io.Reader, opt CSVOptions) (*Dataset, error) {
	name := opt.Name
	if name == "" {
		name = "csv"
	}
	if opt.LabelColumn < -1 {
		return nil, fmt.Errorf("%s: label column %d: want ≥ 1, 0 (none) or −1 (last)", name, opt.LabelColumn)
	}
	cr := csv.NewReader(r)
	if opt.Comma != 0 {
		cr.Comma = opt.Comma
	}
	cr.ReuseRecord = true
	d := &Dataset{Name: name}
	label := -1 // 0-based label column, −1 = none
	for rec := 0; ; rec++ {
		fields, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if rec == 0 {
			if label, err = labelIndex(opt.LabelColumn, len(fields)); err != nil {
				return nil, fmt.Errorf("%s line 1: %w", name, err)
			}
			if label >= 0 {
				d.ClassNames = []string{"-1", "+1"}
			}
			for i, f := range fields {
				if i == label {
					continue
				}
				if opt.Header {
					d.FeatureNames = append(d.FeatureNames, strings.TrimSpace(f))
				} else {
					d.FeatureNames = append(d.FeatureNames, fmt.Sprintf("x%d", len(d.FeatureNames)+1))
				}
			}
			if opt.Header {
				continue
			}
		}
		if err := d.addCSVRecord(fields, label, opt.ZeroIsNegative, cr); err != nil {
			return nil, fmt.Errorf("%s %w", name, err)
		}
	}
	if d.Len() == 0 {
		return nil, fmt.Errorf("%s: no data rows", name)
	}
	return d, nil
}

func labelIndex(col, n int) (int, error) {
	switch {
	case col == 0:
		return -1, nil
	case col == -1:
		return n - 1, nil
	case col > n:
		return 0, fmt.Errorf("label column %d but only %d fields", col, n)
	}
	return col - 1, nil
}

func (d *Dataset) addCSVRecord(fields []string, label int, zeroNeg bool, cr *csv.Reader) error {
	x := make([]float64, 0, len(fields))
	for i, f := range fields {
		line, _ := cr.FieldPos(i)
		if i == label {
			y, err := parseLabel(strings.TrimSpace(f), zeroNeg)
			if err != nil {
				return fmt.Errorf("line %d field %d (label): %w", line, i+1, err)
			}
			d.Y = append(d.Y, y)
			d.Class = append(d.Class, int(y+1)/2)
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("line %d field %d (%s): not a number: %s", line, i+1, d.FeatureNames[len(x)], Quote(f))
		}
		x = append(x, v)
	}
	if err := checkNorm(x); err != nil {
		line, _ := cr.FieldPos(0)
		return fmt.Errorf("line %d: %w", line, err)
	}
	d.X = append(d.X, x)
	return nil
}

// parseLabel reads a binary label: −1 or +1, and 0 for −1 when zeroNeg.
func parseLabel(s string, zeroNeg bool) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	switch {
	case err != nil:
		return 0, fmt.Errorf("not a number: %s", Quote(s))
	case v == 1:
		return 1, nil
	case v == -1 || (v == 0 && zeroNeg):
		return -1, nil
	case v == 0:
		return 0, fmt.Errorf("label 0 is not −1 or +1 (set ZeroIsNegative, or --zero-is-negative, to read 0 as −1)")
	}
	if zeroNeg {
		return 0, fmt.Errorf("%s is not −1, 0 or +1", Quote(s))
	}
	return 0, fmt.Errorf("%s is not −1 or +1", Quote(s))
}
