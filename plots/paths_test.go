package plots_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/metrics/metricstest"
	"github.com/stormsim/stormsim/plots"
)

// TestPlotNamesStayInTheirDirectory: a plot named after a service that
// climbs out of the directory is written inside it, escaped.
func TestPlotNamesStayInTheirDirectory(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "a", "out")
	name := "queue_../../PWNED"
	files, err := plots.Overlay(dir, name, map[string]*metrics.Result{"v": metricstest.Storm()}, "goodput")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if filepath.Dir(f) != dir {
			t.Errorf("wrote %s, outside %s", f, dir)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, metrics.PathComponent(name)+".png")); err != nil {
		t.Error(err)
	}
	entries, err := os.ReadDir(filepath.Join(root))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("%s holds %d entries, want only a/", root, len(entries))
	}
}
