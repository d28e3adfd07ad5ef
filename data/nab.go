package data

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// NAB label files, relative to the nab folder.
const (
	NABLabelsFile  = "labels/combined_labels.json"
	NABWindowsFile = "labels/combined_windows.json"
)

// nabTime is the layout of NAB timestamps; the fraction is optional, so it
// parses both "2014-04-10 07:15:00" (rows, labels) and
// "2014-04-10 07:15:00.000000" (windows).
const nabTime = "2006-01-02 15:04:05.999999"

// Series is one univariate time series with per-row anomaly flags.
type Series struct {
	// Name is the NAB key, "<category>/<file>.csv" (no .gz).
	Name string
	// Value holds the observations in time order.
	Value []float64
	// Anomaly marks the rows whose timestamp is a labelled anomaly point.
	Anomaly []bool
	// Timestamps holds each row's timestamp as written ("YYYY-MM-DD HH:MM:SS").
	Timestamps []string
	// InWindow marks the rows inside one of NAB's scoring windows
	// (combined_windows.json, bounds included); nil if that file is absent.
	InWindow []bool
}

// Anomalies returns the number of flagged rows.
func (s *Series) Anomalies() int {
	n := 0
	for _, a := range s.Anomaly {
		if a {
			n++
		}
	}
	return n
}

