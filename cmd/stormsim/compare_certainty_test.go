package main

import (
	"path/filepath"
	"slices"
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
