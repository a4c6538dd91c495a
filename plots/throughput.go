package plots

import (
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"github.com/stormsim/stormsim/metrics"
)

// Throughput plots offered load against goodput, both in requests per
// second, and the rate of requests that failed or ended unknown: the gap
// between the first two is the work a storm destroys. Needs the offered
// column; goodput, failed and unknown are drawn when present. Every rate is
// the interval's count over the interval's length, the last interval's too
// (the run ended inside it, and nothing happened after).
func Throughput(r *metrics.Result) (*plot.Plot, error) { return drawn(throughputFigure(r)) }

func throughputFigure(r *metrics.Result) (*figure, error) {
	ts, err := series(r)
	if err != nil {
		return nil, err
	}
	offered := ts.Values(metrics.ColOffered)
	if offered == nil {
		return nil, ErrNoData
	}
	perSec := 1 / ts.Interval.Seconds()
	rate := func(v []float64) []float64 {
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = x * perSec
		}
		return out
	}
	f := newFigure("Offered load vs goodput", "time (s)", "requests/s")
	f.timeAxis(r)
	if err := f.line(timeXYs(ts, rate(offered), nil), "offered", color.NRGBA{0x55, 0x55, 0x55, 0xff}, vg.Points(2), true); err != nil {
		return nil, err
	}
	if g, err := columnValues(ts, metrics.ColGoodput); err == nil {
		if err := f.line(timeXYs(ts, g, nil), "goodput", palette[4], vg.Points(2.5), false); err != nil {
			return nil, err
		}
	}
	failed, unknown := ts.Values(metrics.ColFailed), ts.Values(metrics.ColUnknown)
	if failed != nil || unknown != nil {
		bad := make([]float64, len(offered))
		for i := range bad {
			if failed != nil {
				bad[i] += failed[i]
			}
			if unknown != nil {
				bad[i] += unknown[i]
			}
		}
		if err := f.line(timeXYs(ts, rate(bad), nil), "failed + unknown", palette[2], vg.Points(1.5), false); err != nil {
			return nil, err
		}
	}
	f.headroom()
	return f, nil
}
