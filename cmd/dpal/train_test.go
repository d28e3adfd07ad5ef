package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpal-dev/dpal/repro/dpsgdrepro"
)

// twoBlobsCSV writes n separable rows "x1,x2,label" (labels ±1).
func twoBlobsCSV(t *testing.T, n int) string {
	t.Helper()
	var b strings.Builder
	for i := range n {
		y := 2*(i%2) - 1
		fmt.Fprintf(&b, "%.3f,%.3f,%d\n", float64(y)+0.1*float64(i%7-3), 0.05*float64(i%5), y)
	}
	path := filepath.Join(t.TempDir(), "blobs.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestTrainPredictCSV(t *testing.T) {
	file := twoBlobsCSV(t, 400)
	model := filepath.Join(t.TempDir(), "m.json")
	out, _, err := runCLI(t, "", "train", "--data", "csv", "--file", file, "--epsilon", "4", "--epochs", "5",
		"--batch", "40", "--seed", "3", "--out", model, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, k := range []string{"noise_multiplier", "steps", "epsilon", "delta", "test_accuracy", "examples_per_second", "epoch_log", "seed"} {
		if _, ok := got[k]; !ok {
			t.Errorf("--json lacks %q", k)
		}
	}
	if acc := got["test_accuracy"].(float64); acc < 0.9 {
		t.Errorf("test accuracy %v on separable blobs", acc)
	}
	if e := got["ledger_epsilon"].(float64); e > 4*(1+1e-9) || e < 3.9 {
		t.Errorf("ledger charged ε=%v for target 4", e)
	}
	pout, _, err := runCLI(t, "", "predict", "--model", model, "--data", "csv", "--file", file, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var pred map[string]any
	_ = json.Unmarshal([]byte(pout), &pred)
	if pred["accuracy"] != got["test_accuracy"] {
		t.Errorf("predict accuracy %v, train reported %v", pred["accuracy"], got["test_accuracy"])
	}
}

func TestTrainRejects(t *testing.T) {
	file := twoBlobsCSV(t, 40)
	for _, c := range []struct {
		name string
		args []string
	}{
		{"no data", []string{"train"}},
		{"bad data", []string{"train", "--data", "iris"}},
		{"no file", []string{"train", "--data", "csv"}},
		{"bad model", []string{"train", "--data", "csv", "--file", file, "--model", "svm"}},
		{"cnn on tabular", []string{"train", "--data", "csv", "--file", file, "--model", "cnn"}},
		{"bad epsilon", []string{"train", "--data", "csv", "--file", file, "--epsilon", "-1"}},
		{"batch above n", []string{"train", "--data", "csv", "--file", file, "--batch", "1000"}},
		{"bad optimizer", []string{"train", "--data", "csv", "--file", file, "--optimizer", "rmsprop"}},
		{"predict without model", []string{"predict", "--data", "csv", "--file", file}},
		{"out is the input", []string{"train", "--data", "csv", "--file", file, "--out", file}},
		{"ledger is the input", []string{"train", "--data", "csv", "--file", file, "--ledger", file}},
		{"probs is the model", []string{"predict", "--data", "csv", "--file", file, "--model", file, "--probs", file}},
		{"ocp out is the input", []string{"ocp", "--data", file, "--out", file}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, _, err := runCLI(t, "", c.args...); err == nil {
				t.Error("accepted")
			}
		})
	}
}

func TestEpochEnds(t *testing.T) {
	for _, c := range []struct {
		steps  int
		epochs float64
		want   map[int]int
	}{
		{2413, 5, map[int]int{483: 1, 965: 2, 1448: 3, 1930: 4, 2413: 5}},
		{10, 2.5, map[int]int{4: 1, 8: 2, 10: 3}},
		{3, 1, map[int]int{3: 1}},
	} {
		got := map[int]int{}
		for i, end := range epochEnds(c.steps, c.epochs) {
			got[end] = i + 1
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("epochEnds(%d, %v) = %v, want %v", c.steps, c.epochs, got, c.want)
		}
	}
}

func TestReproDPSGDCSV(t *testing.T) {
	file := twoBlobsCSV(t, 1500) // the csv default batch is 256
	out := t.TempDir()
	stdout, _, err := runCLI(t, "", "repro", "dpsgd", "--data", "csv", "--file", file, "--epsilons", "1,4",
		"--seeds", "2", "--epochs-scale", "0.5", "--seed", "9", "--out", out)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"rows.csv", "summary.json", "csv-accuracy.png", "csv-accuracy.csv"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("%s not written: %v", f, err)
		}
	}
	var sum dpsgdrepro.Summary
	b, _ := os.ReadFile(filepath.Join(out, "summary.json"))
	if err := json.Unmarshal(b, &sum); err != nil || len(sum.Rows) != 6 || len(sum.Points) != 3 || sum.Seed != 9 {
		t.Fatalf("summary %+v, %v\n%s", sum, err, stdout)
	}
	// The last point is the non-private reference, labelled as such.
	if ref := sum.Points[2]; ref.Private || ref.Epsilon != 0 || ref.Runs != 2 || ref.Mean < 0.9 || !sum.Points[0].Private {
		t.Errorf("reference point %+v", ref)
	}
	rows, _ := os.ReadFile(filepath.Join(out, "rows.csv"))
	if !strings.Contains(string(rows), "non-private") || !strings.Contains(stdout, "NOT DP") {
		t.Errorf("the reference is not labelled:\n%s\n%s", rows, stdout)
	}
	out2 := t.TempDir()
	if _, _, err := runCLI(t, "", "repro", "dpsgd", "--data", "csv", "--file", file, "--epsilons", "4", "--model", "mlp:8",
		"--seeds", "1", "--epochs-scale", "0.2", "--seed", "9", "--non-private=false", "--out", out2); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(filepath.Join(out2, "summary.json"))
	if err := json.Unmarshal(b, &sum); err != nil || len(sum.Rows) != 1 || sum.Rows[0].Model != "mlp:8" || !sum.Rows[0].Private {
		t.Errorf("--model mlp:8 --non-private=false: %+v, %v", sum.Rows, err)
	}
	if _, _, err := runCLI(t, "", "repro", "dpsgd", "--data", "csv", "--file", file, "--epsilons", "x"); err == nil {
		t.Error("bad --epsilons accepted")
	}
}
