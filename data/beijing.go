package data

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"time"
)

// Regression is a table of feature rows with real-valued targets, in
// stream order.
type Regression struct {
	// Name identifies the data, e.g. "beijing".
	Name string
	// X holds the rows, all of length len(FeatureNames).
	X [][]float64
	// Y holds each row's target.
	Y []float64
	// FeatureNames names the columns of X.
	FeatureNames []string
}

// Len is the number of rows.
func (d *Regression) Len() int { return len(d.X) }

// BeijingFiles are the 12 station files of the Beijing Multi-Site Air
// Quality data (UCI PRSA2017), as stored in beijing_air_quality.
var BeijingFiles = func() []string {
	stations := []string{"Aotizhongxin", "Changping", "Dingling", "Dongsi", "Guanyuan", "Gucheng",
		"Huairou", "Nongzhanguan", "Shunyi", "Tiantan", "Wanliu", "Wanshouxigong"}
	out := make([]string, len(stations))
	for i, s := range stations {
		out[i] = "PRSA_Data_" + s + "_20130301-20170228.csv.gz"
	}
	return out
}()

// beijingHeader is the header every station file has.
var beijingHeader = []string{"No", "year", "month", "day", "hour", "PM2.5", "PM10", "SO2", "NO2",
	"CO", "O3", "TEMP", "PRES", "DEWP", "RAIN", "wd", "WSPM", "station"}

// beijingWinds are the 16 compass points of the wd column.
var beijingWinds = []string{"N", "NNE", "NE", "ENE", "E", "ESE", "SE", "SSE",
	"S", "SSW", "SW", "WSW", "W", "WNW", "NW", "NNW"}

// beijingCovariate is a numeric column used as a feature: its public range
// (PROVENANCE.md's measured ranges, rounded outwards) and whether it is
// log-scaled. Declared ranges, not ranges fitted on the data, keep the
// scaling data-independent, as a DP learner's bounds must be.
type beijingCovariate struct {
	name   string
	lo, hi float64
	log    bool
}

var beijingCovariates = []beijingCovariate{
	{"SO2", 0, 500, true}, {"NO2", 0, 300, true}, {"CO", 0, 10000, true}, {"O3", 0, 1100, true},
	{"TEMP", -20, 42, false}, {"PRES", 980, 1045, false}, {"DEWP", -44, 30, false},
	{"RAIN", 0, 75, true}, {"WSPM", 0, 14, false},
}

// beijingPM25Max caps the target (999 is the instrument's cap).
const beijingPM25Max = 999

// BeijingRecord is one complete hourly row of a station file.
type BeijingRecord struct {
	// Hour counts hours since 2013-03-01 00:00 (Beijing time).
	Hour int
	// Station is the site's name.
	Station string
	// PM25 is the PM2.5 concentration (µg/m³).
	PM25 float64
	// Covariates holds SO2, NO2, CO, O3, TEMP, PRES, DEWP, RAIN and WSPM.
	Covariates [9]float64
	// Wind indexes beijingWinds.
	Wind int
}

var beijingEpoch = time.Date(2013, 3, 1, 0, 0, 0, 0, time.UTC)

// ParseBeijing reads one station file (CSV, header line, NA for missing)
// and returns its complete rows: those with PM2.5, the nine covariates and
// the wind direction present. PM10 is not used (it nearly determines PM2.5;
// PROVENANCE.md). A malformed line is an error naming name and the line.
func ParseBeijing(r io.Reader, name string) ([]BeijingRecord, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = len(beijingHeader)
	cr.ReuseRecord = true
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("%s:1: header: %w", name, err)
	}
	if !slices.Equal(head, beijingHeader) {
		return nil, fmt.Errorf("%s:1: header %q, want %q", name, head, beijingHeader)
	}
	var out []BeijingRecord
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		line, _ := cr.FieldPos(0)
		row, ok, err := parseBeijingRow(rec)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		if ok {
			out = append(out, row)
		}
	}
}

