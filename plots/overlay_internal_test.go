package plots

import (
	"math"
	"testing"
	"time"

	"github.com/stormsim/stormsim/metrics"
)

// TestOverlayAmplificationSkipsIdleIntervals: an interval with nothing
// offered has no amplification; drawing it as 0 would show a false drop.
func TestOverlayAmplificationSkipsIdleIntervals(t *testing.T) {
	ts := &metrics.TimeSeries{Interval: time.Second, Columns: []string{"offered", "attempts/db"},
		Rows: [][]float64{{10, 30}, {10, 30}, {0, 5}}}
	ys, err := columnValues(ts, "amplification/db")
	if err != nil {
		t.Fatal(err)
	}
	if ys[0] != 3 || ys[1] != 3 || !math.IsNaN(ys[2]) {
		t.Fatalf("got %v, want [3 3 NaN]", ys)
	}
}
