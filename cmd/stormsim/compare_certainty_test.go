package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/metrics/metricstest"
)

// compare --out overlays the variants' intents unknown when every variant
// follows its writes after UNKNOWN, and not otherwise.
func TestCompareOverlaysUnknownIntents(t *testing.T) {
	for _, tc := range []struct {
		name    string
		results map[string]*metrics.Result
		want    bool
	}{
		{"converging", map[string]*metrics.Result{"baseline": metricstest.Converging(), "v": metricstest.Converging()}, true},
		{"one without", map[string]*metrics.Result{"baseline": metricstest.Converging(), "v": metricstest.Storm()}, false},
		{"none", map[string]*metrics.Result{"baseline": metricstest.Storm()}, false},
	} {
		files, err := writeOverlays(t.TempDir(), "s", tc.results, []string{"baseline", "v"})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var names []string
		for _, f := range files {
			names = append(names, filepath.Base(f))
		}
		if got := slices.Contains(names, "unknown_intents.png"); got != tc.want {
			t.Errorf("%s: unknown_intents overlay drawn = %v, want %v (%v)", tc.name, got, tc.want, names)
		}
	}
}

// stormsim plot redraws a saved converging result: the certainty plots
// come back from histograms.json and timeseries.csv, and the report has
// its certainty section.
func TestPlotRedrawsCertainty(t *testing.T) {
	dir := t.TempDir()
	if err := metrics.Save(dir, metricstest.Converging()); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runCLI(t, "plot", dir)
	if code != 0 {
		t.Fatalf("plot: exit %d: %s", code, stderr)
	}
	for _, f := range []string{"certainty_cdf.png", "certainty_cdf.svg", "unknown_intents.png", "report.html"} {
		if !strings.Contains(stdout, f) {
			t.Errorf("plot did not write %s:\n%s", f, stdout)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil || !strings.Contains(string(b), `<h2 id="certainty">Certainty</h2>`) {
		t.Errorf("report.html has no certainty section (err %v)", err)
	}
}
