package main

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func TestDemoJSONComposesTheLedger(t *testing.T) {
	out, _, err := runCLI(t, "", "demo", "--seed", "3", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var got demoOutput
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("output is not one JSON object: %v\n%s", err, out)
	}
	if math.Abs(got.DPSGD.Epsilon-2) > 1e-8 {
		t.Errorf("calibrated DP-SGD ε = %v, want 2", got.DPSGD.Epsilon)
	}
	// Sequential composition: 2 (DP-SGD) + 0.5 (Laplace) + 0.5 (RR).
	if math.Abs(got.SpentEpsilon-3) > 1e-8 {
		t.Errorf("ledger ε = %v, want 3", got.SpentEpsilon)
	}
	if got.Seed == nil || *got.Seed != 3 {
		t.Errorf("seed not recorded: %v", got.Seed)
	}
}

func TestDemoRefusesPastTheBudget(t *testing.T) {
	_, _, err := runCLI(t, "", "demo", "--budget-epsilon", "2.5")
	if err == nil || !strings.Contains(err.Error(), "budget") {
		t.Fatalf("err = %v, want a budget error", err)
	}
}

func TestDemoRejectsBadArguments(t *testing.T) {
	for _, args := range [][]string{
		{"demo", "--epsilon", "0"},
		{"demo", "--epsilon-count", "-1"},
		{"demo", "--batch", "0"},
		{"demo", "--delta", "1"},
	} {
		if _, _, err := runCLI(t, "", args...); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}
