package plots

import (
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"github.com/stormsim/stormsim/metrics"
)

// Latency plots the end-to-end latency percentiles of the requests that
// succeeded in each interval (p50 and p99) on
// a log axis, since a storm moves the tail by orders of magnitude.
// Intervals without successes have no latency: the lines break there.
// Needs latency_p50_ms or latency_p99_ms.
func Latency(r *metrics.Result) (*plot.Plot, error) { return drawn(latencyFigure(r)) }

func latencyFigure(r *metrics.Result) (*figure, error) {
	ts, err := series(r)
	if err != nil {
		return nil, err
	}
	f := newFigure("End-to-end latency of succeeded requests", "time (s)", "latency (ms, log scale)")
	f.timeAxis(r)
	// The colours are the ones these lines have always had in stormsim's
	// plots, so old and new figures read alike.
	lines := []struct {
		col, name string
		colour    int
	}{
		{metrics.ColLatencyP50, "p50", 0},
		{metrics.ColLatencyP99, "p99", 2},
	}
	for _, l := range lines {
		v, err := columnValues(ts, l.col)
		if err != nil {
			continue
		}
		xys := timeXYs(ts, v, nil)
		if err := f.line(xys, l.name, palette[l.colour], vg.Points(2), false); err != nil {
			return nil, err
		}
	}
	if f.empty() {
		return nil, ErrNoData
	}
	logY(f)
	return f, nil
}

// logY puts the y axis on a log scale spanning the data, with a decade of
// headroom split above (for the legend) and below.
func logY(f *figure) {
	lo, hi := f.ymin, f.ymax
	if lo <= 0 || math.IsInf(lo, 0) {
		lo = 1e-3
	}
	if hi <= lo {
		hi = lo * 10
	}
	f.Y.Scale = plot.LogScale{}
	f.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	f.Y.Min = lo / 1.5
	f.Y.Max = hi * math.Pow(hi/lo, 0.1+0.08*float64(f.entries)) * 1.5
}