// LoadNAB loads every series under dir/data (dir is the nab folder or the
// data root holding it), sorted by name. Anomaly flags are the point labels
// of labels/combined_labels.json: a row is anomalous when its timestamp
// equals a labelled timestamp. InWindow flags come from
// labels/combined_windows.json when present. A series without an entry in a
// label file, or a label matching no row, is an error.
func LoadNAB(dir string) ([]Series, error) {
	dir, err := findDir(dir, "nab", NABLabelsFile)
	if err != nil {
		return nil, err
	}
	lf, err := os.Open(filepath.Join(dir, NABLabelsFile))
	if err != nil {
		return nil, err
	}
	defer lf.Close()
	labels, err := ParseNABLabels(lf)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", NABLabelsFile, err)
	}
	windows, err := loadNABWindows(dir)
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(dir, "data", "*", "*.csv.gz"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no data/*/*.csv.gz under %s", dir)
	}
	slices.Sort(files)
	var out []Series
	for _, path := range files {
		rel, _ := filepath.Rel(filepath.Join(dir, "data"), path)
		name := strings.TrimSuffix(filepath.ToSlash(rel), ".gz")
		stamps, ok := labels[name]
		if !ok {
			return nil, fmt.Errorf("%s: no entry %s in %s", path, Quote(name), NABLabelsFile)
		}
		s, err := readNABFile(path, name)
		if err != nil {
			return nil, err
		}
		if err := s.markAnomalies(stamps); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if windows != nil {
			w, ok := windows[name]
			if !ok {
				return nil, fmt.Errorf("%s: no entry %s in %s", path, Quote(name), NABWindowsFile)
			}
			if err := s.markWindows(w); err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// ParseNABLabels parses combined_labels.json: an object mapping each series
// key to a list of anomaly timestamps.
func ParseNABLabels(r io.Reader) (map[string][]string, error) {
	return decodeJSONObject[[]string](r)
}

// decodeJSONObject decodes exactly one JSON object mapping keys to V.
func decodeJSONObject[V any](r io.Reader) (map[string]V, error) {
	dec := json.NewDecoder(r)
	var m map[string]V
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("not a JSON object")
	}
	if dec.More() {
		return nil, errors.New("data after the JSON object")
	}
	return m, nil
}

// loadNABWindows reads combined_windows.json, or returns nil if it is absent.
func loadNABWindows(dir string) (map[string][][2]string, error) {
	f, err := os.Open(filepath.Join(dir, NABWindowsFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	w, err := ParseNABWindows(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", NABWindowsFile, err)
	}
	return w, nil
}

// ParseNABWindows parses combined_windows.json: an object mapping each
// series key to a list of [start, end] timestamp pairs.
func ParseNABWindows(r io.Reader) (map[string][][2]string, error) {
	m, err := decodeJSONObject[[][2]string](r)
	if err != nil {
		return nil, err
	}
	for k, ws := range m {
		for i, w := range ws {
			a, errA := time.Parse(nabTime, w[0])
			b, errB := time.Parse(nabTime, w[1])
			if err := errors.Join(errA, errB); err != nil {
				return nil, fmt.Errorf("%s window %d: %w", Quote(k), i+1, err)
			}
			if b.Before(a) {
				return nil, fmt.Errorf("%s window %d: ends before it starts", Quote(k), i+1)
			}
		}
	}
	return m, nil
}

func readNABFile(path, name string) (Series, error) {
	zr, err := OpenGzip(path)
	if err != nil {
		return Series{}, err
	}
	defer zr.Close()
	s, err := ParseNABSeries(zr, name)
	if err != nil {
		return Series{}, fmt.Errorf("%s %w", path, err)
	}
	return s, nil
}

// ParseNABSeries parses one NAB CSV: the header "timestamp,value", then one
// "timestamp,number" line per row. Anomaly flags are all false.
func ParseNABSeries(r io.Reader, name string) (Series, error) {
	s := Series{Name: name}
	sc := bufio.NewScanner(r)
	ln := 0
	for sc.Scan() {
		ln++
		line := bytes.TrimRight(sc.Bytes(), "\r")
		if ln == 1 {
			if string(line) != "timestamp,value" {
				return s, fmt.Errorf("line 1: header %s, want \"timestamp,value\"", Quote(line))
			}
			continue
		}
		ts, val, ok := bytes.Cut(line, []byte{','})
		if !ok || bytes.IndexByte(val, ',') >= 0 {
			return s, fmt.Errorf("line %d: want 2 fields: %s", ln, Quote(line))
		}
		if len(ts) == 0 {
			return s, fmt.Errorf("line %d field 1 (timestamp): empty", ln)
		}
		v, err := strconv.ParseFloat(string(val), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return s, fmt.Errorf("line %d field 2 (value): not a number: %s", ln, Quote(val))
		}
		s.Timestamps = append(s.Timestamps, string(ts))
		s.Value = append(s.Value, v)
	}
	if err := sc.Err(); err != nil {
		return s, fmt.Errorf("line %d: %w", ln+1, err)
	}
	if ln == 0 {
		return s, errors.New("line 1: empty file, want header \"timestamp,value\"")
	}
	s.Anomaly = make([]bool, len(s.Value))
	return s, nil
}

func (s *Series) markWindows(ws [][2]string) error {
	s.InWindow = make([]bool, len(s.Value))
	if len(ws) == 0 {
		return nil
	}
	bounds := make([][2]time.Time, len(ws))
	for i, w := range ws {
		bounds[i][0], _ = time.Parse(nabTime, w[0]) // checked by ParseNABWindows
		bounds[i][1], _ = time.Parse(nabTime, w[1])
	}
	for i, ts := range s.Timestamps {
		t, err := time.Parse(nabTime, ts)
		if err != nil {
			return fmt.Errorf("row %d timestamp: %w", i+1, err)
		}
		for _, b := range bounds {
			if !t.Before(b[0]) && !t.After(b[1]) {
				s.InWindow[i] = true
				break
			}
		}
	}
	return nil
}

func (s *Series) markAnomalies(stamps []string) error {
	at := make(map[string]int, len(s.Timestamps))
	for i, t := range s.Timestamps {
		at[t] = i
	}
	for _, t := range stamps {
		i, ok := at[t]
		if !ok {
			return fmt.Errorf("labelled anomaly %s matches no row", Quote(t))
		}
		s.Anomaly[i] = true
	}
	return nil
}
