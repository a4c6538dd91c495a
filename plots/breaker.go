package plots

import (
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/stormsim/stormsim/metrics"
)

// Breaker plots each circuit breaker's state at the end of every interval
// (closed, open, half-open) as a step line per edge: when the breakers
// tripped and how long they stayed open. Needs breaker_state/A->B columns
// (0 closed, 1 open, 2 half-open).
func Breaker(r *metrics.Result) (*plot.Plot, error) { return drawn(breakerFigure(r)) }

func breakerFigure(r *metrics.Result) (*figure, error) {
	ts, err := series(r)
	if err != nil {
		return nil, err
	}
	edges := entities(r, "breaker_state")
	if len(edges) == 0 {
		return nil, ErrNoData
	}
	colors := NewColors(r)
	f := newFigure("Circuit breaker state", "time (s)", "state")
	f.timeAxis(r)
	// Offset each edge slightly so overlapping states stay visible.
	for k, e := range edges {
		v := ts.Values(metrics.Column(metrics.MetricBreakerState, e))
		off := 0.06 * float64(k)
		xys := make(plotter.XYs, len(v))
		for i, y := range v {
			xys[i] = plotter.XY{X: ts.Start.Seconds() + float64(i+1)*ts.Interval.Seconds(), Y: y + off}
		}
		if err := f.line(xys, e, colors.Of(e), vg.Points(2), false); err != nil {
			return nil, err
		}
		for _, l := range f.lastLine {
			l.StepStyle = plotter.PreStep // the state held through the interval
		}
	}
	f.Y.Min, f.Y.Max = -0.3, 2.3+0.25*float64(len(edges))
	f.Y.Tick.Marker = plot.ConstantTicks([]plot.Tick{{Value: 0, Label: "closed"}, {Value: 1, Label: "open"}, {Value: 2, Label: "half-open"}})
	return f, nil
}
