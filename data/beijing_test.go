package data

import (
	"math"
	"strings"
	"testing"

	"github.com/dpal-dev/dpal/vec"
)

const beijingHead = `"No","year","month","day","hour","PM2.5","PM10","SO2","NO2","CO","O3","TEMP","PRES","DEWP","RAIN","wd","WSPM","station"` + "\r\n"

func TestParseBeijing(t *testing.T) {
	good := beijingHead +
		`1,2013,3,1,0,4,4,4,7,300,77,-0.7,1023,-18.8,0,"NNW",4.4,"Aotizhongxin"` + "\r\n" +
		`2,2013,3,1,1,NA,8,4,7,300,77,-1.1,1023.2,-18.2,0,"N",4.7,"Aotizhongxin"` + "\r\n" +
		`3,2013,3,1,2,7,7,5,10,300,73,-1.1,1023.5,-18.2,0,"NA",5.6,"Aotizhongxin"` + "\r\n" +
		`4,2013,3,2,5,999,7,5,10,300,73,-1.1,1023.5,-18.2,0.5,"E",5.6,"Aotizhongxin"` + "\r\n"
	for _, c := range []struct {
		name, in, want string
		rows           int
	}{
		{"complete rows only", good, "", 2},
		{"bad number", beijingHead + `1,2013,3,1,0,4,4,x,7,300,77,-0.7,1023,-18.8,0,"NNW",4.4,"A"` + "\n", "f.csv:2: column SO2: \"x\" is not a number or NA", 0},
		{"bad wind", beijingHead + `1,2013,3,1,0,4,4,4,7,300,77,-0.7,1023,-18.8,0,"Q",4.4,"A"` + "\n", "f.csv:2: column wd: unknown wind direction \"Q\"", 0},
		{"bad hour", beijingHead + `1,2013,2,30,0,4,4,4,7,300,77,-0.7,1023,-18.8,0,"N",4.4,"A"` + "\n", "f.csv:2: no such hour 2013-2-30 0:00", 0},
		{"short line", beijingHead + `1,2013,3,1` + "\n", "f.csv: record on line 2: wrong number of fields", 0},
		{"bad header", `"a","b"` + "\n", "f.csv:1: header", 0},
		{"nan", beijingHead + `1,2013,3,1,0,NaN,4,4,7,300,77,-0.7,1023,-18.8,0,"N",4.4,"A"` + "\n", "column PM2.5: \"NaN\"", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			recs, err := ParseBeijing(strings.NewReader(c.in), "f.csv")
			if c.want != "" {
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("error %v, want %q", err, c.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != c.rows {
				t.Fatalf("%d rows, want %d", len(recs), c.rows)
			}
			reg := BeijingRegression(recs)
			if reg.Y[1] != 1 || recs[1].Hour != 24+5 || recs[1].Wind != 4 {
				t.Fatalf("row 2: y %v hour %d wind %d", reg.Y[1], recs[1].Hour, recs[1].Wind)
			}
			if got := BeijingTarget(reg.Y[0]); math.Abs(got-4) > 1e-9 {
				t.Fatalf("target round trip %v, want 4", got)
			}
		})
	}
}

func FuzzParseBeijing(f *testing.F) {
	f.Add(beijingHead + `1,2013,3,1,0,4,4,4,7,300,77,-0.7,1023,-18.8,0,"NNW",4.4,"Aotizhongxin"` + "\r\n")
	f.Add(beijingHead + `1,2016,2,29,23,1e300,4,-5,7,1e9,77,-99,0,-18.8,-1,"N",400,"X"` + "\n")
	f.Fuzz(func(t *testing.T, in string) {
		recs, err := ParseBeijing(strings.NewReader(in), "fuzz")
		if err != nil {
			return
		}
		reg := BeijingRegression(recs)
		for i, x := range reg.X {
			if n := vec.Norm(x); !(n <= 1) || len(x) != len(reg.FeatureNames) {
				t.Fatalf("row %d: norm %v, dim %d", i, n, len(x))
			}
			if !(reg.Y[i] >= 0 && reg.Y[i] <= 1) {
				t.Fatalf("row %d: target %v", i, reg.Y[i])
			}
		}
	})
}

func TestLoadBeijing(t *testing.T) {
	dir := testDataDir(t)
	reg, err := LoadBeijing(dir)
	if err != nil {
		t.Fatal(err)
	}
	// PROVENANCE.md: 382,168 complete cases with all 11 numeric covariates
	// and wd; without PM10 (not used here) there are at least as many.
	if reg.Len() < 382168 || reg.Len() > 412029 {
		t.Fatalf("%d rows", reg.Len())
	}
	if len(reg.FeatureNames) != 26 {
		t.Fatalf("%d features", len(reg.FeatureNames))
	}
	t.Logf("beijing: %d rows, %d features", reg.Len(), len(reg.FeatureNames))
}
