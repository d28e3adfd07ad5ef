package main

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpal-dev/dpal/data"
)

// tinyMNIST writes a data root whose mnist/ folder holds n training and n
// test 28×28 images of two classes a linear model on ScatterNet features
// separates: horizontal stripes (label 0) and vertical ones (label 1), at
// random phases and contrasts.
func tinyMNIST(t *testing.T, n int) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, data.MNISTFolder)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 8))
	for _, split := range [][2]string{{data.IDXTrainImages, data.IDXTrainLabels}, {data.IDXTestImages, data.IDXTestLabels}} {
		imgs, labs := make([]byte, n*784), make([]byte, n)
		for i := range n {
			labs[i] = byte(i % 2)
			phase, level := r.IntN(4), 120+r.IntN(135)
			for y := range 28 {
				for x := range 28 {
					k := y
					if labs[i] == 1 {
						k = x
					}
					if (k+phase)%4 < 2 {
						imgs[i*784+y*28+x] = byte(level)
					}
				}
			}
		}
		writeIDX(t, filepath.Join(dir, split[0]), []uint32{uint32(n), 28, 28}, imgs)
		writeIDX(t, filepath.Join(dir, split[1]), []uint32{uint32(n)}, labs)
	}
	return root
}

// writeIDX writes an unsigned-byte IDX file of the given dimensions,
// gzipped.
func writeIDX(t *testing.T, path string, dims []uint32, body []byte) {
	t.Helper()
	var raw bytes.Buffer
	raw.Write([]byte{0, 0, 0x08, byte(len(dims))})
	for _, d := range dims {
		binary.Write(&raw, binary.BigEndian, d)
	}
	raw.Write(body)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(raw.Bytes())
	zw.Close()
	if err := os.WriteFile(path, gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestTrainFeaturesRefuses(t *testing.T) {
	csv := twoBlobsCSV(t, 50)
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown", []string{"--data", "mnist", "--features", "hog"}, `--features "hog": want raw or scatter`},
		{"tabular", []string{"--data", "csv", "--file", csv, "--features", "scatter"}, "--features scatter needs --data mnist or fashion-mnist"},
		{"cnn", []string{"--data", "mnist", "--data-dir", tinyMNIST(t, 4), "--features", "scatter", "--model", "cnn", "--cache-dir", "none"},
			"the CNN takes 28×28 images, not ScatterNet features"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, cmd := range [][]string{{"train"}, {"pool", "run", "--epsilon", "3"}} {
				_, _, err := runCLI(t, "", append(cmd, c.args...)...)
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Errorf("%s: error %v, want %q", cmd[0], err, c.want)
				}
			}
		})
	}
}

// train --features scatter end to end on a tiny image set of two classes
// (so a binary logistic regression, one weight per feature): it learns, its
// output and model file record the features, a second run reads the cache
// and trains the same model, and predict applies the same features.
func TestTrainFeaturesScatter(t *testing.T) {
	root, cache := tinyMNIST(t, 80), t.TempDir()
	model := filepath.Join(t.TempDir(), "m.json")
	args := []string{"train", "--data", "mnist", "--data-dir", root, "--features", "scatter", "--cache-dir", cache,
		"--epsilon", "8", "--delta", "1e-3", "--batch", "20", "--epochs", "10", "--lr", "1", "--seed", "5", "--json"}
	run := func(extra ...string) map[string]any {
		t.Helper()
		out, _, err := runCLI(t, "", append(args, extra...)...)
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return got
	}
	first := run("--out", model)
	if first["features"] != "scatter" || first["model"] != "logreg" || first["params"] != float64(81*49+1) {
		t.Errorf("features %v, model %v, %v parameters", first["features"], first["model"], first["params"])
	}
	if c, _ := first["scatter"].(map[string]any); c["J"] != 2.0 || c["L"] != 8.0 || c["Groups"] != 27.0 {
		t.Errorf("scatter config %v", first["scatter"])
	}
	if acc := first["test_accuracy"].(float64); acc < 0.9 {
		t.Errorf("test accuracy %v on stripes", acc)
	}
	files, _ := filepath.Glob(filepath.Join(cache, "*.f32"))
	if len(files) != 2 {
		t.Errorf("cache holds %v, want the training and test features", files)
	}
	if again := run(); again["test_accuracy"] != first["test_accuracy"] {
		t.Errorf("from the cache: accuracy %v, first run %v", again["test_accuracy"], first["test_accuracy"])
	}
	b, err := os.ReadFile(model)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"features":"scatter"`)) {
		t.Errorf("model file does not record the features")
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // predict uses the default cache directory
	pout, _, err := runCLI(t, "", "predict", "--model", model, "--data", "mnist", "--data-dir", root, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var pred map[string]any
	_ = json.Unmarshal([]byte(pout), &pred)
	if pred["accuracy"] != first["test_accuracy"] {
		t.Errorf("predict accuracy %v, train reported %v", pred["accuracy"], first["test_accuracy"])
	}
}

// Raw features leave the outputs as they were: no features field.
func TestTrainFeaturesRawUnrecorded(t *testing.T) {
	out, _, err := runCLI(t, "", "train", "--data", "csv", "--file", twoBlobsCSV(t, 100), "--epsilon", "4", "--epochs", "1",
		"--batch", "20", "--seed", "1", "--json")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, `"features"`) || strings.Contains(out, `"scatter"`) {
		t.Errorf("raw run records features: %s", out)
	}
}

// repro dpsgd checks --features and --beside before it trains.
func TestReproDPSGDFeaturesRefuses(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--features", "hog"}, `features "hog"`},
		{[]string{"--features", "scatter", "--data", "kdd99-5class"}, "no ScatterNet preset"},
		{[]string{"--beside", filepath.Join(t.TempDir(), "missing.json")}, "--beside"},
		{[]string{"--beside", bad}, "--beside"},
	} {
		args := append([]string{"repro", "dpsgd", "--out", t.TempDir(), "--seed", "1"}, c.args...)
		if _, _, err := runCLI(t, "", args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.args, err, c.want)
		}
	}
}

// pool run --features scatter: the active learner trains on the features
// and its output records them.
func TestPoolRunFeaturesScatter(t *testing.T) {
	root := tinyMNIST(t, 200)
	out, _, err := runCLI(t, "", "pool", "run", "--data", "mnist", "--data-dir", root, "--features", "scatter",
		"--cache-dir", t.TempDir(), "--acquisition", "random", "--selection", "topk", "--epsilon", "8", "--epsilon-select", "0",
		"--initial", "60", "--queries", "40", "--batch", "20", "--epochs", "5", "--lr", "1", "--seed", "2",
		"--ledger", filepath.Join(t.TempDir(), "ledger.db"), "--json")
	if err != nil {
		t.Fatal(err)
	}
	var got poolRunOutput
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got.Features != "scatter" || got.Scatter == nil || got.Model != "logreg" {
		t.Errorf("features %q (%v), model %s", got.Features, got.Scatter, got.Model)
	}
	if got.Result.TestAccuracy < 0.8 {
		t.Errorf("test accuracy %v on stripes", got.Result.TestAccuracy)
	}
}
