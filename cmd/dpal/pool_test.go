package main

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
)

var poolCIFAR = []string{"pool", "plan", "--epsilon", "8", "--epsilon-select", "2", "--delta", "1e-5",
	"--batch", "4096", "--epochs", "30", "--initial", "10000", "--queries", "10000,3000,1000,1000"}

func TestPoolPlanJSON(t *testing.T) {
	for _, mode := range []string{"naive", "step-amplification", "noise-reduction", "continual"} {
		for _, acc := range []string{"basic", "rdp"} {
			t.Run(mode+"/"+acc, func(t *testing.T) {
				out, _, err := runCLI(t, "", append(slices.Clone(poolCIFAR), "--mode", mode, "--accounting", acc, "--json")...)
				if err != nil {
					t.Fatal(err)
				}
				var got struct {
					Phases []struct {
						Steps           int     `json:"steps"`
						NoiseMultiplier float64 `json:"noise_multiplier"`
						Groups          []struct {
							Group      string  `json:"group"`
							Size       int     `json:"size"`
							SampleRate float64 `json:"sample_rate"`
						} `json:"groups"`
						ExpectedBatch float64 `json:"expected_batch"`
					} `json:"phases"`
					Groups []struct {
						Group            string  `json:"group"`
						Size             int     `json:"size"`
						EpsilonTraining  float64 `json:"epsilon_training"`
						EpsilonSelection float64 `json:"epsilon_selection"`
						EpsilonTotal     float64 `json:"epsilon_total"`
						EpsilonAddRemove float64 `json:"epsilon_add_remove"`
						EpsilonReplace   float64 `json:"epsilon_replace"`
					} `json:"groups"`
					Selection string `json:"selection"`
				}
				dec := json.NewDecoder(strings.NewReader(out))
				dec.DisallowUnknownFields()
				if err := dec.Decode(&got); err != nil {
					t.Fatalf("%v\n%s", err, out)
				}
				if len(got.Groups) != 5 || len(got.Phases) < 5 || got.Phases[0].Steps != 73 {
					t.Fatalf("unexpected plan %s", out)
				}
				for _, g := range got.Groups {
					if g.EpsilonTotal > 8*(1+1e-9) {
						t.Errorf("%s: ε %v", g.Group, g.EpsilonTotal)
					}
				}
				if mode == "step-amplification" && math.Abs(got.Groups[4].EpsilonTotal-8) > 1e-8 {
					t.Errorf("query-4 ends at %v, want 8", got.Groups[4].EpsilonTotal)
				}
				// Top-k training is charged under replace-one; the paper's
				// add/remove reading of the same plan is lower.
				for _, g := range got.Groups {
					if g.EpsilonReplace != g.EpsilonTotal || !(g.EpsilonAddRemove < g.EpsilonTotal) {
						t.Errorf("%s: charged %v, replace-one %v, add/remove %v", g.Group, g.EpsilonTotal, g.EpsilonReplace, g.EpsilonAddRemove)
					}
				}
			})
		}
	}
}

func TestPoolPlanTable(t *testing.T) {
	out, _, err := runCLI(t, "", poolCIFAR...)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"step-amplification plan", "q query-4", "query-4", "never selected: ε = 2.000000"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestPoolPlanErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"missing queries", []string{"pool", "plan", "--epsilon", "8", "--delta", "1e-5", "--batch", "10", "--epochs", "1", "--initial", "100"}, "--queries is required"},
		{"bad queries", append(slices.Clone(poolCIFAR), "--queries", "10,x"), `query 2: "x"`},
		{"zero query", append(slices.Clone(poolCIFAR), "--queries", "10,0"), "query 2"},
		{"bad mode", append(slices.Clone(poolCIFAR), "--mode", "fast"), "--mode"},
		{"bad accounting", append(slices.Clone(poolCIFAR), "--accounting", "pld"), "--accounting"},
		{"select too big", append(slices.Clone(poolCIFAR), "--epsilon-select", "9"), "epsilon-select"},
		{"batch above initial", append(slices.Clone(poolCIFAR), "--initial", "100"), "initial labelled set"},
		{"delta", append(slices.Clone(poolCIFAR), "--delta", "1"), "delta"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := runCLI(t, "", c.args...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

// FuzzParseQueries checks that --queries parsing never panics and returns
// only positive sizes, as many as the items given.
func FuzzParseQueries(f *testing.F) {
	for _, s := range []string{"10000,3000,1000,1000", "1", " 5 , 6", "", ",", "-1", "1e3", "99999999999999999999", "1,,2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		qs, err := parseQueries(s)
		if err != nil {
			return
		}
		if len(qs) != strings.Count(s, ",")+1 {
			t.Errorf("%q: %d sizes", s, len(qs))
		}
		for _, q := range qs {
			if q < 1 {
				t.Errorf("%q: size %d", s, q)
			}
		}
	})
}
