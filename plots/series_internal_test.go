package plots

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stormsim/stormsim/internal/golden"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/metrics/metricstest"
)

// figures are the standard plotters as the figures they build, so a test
// can read the series each one draws.
var figures = []struct {
	name string
	fig  func(*metrics.Result) (*figure, error)
}{
	{"amplification", amplificationFigure},
	{"queue", queueFigure},
	{"throughput", throughputFigure},
	{"latency", latencyFigure},
	{"latency_cdf", latencyCDFFigure},
	{"breaker", breakerFigure},
	{"budget", budgetFigure},
}

// lull is a run whose interval 2 has nothing offered and nothing succeeded
// (a lull in the arrivals, or a collapse), and whose last interval is the
// 0.2 s left when the last request finished: the series a simulator writes
// for it, goodput computed over that short last interval (10 successes in
// 0.2 s, 50 req/s).
func lull() *metrics.Result {
	cols := []string{"offered", "succeeded", "failed", "unknown", "goodput", "latency_p50_ms", "latency_p99_ms", "attempts/db"}
	return &metrics.Result{
		Summary: metrics.Summary{Services: []metrics.ServiceSummary{{Name: "db"}}},
		Series: &metrics.TimeSeries{Interval: time.Second, Columns: cols, Rows: [][]float64{
			{10, 10, 0, 0, 10, 5, 9, 12},
			{10, 8, 1, 1, 8, 6, 12, 20},
			{0, 0, 0, 0, 0, 0, 0, 3},
			{10, 9, 0, 1, 9, 5, 8, 11},
			{0, 10, 0, 0, 50, 7, 11, 0},
		}},
	}
}

// TestPlottedSeries checks the points every standard plotter draws, for a
// storm and for a run with a lull, against golden dumps of the series.
func TestPlottedSeries(t *testing.T) {
	inputs := []struct {
		name string
		r    *metrics.Result
	}{{"storm", metricstest.Storm()}, {"lull", lull()}}
	for _, in := range inputs {
		for _, p := range figures {
			t.Run(in.name+"/"+p.name, func(t *testing.T) {
				f, err := p.fig(in.r)
				got := ""
				switch {
				case err == ErrNoData:
					got = "no data\n"
				case err != nil:
					t.Fatal(err)
				default:
					got = dumpLines(f.lines)
				}
				golden.Check(t, filepath.Join("testdata", "series", in.name+"_"+p.name+".txt"), []byte(got))
			})
		}
	}
}

// TestPlotsGapWhereNoData: an interval without a success has no latency
// and an interval with nothing offered no amplification, so their lines
// break there instead of joining the neighbours (which reads as a trend);
// and the last, short interval is not extrapolated into a spike.
func TestPlotsGapWhereNoData(t *testing.T) {
	r := lull()
	lat, err := latencyFigure(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lat.lines {
		if y := l.xys[2].Y; !math.IsNaN(y) {
			t.Errorf("latency %s at interval 2 (no success) = %v, want a gap", l.name, y)
		}
		if segs := segments(l.xys); len(segs) != 2 {
			t.Errorf("latency %s: %d segments, want 2 (a gap at interval 2)", l.name, len(segs))
		}
	}
	amp, err := amplificationFigure(r)
	if err != nil {
		t.Fatal(err)
	}
	if y := amp.lines[0].xys[2].Y; !math.IsNaN(y) {
		t.Errorf("amplification at interval 2 (nothing offered) = %v, want a gap", y)
	}
	thr, err := throughputFigure(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range thr.lines {
		if l.name != "goodput" {
			continue
		}
		// 10 successes in the last interval: 10 req/s over the interval
		// the row stands for, not 50 over the 0.2 s the run lasted in it.
		if y := l.xys[4].Y; y != 10 {
			t.Errorf("goodput in the last interval = %v req/s, want 10", y)
		}
	}
}

// dumpLines writes each line as its name then its points, one per line,
// "gap" where the line breaks.
func dumpLines(lines []drawnLine) string {
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, "%s\n", l.name)
		// A CDF has a point per histogram bucket: every step-th is enough
		// to pin its shape, and the last pins its end.
		step := max(1, len(l.xys)/100)
		if step > 1 {
			fmt.Fprintf(&b, "  (%d points, every %dth and the last shown)\n", len(l.xys), step)
		}
		for i, xy := range l.xys {
			if i%step != 0 && i != len(l.xys)-1 {
				continue
			}
			if math.IsNaN(xy.Y) {
				fmt.Fprintf(&b, "  %.4g gap\n", xy.X)
				continue
			}
			fmt.Fprintf(&b, "  %.4g %.6g\n", xy.X, xy.Y)
		}
	}
	return b.String()
}
