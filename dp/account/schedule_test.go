package account

import (
	"fmt"
	"strings"
	"testing"
)

func TestParseSchedule(t *testing.T) {
	got, err := ParseSchedule(" 0.01:1000, 0.05:2.5:200 ,1:3", 1.1)
	if err != nil {
		t.Fatal(err)
	}
	want := []Phase{{0.01, 1.1, 1000}, {0.05, 2.5, 200}, {1, 1.1, 3}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	for _, bad := range []string{"", "0.01", "0.01:", "x:10", "0.01:1.5", "0.01:1:2:3", "2:10", "-0.1:10", "0.1:-5",
		"0.1:0:10", "0.1:NaN:10", "0.1:10,", "NaN:10", "0.1:inf:10"} {
		if _, err := ParseSchedule(bad, 1); err == nil {
			t.Errorf("ParseSchedule(%q) should fail", bad)
		}
	}
	if _, err := ParseSchedule("0.1:10", 0); err == nil {
		t.Error("a phase without σ and no default should fail")
	}
}

func FuzzParseSchedule(f *testing.F) {
	for _, s := range []string{"0.01:1000", "0.01:1000,0.05:2:10", "1:0.5:1", ",,", "0.1:1e3:5", "::"} {
		f.Add(s, 1.0)
	}
	f.Fuzz(func(t *testing.T, s string, sigma float64) {
		phases, err := ParseSchedule(s, sigma)
		if err != nil {
			return
		}
		var parts []string
		for _, p := range phases {
			if err := p.Validate(); err != nil {
				t.Fatalf("ParseSchedule(%q) accepted an invalid phase %+v: %v", s, p, err)
			}
			parts = append(parts, fmt.Sprintf("%v:%v:%d", p.SampleRate, p.NoiseMultiplier, p.Steps))
		}
		again, err := ParseSchedule(strings.Join(parts, ","), 0)
		if err != nil || fmt.Sprint(again) != fmt.Sprint(phases) {
			t.Fatalf("round trip of %q: %v, %v", s, again, err)
		}
	})
}
