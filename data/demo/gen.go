//go:build ignore

// Command gen writes the bundled KDD Cup 99 demo sample:
//
//	go run ./data/demo/gen.go -data ../shared/data -out data/demo
//
// From each file it keeps, per five-class category (training_attack_types;
// test attacks it does not list form their own "unknown" stratum), a uniform
// random sample of max(n·share, min(count, floor)) lines, where n is the
// target size and share the category's share of the file. Each sample also
// gets one line for every protocol_type, service and flag value of its full
// file, so the demo's one-hot vocabularies, and so its dimensions, equal the
// full data's (including the test-only service "icmp"). Lines are written
// unchanged, in their original order, gzipped.
package main

import (
	"bufio"
	"compress/gzip"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

func main() {
	dataDir := flag.String("data", "../shared/data", "data root")
	out := flag.String("out", "data/demo", "output folder")
	nTrain := flag.Int("train", 3000, "training sample size (before coverage lines)")
	nTest := flag.Int("test", 1500, "test sample size")
	floor := flag.Int("floor", 60, "minimum lines per category, if available")
	seed := flag.Uint64("seed", 1, "sampling seed")
	flag.Parse()
	dir := filepath.Join(*dataDir, "kddcup99")
	cats := attackTypes(filepath.Join(dir, "training_attack_types"))
	r := rand.New(rand.NewPCG(*seed, 0))
	trainLines := readLines(filepath.Join(dir, "kddcup.data_10_percent.gz"))
	testLines := readLines(filepath.Join(dir, "corrected.gz"))
	writeLines(filepath.Join(*out, "kdd_train.gz"), sample(trainLines, cats, *nTrain, *floor, r))
	writeLines(filepath.Join(*out, "kdd_test.gz"), sample(testLines, cats, *nTest, *floor, r))
}

func attackTypes(path string) map[string]string {
	b, err := os.ReadFile(path)
	if err != nil {
		fatal(path, err)
	}
	m := map[string]string{"normal": "normal"}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 2 {
			m[f[0]] = f[1]
		}
	}
	return m
}

func readLines(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		fatal(path, err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		fatal(path, err)
	}
	var lines []string
	sc := bufio.NewScanner(zr)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		fatal(path, err)
	}
	return lines
}

func sample(lines []string, cats map[string]string, n, floor int, r *rand.Rand) []string {
	strata := map[string][]int{}
	for i, l := range lines {
		f := strings.Split(l, ",")
		c, ok := cats[strings.TrimSuffix(f[len(f)-1], ".")]
		if !ok {
			c = "unknown"
		}
		strata[c] = append(strata[c], i)
	}
	keep := map[int]bool{}
	names := make([]string, 0, len(strata))
	for c := range strata {
		names = append(names, c)
	}
	slices.Sort(names)
	for _, c := range names {
		idx := strata[c]
		k := max(n*len(idx)/len(lines), min(len(idx), floor))
		for _, j := range r.Perm(len(idx))[:k] {
			keep[idx[j]] = true
		}
		slog.Info("category", "name", c, "kept", k, "of", len(idx))
	}
	seen := map[string]bool{}
	for i := range keep {
		f := strings.Split(lines[i], ",")
		for _, k := range []int{1, 2, 3} {
			seen[fmt.Sprint(k, f[k])] = true
		}
	}
	for _, i := range r.Perm(len(lines)) {
		f := strings.Split(lines[i], ",")
		for _, k := range []int{1, 2, 3} {
			if !seen[fmt.Sprint(k, f[k])] {
				seen[fmt.Sprint(k, f[k])] = true
				keep[i] = true
			}
		}
	}
	var out []string
	for i, l := range lines {
		if keep[i] {
			out = append(out, l)
		}
	}
	slog.Info("sampled", "lines", len(out))
	return out
}

func writeLines(path string, lines []string) {
	f, err := os.Create(path)
	if err != nil {
		fatal(path, err)
	}
	zw, err := gzip.NewWriterLevel(f, gzip.BestCompression)
	if err != nil {
		fatal(path, err)
	}
	for _, l := range lines {
		fmt.Fprintln(zw, l)
	}
	if err := zw.Close(); err != nil {
		fatal(path, err)
	}
	if err := f.Close(); err != nil {
		fatal(path, err)
	}
}

// fatal logs err for path and exits 1; the generator has nothing to undo.
func fatal(path string, err error) {
	slog.Error("demo gen failed", "file", path, "err", err)
	os.Exit(1)
}
