package data

import (
	"strings"
	"testing"
)

func TestQuote(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"abc", `"abc"`},
		{"", `""`},
		{strings.Repeat("a", 64), `"` + strings.Repeat("a", 64) + `"`},
		{strings.Repeat("a", 65), `"` + strings.Repeat("a", 64) + `"... (65 bytes)`},
		// A cut never splits a character: é is 2 bytes at offsets 63–64.
		{strings.Repeat("a", 63) + "é" + strings.Repeat("b", 10), `"` + strings.Repeat("a", 63) + `"... (75 bytes)`},
	} {
		if got := Quote(tc.in); got != tc.want {
			t.Errorf("Quote(%d bytes) = %s, want %s", len(tc.in), got, tc.want)
		}
		if got := Quote([]byte(tc.in)); got != tc.want {
			t.Errorf("Quote([]byte) differs: %s", got)
		}
	}
}

// TestLoadersCutLongFields: a 10 kB bad field is named by its line and cut
// in the error, by every loader.
func TestLoadersCutLongFields(t *testing.T) {
	long := strings.Repeat("x", 10000)
	loaders := []struct {
		name string
		load func(string) error
		in   string
		want string
	}{
		{"csv", func(s string) error { _, err := LoadCSV(strings.NewReader(s), CSVOptions{}); return err }, "1,1\n" + long + ",1\n", "line 2"},
		{"libsvm", func(s string) error { _, err := LoadLibSVM(strings.NewReader(s), 0); return err }, "1 1:" + long + "\n", "line 1"},
		{"nab", func(s string) error { _, err := ParseNABSeries(strings.NewReader(s), "s"); return err }, "timestamp,value\nt," + long + "\n", "line 2"},
		{"kdd names", func(s string) error { return CheckKDDNames(strings.NewReader(s), "names") }, "labels\n" + long + "\n", "line 2"},
	}
	for _, tc := range loaders {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.load(tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.want) || len(err.Error()) > 300 {
				t.Errorf("error (%d bytes) %.300v, want a short one naming %s", len(errString(err)), err, tc.want)
			}
		})
	}
}

// TestNormOverflow: a row of finite entries whose norm overflows is refused
// with its line, as its +Inf norm would otherwise reach every consumer.
func TestNormOverflow(t *testing.T) {
	if _, err := LoadCSV(strings.NewReader("1,2,1\n1e308,1e308,1\n"), CSVOptions{}); err == nil || !strings.Contains(err.Error(), "line 2: the row's norm overflows") {
		t.Errorf("csv: %v", err)
	}
	if _, err := LoadLibSVM(strings.NewReader("1 1:0.5\n-1 1:1e200 2:1e200\n"), 0); err == nil || !strings.Contains(err.Error(), "line 2: the row's norm overflows") {
		t.Errorf("libsvm: %v", err)
	}
	d := &Dataset{Name: "d", X: [][]float64{{1e200, 1e200}}}
	if err := d.Validate(); err == nil || !strings.Contains(err.Error(), "row 0: the row's norm overflows") {
		t.Errorf("Validate: %v", err)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
