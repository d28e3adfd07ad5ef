package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// A resume takes the run on from its checkpoint without charging again
// and under a seed writes the model of an uninterrupted run; changed
// settings, a tampered checkpoint and the flags' misuses are refused.
func TestTrainResume(t *testing.T) {
	file := twoBlobsCSV(t, 400)
	dir := t.TempDir()
	ck, led, model := filepath.Join(dir, "ck"), filepath.Join(dir, "ledger.db"), filepath.Join(dir, "m.json")
	base := []string{"train", "--data", "csv", "--file", file, "--epsilon", "2", "--epochs", "3", "--batch", "40", "--seed", "3", "--no-progress"}
	run := func(extra ...string) (map[string]any, error) {
		out, _, err := runCLI(t, "", slices.Concat(base, extra, []string{"--json"})...)
		if err != nil {
			return nil, err
		}
		var got map[string]any
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return got, nil
	}
	plain, err := run("--out", filepath.Join(dir, "plain.json"))
	if err != nil {
		t.Fatal(err)
	}
	first, err := run("--ledger", led, "--checkpoint", ck, "--out", model)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(ck); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("checkpoint %v, %v: want mode 0600", fi, err)
	}
	want, _ := os.ReadFile(filepath.Join(dir, "plain.json"))
	if got, _ := os.ReadFile(model); !bytes.Equal(got, want) {
		t.Error("a checkpointed run's model differs from a plain run's under the same seed")
	}
	if first["ledger_epsilon"] != plain["ledger_epsilon"] || first["checkpoint"] != ck || first["run"] == nil {
		t.Errorf("checkpointed run %v, plain run's ledger ε %v", first, plain["ledger_epsilon"])
	}
	// The finished run resumed: nothing charged, the same model and log.
	os.Remove(model)
	again, err := run("--ledger", led, "--checkpoint", ck, "--out", model, "--resume")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(model); !bytes.Equal(got, want) {
		t.Error("the resumed model differs")
	}
	if again["ledger_epsilon"] != first["ledger_epsilon"] || again["resumed_steps"] != first["steps"] || again["run"] != first["run"] {
		t.Errorf("resumed %v, first %v", again, first)
	}
	if a, b := again["epoch_log"].([]any), first["epoch_log"].([]any); len(a) != len(b) {
		t.Errorf("resumed epoch log %v, first %v", a, b)
	}

	sealed, _ := os.ReadFile(ck)
	for _, c := range []struct {
		name, want string
		args       []string
		ck         []byte
	}{
		{"resume without checkpoint", "--resume continues", []string{"--ledger", led, "--resume"}, nil},
		{"checkpoint without ledger", "needs --ledger", []string{"--checkpoint", ck}, nil},
		{"checkpoint exists", "pass --resume", []string{"--ledger", led, "--checkpoint", ck}, nil},
		{"other learning rate", "other settings", []string{"--ledger", led, "--checkpoint", ck, "--resume", "--lr", "0.4"}, nil},
		{"other seed", "other settings", []string{"--ledger", led, "--checkpoint", ck, "--resume", "--seed", "4"}, nil},
		{"tampered", "integrity", []string{"--ledger", led, "--checkpoint", ck, "--resume"},
			regexp.MustCompile(`"steps":\d+`).ReplaceAll(sealed, []byte(`"steps":0`))},
		{"no checkpoint to resume", "no such file", []string{"--ledger", led, "--checkpoint", ck + ".none", "--resume"}, nil},
		{"checkpoint is the input", "", []string{"--ledger", led, "--checkpoint", file}, nil},
		{"non-private", "--checkpoint does not apply", []string{"--non-private", "--checkpoint", ck}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.ck != nil {
				if bytes.Equal(c.ck, sealed) {
					t.Fatal("the edit changed nothing")
				}
				os.WriteFile(ck, c.ck, 0o600)
				defer os.WriteFile(ck, sealed, 0o600)
			}
			args := slices.Concat(base, c.args)
			if c.name == "non-private" { // which refuses --epsilon first
				args = slices.Concat(base[:5], c.args)
			}
			_, _, err := runCLI(t, "", args...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}
