package stream

import (
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestParseEvent(t *testing.T) {
	for _, tc := range []struct {
		line string
		want []float64
		err  string
	}{
		{"1,2.5,-3", []float64{1, 2.5, -3}, ""},
		{" 0.5 , 1e-3 ", []float64{0.5, 0.001}, ""},
		{`{"x": [0.1, -0.2]}`, []float64{0.1, -0.2}, ""},
		{"7", []float64{7}, ""},
		{"", nil, "empty"},
		{"1,,2", nil, "field 2"},
		{"1,2,", nil, "trailing comma"},
		{"1,abc", nil, "field 2"},
		{"NaN,1", nil, "not finite"},
		{"1,-Inf", nil, "not finite"},
		{`{"y": 1}`, nil, `no "x"`},
		{`{"x": [1, "a"]}`, nil, "JSON event"},
		{`{"x": [1e999]}`, nil, "JSON event"},
		{`{"X": [0.1, -0.2]}`, nil, "case-sensitive"},
		{`{"x": [0.1], "x": [0.2]}`, nil, "repeated"},
		{`{"x": [0.1]} {"x": [0.2]}`, nil, "after the JSON object"},
		{`{"x": [0.1], "ts": 17}`, []float64{0.1}, ""},
		{"1," + strings.Repeat("9", 1<<20) + "x", nil, "(1048577 bytes)"},
	} {
		got, err := ParseEvent([]byte(tc.line), nil)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", tc.line, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: got %v, %v; want %v", tc.line, got, err, tc.want)
		}
	}
}

func TestParseLabel(t *testing.T) {
	for _, tc := range []struct {
		line string
		want float64
		ok   bool
	}{
		{"1", 1, true}, {"-1", -1, true}, {"+1", 1, true}, {" 1.0 ", 1, true},
		{`{"y": -1}`, -1, true}, {`{"id": 3, "y": 1}`, 1, true},
		{"0", 0, false}, {"2", 0, false}, {"yes", 0, false}, {`{"x": 1}`, 0, false}, {"NaN", 0, false},
		{`{"Y": 1}`, 0, false}, {`{"y": -1, "y": 1}`, 0, false},
	} {
		got, err := ParseLabel([]byte(tc.line))
		if (err == nil) != tc.ok || (tc.ok && got != tc.want) {
			t.Errorf("%q: got %v, %v", tc.line, got, err)
		}
	}
}

func TestLineReader(t *testing.T) {
	lr := NewLineReader(strings.NewReader("# header\n\n1,2\n  \n3,4\n"))
	var got []int
	for {
		_, n, err := lr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, n)
	}
	if !reflect.DeepEqual(got, []int{3, 5}) {
		t.Errorf("line numbers %v, want [3 5]", got)
	}
}

// FuzzParseEvent checks that the event parser never panics and that what it
// accepts is finite and survives a CSV round trip.
func FuzzParseEvent(f *testing.F) {
	for _, s := range []string{"1,2,3", `{"x":[1,2]}`, "", ",", "1e308,-1e308", "NaN", `{"x":null}`, "0x1p-2,1_0"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		x, err := ParseEvent(line, nil)
		if err != nil {
			return
		}
		var b strings.Builder
		for i, v := range x {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				if line[0] != '{' {
					t.Fatalf("accepted non-finite %v from %q", v, line)
				}
			}
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(formatFloat(v))
		}
		if len(x) == 0 {
			return
		}
		y, err := ParseEvent([]byte(b.String()), nil)
		if err != nil || !reflect.DeepEqual(x, y) {
			t.Fatalf("round trip of %q: %v, %v", line, y, err)
		}
	})
}

// FuzzParseLabel: accepted labels are exactly ±1.
func FuzzParseLabel(f *testing.F) {
	for _, s := range []string{"1", "-1", `{"y":1}`, "0", "+1.0"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		y, err := ParseLabel(line)
		if err == nil && y != 1 && y != -1 {
			t.Fatalf("accepted label %v from %q", y, line)
		}
	})
}

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func TestParseAnswer(t *testing.T) {
	for _, tc := range []struct {
		line string
		id   uint64
		y    float64
		ok   bool
	}{
		{"17,-1", 17, -1, true}, {" 3 , 1 ", 3, 1, true}, {`{"id": 9, "y": 1}`, 9, 1, true},
		{"17", 0, 0, false}, {"-1,1", 0, 0, false}, {"4,0", 0, 0, false}, {`{"y": 1}`, 0, 0, false},
		{`{"ID": 9, "y": 1}`, 0, 0, false}, {`{"id": 9, "id": 8, "y": 1}`, 0, 0, false},
	} {
		id, y, err := ParseAnswer([]byte(tc.line))
		if (err == nil) != tc.ok || (tc.ok && (id != tc.id || y != tc.y)) {
			t.Errorf("%q: got %d, %v, %v", tc.line, id, y, err)
		}
	}
}

// FuzzParseAnswer: accepted answers carry a label of exactly ±1.
func FuzzParseAnswer(f *testing.F) {
	for _, s := range []string{"1,1", `{"id":2,"y":-1}`, ",", "18446744073709551615,-1"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if _, y, err := ParseAnswer(line); err == nil && y != 1 && y != -1 {
			t.Fatalf("accepted label %v from %q", y, line)
		}
	})
}
