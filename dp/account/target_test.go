package account

import (
	"strings"
	"testing"
	"time"
)

// TestCalibrationRefusesAbsurdTargets: a target ε above MaxTargetEpsilon
// is refused at once by the calibrations that search σ or q through the
// RDP or PLD accountant (CalibrateZCDP, a closed form, is fast at any ε:
// the non-private limits use it at 1e4 and more). ε = 1e308 used to bisect σ
// down to 1e-6 through subsampled-Gaussian series of millions of terms:
// half a minute and gigabytes before a puzzling "nothing is spent?".
func TestCalibrationRefusesAbsurdTargets(t *testing.T) {
	huge := Budget{Epsilon: 1e308, Delta: 1e-5}
	phases := []Phase{{SampleRate: 0.01, Steps: 100}}
	for name, calibrate := range map[string]func() error{
		"noise":            func() error { _, _, err := CalibrateNoise(huge, 0.01, 100, Options{}); return err },
		"noise schedule":   func() error { _, _, err := CalibrateNoiseSchedule(huge, phases, Options{}); return err },
		"sample rate":      func() error { _, _, err := CalibrateSampleRate(huge, 0.5, 100, Options{}); return err },
		"noise, PLD":       func() error { _, _, err := CalibrateNoisePLD(huge, phases, PLDOptions{}); return err },
		"sample rate, PLD": func() error { _, _, err := CalibrateSampleRatePLD(huge, 0.5, 100, PLDOptions{}); return err },
	} {
		t.Run(name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() { done <- calibrate() }()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), "above 50, the largest target") {
					t.Errorf("error %v, want the target refused", err)
				}
			case <-time.After(2 * time.Second):
				t.Fatal("no answer within 2 s")
			}
		})
	}
	// The largest target is calibrated, and fast (here σ ≈ 0.15).
	start := time.Now()
	if _, _, err := CalibrateNoise(Budget{Epsilon: MaxTargetEpsilon, Delta: 1e-5}, 0.3, 1, Options{}); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("ε = MaxTargetEpsilon took %v", d)
	}
}

// TestDefaultDelta: the default δ of a guarantee over n records is
// min(1e-5, 1/(10n)).
func TestDefaultDelta(t *testing.T) {
	for _, c := range []struct {
		n    int
		want float64
	}{{0, 1e-5}, {1, 1e-5}, {70, 1e-5}, {10000, 1e-5}, {20000, 5e-6}, {494021, 1 / 4940210.0}, {1e9, 1e-10}} {
		if got := DefaultDelta(c.n); got != c.want {
			t.Errorf("DefaultDelta(%d) = %v, want %v", c.n, got, c.want)
		}
	}
}
