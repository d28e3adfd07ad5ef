package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpal-dev/dpal/data"
	"github.com/dpal-dev/dpal/model/nn"
)

func TestTrainNonPrivate(t *testing.T) {
	file := twoBlobsCSV(t, 400)
	args := []string{"train", "--data", "csv", "--file", file, "--non-private", "--epochs", "3", "--batch", "40", "--seed", "3"}
	t.Run("json", func(t *testing.T) {
		out, _, err := runCLI(t, "", append(args, "--json")...)
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if got["private"] != false || !strings.Contains(got["not_dp"].(string), "NOT DIFFERENTIALLY PRIVATE") {
			t.Errorf("not labelled as non-private: private=%v not_dp=%v", got["private"], got["not_dp"])
		}
		for _, k := range []string{"epsilon", "delta", "noise_multiplier", "ledger_group", "ledger_epsilon"} {
			if _, ok := got[k]; ok {
				t.Errorf("a non-private run reports %q", k)
			}
		}
		if acc := got["test_accuracy"].(float64); acc < 0.9 {
			t.Errorf("test accuracy %v on separable blobs", acc)
		}
	})
	t.Run("text", func(t *testing.T) {
		out, _, err := runCLI(t, "", args...)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Count(out, "NOT D") < 3 || strings.Contains(out, "ε=") {
			t.Errorf("text output not labelled NOT DP throughout:\n%s", out)
		}
	})
	for _, c := range []struct{ name, flag, value string }{
		{"epsilon", "--epsilon", "3"},
		{"delta", "--delta", "1e-6"},
		{"ledger", "--ledger", filepath.Join(t.TempDir(), "l.json")},
	} {
		t.Run("refuses "+c.name, func(t *testing.T) {
			_, _, err := runCLI(t, "", append(args, c.flag, c.value)...)
			if err == nil || !strings.Contains(err.Error(), c.flag) {
				t.Errorf("accepted %s with --non-private (err %v)", c.flag, err)
			}
		})
	}
}

// --activation overrides the dataset's default MLP activation; unset, the
// default holds.
func TestTrainFlagsActivation(t *testing.T) {
	img := &data.Dataset{X: [][]float64{make([]float64, 784)}, ClassNames: make([]string, 10)}
	cmd, _, err := rootCmd.Find([]string{"train"})
	if err != nil {
		t.Fatal(err)
	}
	defer resetCommand(rootCmd)
	for _, c := range []struct{ name, flag, want string }{
		{"default", "", nn.Tanh},
		{"flag", nn.ReLU, nn.ReLU},
	} {
		t.Run(c.name, func(t *testing.T) {
			resetCommand(rootCmd)
			for k, v := range map[string]string{"model": "mlp:256", "activation": c.flag} {
				if v != "" {
					if err := cmd.Flags().Set(k, v); err != nil {
						t.Fatal(err)
					}
				}
			}
			s, err := trainFlags(cmd, "mnist", img, [3]int{28, 28, 1})
			if err != nil || s.Model.Activation != c.want {
				t.Errorf("activation %q (%v), want %q", s.Model.Activation, err, c.want)
			}
		})
	}
}
