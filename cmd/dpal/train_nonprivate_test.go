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

// An MLP on an image set takes the MLP defaults; the CNN and tabular sets
// keep theirs.
func TestDefaultSettingsPerModel(t *testing.T) {
	img := &data.Dataset{X: [][]float64{make([]float64, 784)}, ClassNames: make([]string, 10)}
	tab := &data.Dataset{X: [][]float64{make([]float64, 5)}, ClassNames: make([]string, 5)}
	for _, c := range []struct {
		name, data, model string
		set               *data.Dataset
		eps               float64
		batch             int
		lr, clip, epochs  float64
		activation        string
	}{
		{"mnist cnn", "mnist", "", img, 3, 512, 0.5, 0.1, 30, ""},
		{"mnist cnn low ε", "mnist", "", img, 1, 512, 0.5, 0.1, 15, ""},
		{"fashion cnn", "fashion-mnist", "", img, 3, 2048, 4, 0.1, 40, ""},
		{"fashion cnn low ε", "fashion-mnist", "", img, 1, 512, 0.5, 0.1, 15, ""},
		{"mnist mlp", "mnist", "mlp:256", img, 3, 4096, 1, 1, 40, nn.Tanh},
		{"fashion mlp", "fashion-mnist", "mlp:512,256", img, 2, 1024, 1, 1, 10, nn.ReLU},
		{"mnist mlp low ε", "mnist", "mlp:256", img, 1, 256, 0.1, 1, 10, nn.Tanh},
		{"kdd mlp keeps tabular defaults", "kdd99-5class", "mlp:64", tab, 3, 1024, 0.5, 1, 5, nn.ReLU},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := defaultSettings(c.data, c.set, [3]int{28, 28, 1}, c.eps, 1e-5, c.model)
			if err != nil {
				t.Fatal(err)
			}
			if s.batch != c.batch || s.lr != c.lr || s.clip != c.clip || s.epochs != c.epochs {
				t.Errorf("batch %d lr %v clip %v epochs %v, want %d %v %v %v", s.batch, s.lr, s.clip, s.epochs, c.batch, c.lr, c.clip, c.epochs)
			}
			if s.spec.Activation != c.activation {
				t.Errorf("activation %q, want %q", s.spec.Activation, c.activation)
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
			if err != nil || s.spec.Activation != c.want {
				t.Errorf("activation %q (%v), want %q", s.spec.Activation, err, c.want)
			}
		})
	}
}

// The non-private reference of repro dpsgd trains for the epochs of the
// model's own defaults at ε ≥ 2 (the MLP's 40 on MNIST, not the CNN's 30).
func TestReproDPSGDReferenceEpochs(t *testing.T) {
	img := &data.Dataset{X: [][]float64{make([]float64, 784)}, ClassNames: make([]string, 10)}
	for _, c := range []struct {
		model  string
		epochs float64
	}{{"mlp:256", 40 * 0.5}, {"", 30 * 0.5}} {
		s, err := reproDPSGDSettings("mnist", img, [3]int{28, 28, 1}, 0, 1e-5, c.model, 0.5)
		if err != nil || s.epochs != c.epochs {
			t.Errorf("model %q: reference epochs %v (%v), want %v", c.model, s.epochs, err, c.epochs)
		}
	}
}