// parseBeijingRow parses one data line; ok is false for a row with a
// missing value it needs.
func parseBeijingRow(rec []string) (row BeijingRecord, ok bool, err error) {
	var ymdh [4]int
	for i := range ymdh {
		if ymdh[i], err = strconv.Atoi(rec[1+i]); err != nil {
			return row, false, fmt.Errorf("column %s: %q is not an integer", beijingHeader[1+i], rec[1+i])
		}
	}
	when := time.Date(ymdh[0], time.Month(ymdh[1]), ymdh[2], ymdh[3], 0, 0, 0, time.UTC)
	if when.Year() != ymdh[0] || int(when.Month()) != ymdh[1] || when.Day() != ymdh[2] || when.Hour() != ymdh[3] {
		return row, false, fmt.Errorf("no such hour %d-%d-%d %d:00", ymdh[0], ymdh[1], ymdh[2], ymdh[3])
	}
	row.Hour = int(when.Sub(beijingEpoch) / time.Hour)
	row.Station = rec[17]
	complete := true
	num := func(col int) float64 {
		s := rec[col]
		if s == "NA" {
			complete = false
			return 0
		}
		v, perr := strconv.ParseFloat(s, 64)
		if perr != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			if err == nil {
				err = fmt.Errorf("column %s: %q is not a number or NA", beijingHeader[col], s)
			}
			return 0
		}
		return v
	}
	row.PM25 = num(5)
	for i, c := range beijingCovariates {
		row.Covariates[i] = num(slices.Index(beijingHeader, c.name))
	}
	if err != nil {
		return row, false, err
	}
	wd := rec[15]
	switch row.Wind = slices.Index(beijingWinds, wd); {
	case wd == "NA":
		complete = false
	case row.Wind < 0:
		return row, false, fmt.Errorf("column wd: unknown wind direction %q", wd)
	}
	return row, complete, nil
}

// LoadBeijing loads the 12 station files from dir (the beijing_air_quality
// folder or the data root holding it), merges their complete rows into one
// stream in time order (stations in file order within an hour), and
// preprocesses them with BeijingRegression.
func LoadBeijing(dir string) (*Regression, error) {
	dir, err := findDir(dir, "beijing_air_quality", BeijingFiles[0])
	if err != nil {
		return nil, err
	}
	var all []BeijingRecord
	for _, name := range BeijingFiles {
		recs, err := readBeijingFile(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		all = append(all, recs...)
	}
	slices.SortStableFunc(all, func(a, b BeijingRecord) int { return a.Hour - b.Hour })
	return BeijingRegression(all), nil
}

func readBeijingFile(path string) ([]BeijingRecord, error) {
	zr, err := OpenGzip(path)
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	return ParseBeijing(zr, filepath.Base(path))
}

// BeijingRegression turns records into regression rows with fixed,
// data-independent scaling, so that every row has ‖x‖ ≤ 1 and y ∈ [0, 1]:
// the nine covariates are scaled to [0, 1] over their declared ranges
// (log1p first for the concentrations and rain) and clamped, the wind
// direction is one-hot over 16 points, and a constant 1 is appended; the
// row is divided by √11 (at most 11 non-zero entries in [0, 1]) and
// projected onto the unit ball to make the bound exact. The target is
// log1p(PM2.5)/log1p(999), clamped to [0, 1].
func BeijingRegression(recs []BeijingRecord) *Regression {
	names := make([]string, 0, len(beijingCovariates)+len(beijingWinds)+1)
	for _, c := range beijingCovariates {
		names = append(names, c.name)
	}
	for _, w := range beijingWinds {
		names = append(names, "wd="+w)
	}
	names = append(names, "bias")
	out := &Regression{Name: "beijing", FeatureNames: names, X: make([][]float64, len(recs)), Y: make([]float64, len(recs))}
	scale := 1 / math.Sqrt(11)
	for i, r := range recs {
		x := make([]float64, len(names))
		for j, c := range beijingCovariates {
			v, lo, hi := r.Covariates[j], c.lo, c.hi
			if c.log {
				v, lo, hi = math.Log1p(math.Max(v, 0)), math.Log1p(lo), math.Log1p(hi)
			}
			x[j] = scale * clamp01((v-lo)/(hi-lo))
		}
		x[len(beijingCovariates)+r.Wind] = scale
		x[len(names)-1] = scale
		ProjectUnitBall(x)
		out.X[i] = x
		out.Y[i] = clamp01(math.Log1p(math.Max(r.PM25, 0)) / math.Log1p(beijingPM25Max))
	}
	return out
}

func clamp01(v float64) float64 { return math.Max(0, math.Min(1, v)) }

// BeijingTarget inverts the target scaling: PM2.5 in µg/m³ from y.
func BeijingTarget(y float64) float64 { return math.Expm1(y * math.Log1p(beijingPM25Max)) }
