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

// TestOverlayNoDataIsAGap: a variant that collapsed (nothing succeeded in
// an interval) has no latency there, not a latency of 0, and its goodput
// in the last interval is over the whole interval.
func TestOverlayNoDataIsAGap(t *testing.T) {
	ts := &metrics.TimeSeries{Interval: time.Second, Columns: []string{"succeeded", "goodput", "latency_p99_ms"},
		Rows: [][]float64{{4, 4, 20}, {0, 0, 0}, {2, 20, 30}}}
	p99, err := columnValues(ts, "latency_p99_ms")
	if err != nil {
		t.Fatal(err)
	}
	if p99[0] != 20 || !math.IsNaN(p99[1]) || p99[2] != 30 {
		t.Errorf("p99 = %v, want [20 NaN 30]", p99)
	}
	good, err := columnValues(ts, "goodput")
	if err != nil {
		t.Fatal(err)
	}
	if good[0] != 4 || good[1] != 0 || good[2] != 2 {
		t.Errorf("goodput = %v, want [4 0 2]", good)
	}
}
