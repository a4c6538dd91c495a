package plots

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot/plotter"

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

// TestOverlayIdenticalVariants (issue 36 item 5): a variant whose line is
// exactly another's is drawn dashed over it, and the legend names the
// variant it repeats, so neither hides the other.
func TestOverlayIdenticalVariants(t *testing.T) {
	mk := func(good ...float64) *metrics.Result {
		ts := &metrics.TimeSeries{Interval: time.Second, Columns: []string{"succeeded"}}
		for _, g := range good {
			ts.Rows = append(ts.Rows, []float64{g})
		}
		return &metrics.Result{Series: ts}
	}
	results := map[string]*metrics.Result{
		"baseline":         mk(10, 0, 5),
		"budget":           mk(10, 9, 9),
		"edge-only-jitter": mk(10, 0, 5),
		"other":            mk(10, 0, 6),
	}
	f, err := overlayFigure("goodput", results, "goodput", WithOrder("baseline", "budget", "edge-only-jitter", "other"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range f.lines {
		got = append(got, l.name)
	}
	want := []string{"baseline", "budget", "edge-only-jitter = baseline", "other"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("legend %q, want %q", got, want)
	}
}

func TestIdenticalTo(t *testing.T) {
	nan := math.NaN()
	xy := func(ys ...float64) plotter.XYs {
		out := make(plotter.XYs, len(ys))
		for i, y := range ys {
			out[i] = plotter.XY{X: float64(i), Y: y}
		}
		return out
	}
	for _, c := range []struct {
		name  string
		lines []plotter.XYs
		want  []int
	}{
		{"all different", []plotter.XYs{xy(1, 2), xy(1, 3), xy(2, 2)}, []int{-1, -1, -1}},
		{"gaps are equal", []plotter.XYs{xy(1, nan, 2), xy(1, nan, 2)}, []int{-1, 0}},
		{"a gap is not a value", []plotter.XYs{xy(1, nan, 2), xy(1, 0, 2)}, []int{-1, -1}},
		{"three of a kind point at the first", []plotter.XYs{xy(4), xy(5), xy(4), xy(4)}, []int{-1, -1, 0, 0}},
		{"a prefix is not identical", []plotter.XYs{xy(1, 2), xy(1, 2, 3)}, []int{-1, -1}},
	} {
		if got := identicalTo(c.lines); !slices.Equal(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}
