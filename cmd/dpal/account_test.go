package main

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

// runAccount runs `dpal account …` and returns stdout and stderr together.
func runAccount(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, errOut, err := runCLI(t, "", append([]string{"account"}, args...)...)
	return out + errOut, err
}

func accountRel(got, want float64) float64 { return math.Abs(got-want) / math.Abs(want) }

func TestAccountEpsilonReference(t *testing.T) {
	for _, tc := range []struct {
		conv       string
		eps, order float64
	}{{"balle2020", 2.5965558690, 8.1}, {"classic", 3.0082720825, 8.8}} {
		out, err := runAccount(t, "epsilon", "--sample-rate", "0.004266666666666667", "--noise-multiplier", "1.1",
			"--steps", "14062", "--delta", "1e-5", "--conversion", tc.conv, "--json")
		if err != nil {
			t.Fatal(err)
		}
		var res map[string]any
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("%v in %q", err, out)
		}
		if accountRel(res["epsilon"].(float64), tc.eps) > 1e-9 || res["order"] != tc.order || res["delta"] != 1e-5 {
			t.Errorf("%s: %v", tc.conv, res)
		}
		if _, ok := res["edge_warning"]; ok || len(res) != 4 || res["accountant"] != "rdp" {
			t.Errorf("%s: unexpected keys in %v", tc.conv, res)
		}
	}
	out, err := runAccount(t, "epsilon", "--sample-rate", "0.004266666666666667", "--noise-multiplier", "1.1",
		"--steps", "14062", "--delta", "1e-5")
	if err != nil || !strings.HasPrefix(out, "ε = 2.5965558689") || !strings.Contains(out, "order 8.1") {
		t.Errorf("human output %q, %v", out, err)
	}
}

