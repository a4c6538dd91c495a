package plots

import (
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"github.com/stormsim/stormsim/metrics"
)

// Queue plots each service's queue length over time: the time-weighted
// mean in each interval as a solid line and, when recorded, the interval's
// peak as a thin dashed line of the same colour. A queue that keeps growing
// after its fault ended is the signature of a metastable failure. Needs
// queue/S columns.
func Queue(r *metrics.Result) (*plot.Plot, error) { return drawn(queueFigure(r)) }

func queueFigure(r *metrics.Result) (*figure, error) {
	ts, err := series(r)
	if err != nil {
		return nil, err
	}
	colors := NewColors(r)
	f := newFigure("Queue length per service", "time (s)", "queued requests")
	f.timeAxis(r)
	for _, svc := range entities(r, "queue") {
		col := colors.Of(svc)
		if err := f.line(timeXYs(ts, ts.Values(metrics.Column(metrics.MetricQueue, svc)), nil), svc+" mean", col, vg.Points(2), false); err != nil {
			return nil, err
		}
		if mx := ts.Values(metrics.Column(metrics.MetricQueueMax, svc)); mx != nil {
			if err := f.line(timeXYs(ts, mx, nil), svc+" max", col, vg.Points(1), true); err != nil {
				return nil, err
			}
		}
	}
	if f.empty() {
		return nil, ErrNoData
	}
	f.headroom()
	return f, nil
}
