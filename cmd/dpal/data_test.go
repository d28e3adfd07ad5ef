package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// runData runs `dpal data …` and returns stdout and stderr together.
func runData(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, errOut, err := runCLI(t, "", append([]string{"data"}, args...)...)
	return out + errOut, err
}

func TestDataDescribeDemoJSON(t *testing.T) {
	out, err := runData(t, "describe", "--dataset", "demo", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var res describeResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v in %q", err, out)
	}
	if res.Train == nil || res.Train.Rows != 3176 || res.Train.Dims != 116 || res.Test == nil || res.Test.Rows != 1655 {
		t.Fatalf("%+v", res)
	}
	out, err = runData(t, "describe", "--dataset", "demo", "--kdd-paper-encoding")
	if err != nil || !strings.Contains(out, "dims 120") { // the paper's dimension
		t.Fatalf("%v %q", err, out)
	}
}

func TestDataDescribeCSV(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.csv")
	os.WriteFile(path, []byte("a,b,y\n1,2,1\n3,4,-1\n5,6,1\n"), 0o644)
	out, err := runData(t, "describe", "--dataset", "csv", "--file", path, "--header", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var res describeResult
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Train.Rows != 3 || res.Train.Dims != 2 || res.Train.Positive != 2 {
		t.Fatalf("%v %q", err, out)
	}
	zero := filepath.Join(t.TempDir(), "z.csv")
	os.WriteFile(zero, []byte("1,2,1\n3,4,0\n"), 0o644)
	if _, err := runData(t, "describe", "--dataset", "csv", "--file", zero); err == nil || !strings.Contains(err.Error(), "line 2 field 3 (label): label 0") {
		t.Fatalf("label 0 without --zero-is-negative: %v", err)
	}
	out, err = runData(t, "describe", "--dataset", "csv", "--file", zero, "--zero-is-negative", "--json")
	res = describeResult{}
	if err != nil || json.Unmarshal([]byte(out), &res) != nil || res.Train.Positive != 1 || res.Train.Negative != 1 {
		t.Fatalf("--zero-is-negative: %v %q", err, out)
	}
	path2 := filepath.Join(t.TempDir(), "d.svm")
	os.WriteFile(path2, []byte("1 2:1\n-1 1:1\n"), 0o644)
	if out, err := runData(t, "describe", "--dataset", "libsvm", "--file", path2); err != nil || !strings.Contains(out, "dims 2") {
		t.Fatalf("%v %q", err, out)
	}
}

func TestDataDescribeErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"describe"}, "--dataset is required"},
		{[]string{"describe", "--dataset", "cifar"}, `--dataset "cifar": want`},
		{[]string{"describe", "--dataset", "csv"}, "--dataset csv needs --file"},
		{[]string{"describe", "--dataset", "csv", "--file", "/nonexistent.csv"}, "no such file"},
		{[]string{"describe", "--dataset", "mnist", "--pair", "0"}, `--pair "0": want two labels`},
		{[]string{"describe", "--dataset", "kdd99", "--data-dir", "/nonexistent"}, "no kddcup.data_10_percent.gz in /nonexistent"},
		{[]string{"describe", "--dataset", "nab", "--data-dir", "/nonexistent"}, "no labels/combined_labels.json"},
		{[]string{"describe", "extra"}, "unknown command"},
		{[]string{"bogus"}, `unknown command "bogus" for "dpal data"`},
		{[]string{"describe", "--dataset", "csv", "--file", writeTemp(t, t.TempDir(), "inf.csv", "1e308,1e308,1\n0.5,0.5,-1\n"), "--json"},
			"inf.csv line 1: the row's norm overflows"},
		{[]string{"describe", "--dataset", "csv", "--file", writeTemp(t, t.TempDir(), "long.csv", "1,1\n"+strings.Repeat("x", 1<<20)+",1\n")},
			`... (1048576 bytes)`},
	}
	for _, tc := range tests {
		_, err := runData(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: error %v, want one line containing %q", tc.args, err, tc.want)
		}
	}
}

// TestDataDescribeReal runs the cheap real datasets when ../shared/data exists
// (relative to the repository root, i.e. ../../../shared/data from here).
func TestDataDescribeReal(t *testing.T) {
	dir := os.Getenv("DPAL_DATA_DIR")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "shared", "data")
	}
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("data directory %s not available", dir)
	}
	out, err := runData(t, "describe", "--dataset", "nab", "--data-dir", dir, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var res describeResult
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.NAB == nil || res.NAB.Series != 58 || res.NAB.Anomalies != 120 {
		t.Fatalf("%v %q", err, out)
	}
	out, err = runData(t, "describe", "--dataset", "mnist", "--data-dir", dir, "--pool", "1")
	if err != nil || !strings.Contains(out, "rows 11872, dims 784") {
		t.Fatalf("%v %q", err, out)
	}
}

func FuzzParsePair(f *testing.F) {
	for _, s := range []string{"0,9", " 3 , 5 ", "0", "a,b", "1,2,3", "", "-1,+2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, b, err := parsePair(s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "--pair ") {
				t.Fatalf("parsePair(%q): error without flag name: %v", s, err)
			}
			return
		}
		a2, b2, err := parsePair(strconv.Itoa(a) + "," + strconv.Itoa(b))
		if err != nil || a2 != a || b2 != b {
			t.Fatalf("parsePair(%q) = %d, %d does not round-trip: %d, %d, %v", s, a, b, a2, b2, err)
		}
	})
}
