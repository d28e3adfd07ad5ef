package figure

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot"
)

func TestSaveWritesPNGAndCSV(t *testing.T) {
	dir := t.TempDir()
	p := Plot{
		Title: "t", XLabel: "x", YLabel: "y",
		Series: []Series{{Name: "a", X: []float64{1, 2, 3}, Y: []float64{3, 2, 1},
			Lo: []float64{2, 1, 0}, Hi: []float64{4, 3, 2}, Points: true}},
		HLines: []HLine{{Name: "base", Y: 1.5}},
	}
	base := filepath.Join(dir, "sub", "fig")
	if err := p.Save(base); err != nil {
		t.Fatal(err)
	}
	png, err := os.ReadFile(base + ".png")
	if err != nil || len(png) < 8 || string(png[1:4]) != "PNG" {
		t.Fatalf("no PNG written: %v", err)
	}
	csv, err := os.ReadFile(base + ".csv")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(csv), "\n"); got != 5 {
		t.Fatalf("CSV has %d lines, want 5:\n%s", got, csv)
	}
}

func TestValidateRejectsRaggedSeries(t *testing.T) {
	tests := []Plot{
		{},
		{Series: []Series{{Name: "a", X: []float64{1}, Y: nil}}},
		{Series: []Series{{Name: "a", X: []float64{1}, Y: []float64{1}, Lo: []float64{1, 2}}}},
	}
	for i, p := range tests {
		if err := p.Validate(); err == nil {
			t.Errorf("case %d: no error", i)
		}
	}
}

func TestLogTicksLabelOneTwoFive(t *testing.T) {
	var labels []string
	for _, tk := range (logTicks{}).Ticks(0.1, 3) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if got := strings.Join(labels, " "); got != "0.1 0.2 0.5 1 2" {
		t.Fatalf("labels %q, want \"0.1 0.2 0.5 1 2\"", got)
	}
}

func TestLegendAvoidsTheData(t *testing.T) {
	// Points crowd the top right, so the legend should move elsewhere.
	p := Plot{Series: []Series{{Name: "a", X: []float64{0, 8, 9, 10}, Y: []float64{0, 9, 9.5, 10}}}}
	pl := plot.New()
	pl.X.Min, pl.X.Max, pl.Y.Min, pl.Y.Max = 0, 10, 0, 10
	if top, left := p.legendCorner(pl); top && !left {
		t.Fatal("legend left in the crowded top-right corner")
	}
}

func TestTickLabel(t *testing.T) {
	for v, want := range map[float64]string{0.1: "0.1", 20000: "20000", 5e6: "5e+06", 2e-4: "0.0002"} {
		if got := tickLabel(v); got != want {
			t.Errorf("tickLabel(%v) = %q, want %q", v, got, want)
		}
	}
}