func TestAccountEpsilonScheduleAndOrders(t *testing.T) {
	// A schedule of one phase split in two equals the single phase.
	single, err := runAccount(t, "epsilon", "--sample-rate", "0.01", "--noise-multiplier", "1.2", "--steps", "300", "--delta", "1e-6", "--json")
	if err != nil {
		t.Fatal(err)
	}
	split, err := runAccount(t, "epsilon", "--schedule", "0.01:100, 0.01:1.2:200", "--noise-multiplier", "1.2", "--delta", "1e-6", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var a, b map[string]any
	_ = json.Unmarshal([]byte(single), &a)
	_ = json.Unmarshal([]byte(split), &b)
	if accountRel(a["epsilon"].(float64), b["epsilon"].(float64)) > 1e-12 || a["order"] != b["order"] {
		t.Errorf("single %v, split %v", a, b)
	}
	// Large noise puts the optimum at the largest default order; --orders
	// extends the list and the warning goes.
	out, err := runAccount(t, "epsilon", "--sample-rate", "0.2", "--noise-multiplier", "100", "--steps", "10", "--delta", "1e-5", "--json")
	if err != nil || !strings.Contains(out, `"edge_warning"`) {
		t.Errorf("edge case: %q, %v", out, err)
	}
	out, err = runAccount(t, "epsilon", "--sample-rate", "0.2", "--noise-multiplier", "100", "--steps", "10", "--delta", "1e-5",
		"--orders", "128, 256,512,1024,2048,4096,8192,16384,32768,65536,131072", "--json")
	var c map[string]any
	if err != nil || json.Unmarshal([]byte(out), &c) != nil || c["order"].(float64) <= 63 || c["edge_warning"] != nil {
		t.Errorf("extended orders: %q, %v", out, err)
	}
}

func TestAccountNoiseAndSampleRate(t *testing.T) {
	out, err := runAccount(t, "noise", "--epsilon", "8", "--delta", "1e-5", "--sample-rate", "0.01", "--steps", "1000", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var n map[string]float64
	if err := json.Unmarshal([]byte(accountNumbers(out)), &n); err != nil || len(n) != 4 || n["delta"] != 1e-5 || !(n["order"] > 1) {
		t.Fatalf("%q: %v", out, err)
	}
	if n["epsilon"] > 8 || n["epsilon"] < 8*(1-1e-6) || n["noise_multiplier"] < 0.5 || n["noise_multiplier"] > 0.7 {
		t.Errorf("noise: %v", n)
	}
	// Round trip: the calibrated σ gives back ε.
	out, err = runAccount(t, "epsilon", "--sample-rate", "0.01", "--steps", "1000", "--delta", "1e-5", "--json",
		"--noise-multiplier", accountFloat(n["noise_multiplier"]))
	var e map[string]float64
	if err != nil || json.Unmarshal([]byte(accountNumbers(out)), &e) != nil || e["epsilon"] != n["epsilon"] {
		t.Errorf("round trip: %q, %v (noise said %v)", out, err, n)
	}
	out, err = runAccount(t, "sample-rate", "--epsilon", "8", "--delta", "1e-5", "--noise-multiplier", "1", "--steps", "1000", "--json")
	var s map[string]float64
	if err != nil || json.Unmarshal([]byte(accountNumbers(out)), &s) != nil || len(s) != 4 || !(s["sample_rate"] > 0 && s["sample_rate"] < 1) ||
		!(s["epsilon"] <= 8 && s["epsilon"] > 7.99) || s["delta"] != 1e-5 || !(s["order"] > 1) {
		t.Errorf("sample-rate: %q, %v", out, err)
	}
	out, err = runAccount(t, "noise", "--epsilon", "2", "--delta", "1e-5", "--schedule", "0.01:500,0.04:100")
	if err != nil || !strings.HasPrefix(out, "noise multiplier σ = ") {
		t.Errorf("noise with schedule: %q, %v", out, err)
	}
	out, err = runAccount(t, "sample-rate", "--epsilon", "8", "--delta", "1e-5", "--noise-multiplier", "1", "--steps", "1000")
	if err != nil || !strings.HasPrefix(out, "sample rate q = ") {
		t.Errorf("sample-rate human: %q, %v", out, err)
	}
}

// accountNumbers drops the "accountant" key from a JSON object, leaving
// the numbers.
func accountNumbers(out string) string {
	var m map[string]any
	if json.Unmarshal([]byte(out), &m) != nil {
		return out
	}
	delete(m, "accountant")
	b, _ := json.Marshal(m)
	return string(b)
}

// TestAccountPLD: --accountant pld gives a certified ε below the RDP one
// and a lower bound ("epsilon_lower"); noise and sample-rate calibrate
// with it, and its σ gives back the target. The calibrations run on
// --pld-step 1e-3 (a tenth of the CPU: the default grid's search is
// TestCalibratePLD's in dp/account; here the flags and the output are
// tested).
func TestAccountPLD(t *testing.T) {
	ref := []string{"epsilon", "--sample-rate", "0.004266666666666667", "--noise-multiplier", "1.1", "--steps", "14062", "--delta", "1e-5", "--json"}
	out, err := runAccount(t, append(ref, "--accountant", "pld")...)
	var p map[string]any
	if err != nil || json.Unmarshal([]byte(out), &p) != nil {
		t.Fatalf("%q: %v", out, err)
	}
	up, lo := p["epsilon"].(float64), p["epsilon_lower"].(float64)
	if !(lo <= up && up < 2.5965558690 && lo > 2.3) || p["accountant"] != "pld" || p["delta"] != 1e-5 || p["step"] != 1e-4 {
		t.Errorf("pld: %v", p)
	}
	out, err = runAccount(t, "noise", "--epsilon", "8", "--delta", "1e-5", "--sample-rate", "0.01", "--steps", "1000", "--json", "--accountant", "pld", "--pld-step", "1e-3")
	var n map[string]float64
	if err != nil || json.Unmarshal([]byte(accountNumbers(out)), &n) != nil || !(n["epsilon"] <= 8 && n["epsilon"] > 7.99) ||
		!(n["epsilon_lower"] <= n["epsilon"]) || !(n["noise_multiplier"] > 0.55 && n["noise_multiplier"] < 0.6157) || n["step"] != 1e-3 {
		t.Fatalf("pld noise: %q, %v", out, err)
	}
	out, err = runAccount(t, "epsilon", "--sample-rate", "0.01", "--steps", "1000", "--delta", "1e-5", "--json", "--accountant", "pld",
		"--pld-step", "1e-3", "--noise-multiplier", accountFloat(n["noise_multiplier"]))
	var e map[string]float64
	if err != nil || json.Unmarshal([]byte(accountNumbers(out)), &e) != nil || e["epsilon"] != n["epsilon"] {
		t.Errorf("pld round trip: %q, %v (noise said %v)", out, err, n)
	}
	out, err = runAccount(t, "sample-rate", "--epsilon", "8", "--delta", "1e-5", "--noise-multiplier", "1", "--steps", "1000", "--accountant", "pld", "--pld-step", "1e-3")
	if err != nil || !strings.HasPrefix(out, "sample rate q = ") || !strings.Contains(out, "PLD accountant, grid step 0.001;") {
		t.Errorf("pld sample-rate: %q, %v", out, err)
	}
	out, err = runAccount(t, "epsilon", "--schedule", "0.01:100,0.02:2:50", "--noise-multiplier", "1", "--delta", "1e-5", "--accountant", "pld", "--pld-step", "1e-3")
	if err != nil || !strings.Contains(out, "the exact ε is at least") {
		t.Errorf("pld schedule: %q, %v", out, err)
	}
}

// TestAccountPLDChoosesStep (issue 24): where the default grid would be
// too long, --accountant pld computes on the finest coarser step that fits
// and says which (text and "step"); its bounds are ordered and below RDP's.
// An explicit --pld-step that does not fit is still an error, which names
// the step that would.
func TestAccountPLDChoosesStep(t *testing.T) {
	args := []string{"epsilon", "--sample-rate", "1", "--noise-multiplier", "0.003", "--steps", "1", "--delta", "1e-5"}
	out, err := runAccount(t, append(args, "--json")...)
	var rdp map[string]any
	if err != nil || json.Unmarshal([]byte(out), &rdp) != nil {
		t.Fatalf("rdp: %q, %v", out, err)
	}
	out, err = runAccount(t, append(args, "--json", "--accountant", "pld")...)
	var p map[string]any
	if err != nil || json.Unmarshal([]byte(out), &p) != nil {
		t.Fatalf("pld: %q, %v", out, err)
	}
	up, lo, step := p["epsilon"].(float64), p["epsilon_lower"].(float64), p["step"].(float64)
	if !(lo <= up && up <= rdp["epsilon"].(float64) && step == 0.029) {
		t.Errorf("pld %v against rdp %v", p, rdp)
	}
	out, err = runAccount(t, append(args, "--accountant", "pld")...)
	if err != nil || !strings.Contains(out, "(PLD accountant, grid step 0.029; the exact ε is at least ") {
		t.Errorf("pld text: %q, %v", out, err)
	}
	out, err = runAccount(t, append(args, "--accountant", "pld", "--pld-step", "1e-3")...)
	if err == nil || !strings.Contains(err.Error(), "would need 118777782 points at step 0.001 (limit 4194304)") || !strings.Contains(err.Error(), "--pld-step 0.029 fits") {
		t.Errorf("explicit step: %q, %v", out, err)
	}
}

// TestAccountEdgeCases (issue 17): a run that samples nothing has ε = 0
// with no advice about orders; a huge noise multiplier answers at once as
// 1e100 does; unknown subcommands fail.
func TestAccountEdgeCases(t *testing.T) {
	for _, args := range [][]string{
		{"--sample-rate", "0", "--steps", "100"},
		{"--sample-rate", "0.01", "--steps", "0"},
	} {
		for _, acc := range []string{"rdp", "pld"} {
			out, err := runAccount(t, append([]string{"epsilon", "--noise-multiplier", "1.1", "--delta", "1e-5", "--accountant", acc}, args...)...)
			if err != nil || !strings.HasPrefix(out, "ε = 0 for δ = 1e-05") || strings.Contains(out, "order") {
				t.Errorf("%s %v: %q, %v", acc, args, out, err)
			}
		}
	}
	ref, err := runAccount(t, "epsilon", "--noise-multiplier", "1e100", "--sample-rate", "0.01", "--steps", "100", "--delta", "1e-5", "--json")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	out, err := runAccount(t, "epsilon", "--noise-multiplier", "1e200", "--sample-rate", "0.01", "--steps", "100", "--delta", "1e-5", "--json")
	if err != nil || out != ref || time.Since(start) > 2*time.Second {
		t.Errorf("σ = 1e200: %q, %v in %v; σ = 1e100 gives %q", out, err, time.Since(start), ref)
	}
	for _, args := range [][]string{{"bogus"}, {"bogus", "--json"}, {"epsilon", "--accountant", "prv", "--sample-rate", "0.01", "--noise-multiplier", "1", "--steps", "10", "--delta", "1e-5"}} {
		if _, err := runAccount(t, args...); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: want a one-line error, got %v", args, err)
		}
	}
}

func TestAccountErrors(t *testing.T) {
	for _, args := range [][]string{
		{"epsilon", "--sample-rate", "0.01", "--noise-multiplier", "1", "--steps", "10"},
		{"epsilon", "--sample-rate", "0.01", "--noise-multiplier", "1", "--steps", "10", "--delta", "0"},
		{"epsilon", "--sample-rate", "0.01", "--noise-multiplier", "1", "--steps", "10", "--delta", "1"},
		{"epsilon", "--sample-rate", "2", "--noise-multiplier", "1", "--steps", "10", "--delta", "1e-5"},
		{"epsilon", "--sample-rate", "0.01", "--noise-multiplier", "0", "--steps", "10", "--delta", "1e-5"},
		{"epsilon", "--sample-rate", "0.01", "--noise-multiplier", "1", "--steps", "-1", "--delta", "1e-5"},
		{"epsilon", "--sample-rate", "0.01", "--steps", "10", "--delta", "1e-5"},
		{"epsilon", "--noise-multiplier", "1", "--steps", "10", "--delta", "1e-5"},
		{"epsilon", "--sample-rate", "0.01", "--noise-multiplier", "1", "--steps", "x", "--delta", "1e-5"},
		{"epsilon", "--sample-rate", "0.01", "--noise-multiplier", "1", "--steps", "10", "--delta", "1e-5", "--conversion", "rdp"},
		{"epsilon", "--sample-rate", "0.01", "--noise-multiplier", "1", "--steps", "10", "--delta", "1e-5", "--orders", "0.5"},
		{"epsilon", "--sample-rate", "0.01", "--noise-multiplier", "1", "--steps", "10", "--delta", "1e-5", "--orders", "2,x"},
		{"epsilon", "--schedule", "0.01:10", "--steps", "10", "--noise-multiplier", "1", "--delta", "1e-5"},
		{"epsilon", "--schedule", "0.01:10", "--delta", "1e-5"},
		{"epsilon", "--schedule", "0.01:1:10,bad", "--delta", "1e-5"},
		{"epsilon", "extra-arg", "--delta", "1e-5"},
		{"noise", "--delta", "1e-5", "--sample-rate", "0.01", "--steps", "1000"},
		{"noise", "--epsilon", "-1", "--delta", "1e-5", "--sample-rate", "0.01", "--steps", "1000"},
		{"noise", "--epsilon", "0.01", "--delta", "1e-9", "--sample-rate", "0.01", "--steps", "1000"},
		{"sample-rate", "--epsilon", "8", "--delta", "1e-5", "--steps", "1000"},
		{"sample-rate", "--epsilon", "8", "--delta", "1e-5", "--noise-multiplier", "1"},
	} {
		_, err := runAccount(t, args...)
		if err == nil {
			t.Errorf("%v: want an error", args)
			continue
		}
		if msg := err.Error(); msg == "" || strings.Contains(msg, "\n") {
			t.Errorf("%v: error should be one line, got %q", args, msg)
		}
	}
}

func FuzzAccountParseOrders(f *testing.F) {
	for _, s := range []string{"", "  ", "2,4.5,32", "1.5", "x", "2,,3", " 8 , 16 ", "1e308,inf"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		orders, err := accountParseOrders(s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "--orders: ") {
				t.Fatalf("accountParseOrders(%q): error without flag name: %v", s, err)
			}
			return
		}
		if strings.TrimSpace(s) == "" {
			if orders != nil {
				t.Fatalf("accountParseOrders(%q) = %v, want nil", s, orders)
			}
			return
		}
		if len(orders) != strings.Count(s, ",")+1 {
			t.Fatalf("accountParseOrders(%q) = %v: one value per field expected", s, orders)
		}
	})
}
