package plots

import (
	"fmt"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/stormsim/stormsim/metrics"
)

// Replicas plots each replicated service's replicas side by side: their
// utilization after warm-up, one bar per replica, one colour per service.
// A gray failure shows as one bar standing out (round robin keeps sending
// to the slow replica) or sinking (a balancer that sees it avoids it).
// Needs the summary's per-replica rows (services with replicas > 1).
func Replicas(r *metrics.Result) (*plot.Plot, error) {
	var svcs []metrics.ServiceSummary
	most := 0
	for _, s := range r.Summary.Services {
		if len(s.Replicas) > 1 {
			svcs = append(svcs, s)
			most = max(most, len(s.Replicas))
		}
	}
	if len(svcs) == 0 {
		return nil, ErrNoData
	}
	colors := NewColors(r)
	p := NewPlot("Utilization per replica", "replica", "utilization")
	width := vg.Points(min(40, 240/float64(len(svcs)*most)))
	top := 0.0
	for i, s := range svcs {
		vals := make(plotter.Values, len(s.Replicas))
		for j, rs := range s.Replicas {
			vals[j] = rs.Utilization
			top = max(top, rs.Utilization)
		}
		bars, err := plotter.NewBarChart(vals, width)
		if err != nil {
			return nil, fmt.Errorf("plots: replicas of %s: %w", s.Name, err)
		}
		bars.Color = colors.Of(s.Name)
		bars.LineStyle.Width = 0
		bars.Offset = width * vg.Length(float64(i)-float64(len(svcs)-1)/2)
		p.Add(bars)
		p.Legend.Add(s.Name, bars)
	}
	ticks := make([]plot.Tick, most)
	for j := range ticks {
		ticks[j] = plot.Tick{Value: float64(j), Label: fmt.Sprint(j)}
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.X.Min, p.X.Max = -0.6, float64(most)-0.4
	p.Y.Min = 0
	// Room above the bars for the legend (about 6.5% a row).
	p.Y.Max = max(top, 0.01) / (1 - min(0.6, 0.1+0.065*float64(len(svcs))))
	return p, nil
}

// ReplicaUtilization plots the utilization of each replica of every
// replicated service over time, with the fault windows: a replica that a
// gray failure slowed stands out while the fault lasts, or drops if the
// balancer steers around it. Needs replica_utilization/S#K columns.
func ReplicaUtilization(r *metrics.Result) (*plot.Plot, error) {
	ts, err := series(r)
	if err != nil {
		return nil, err
	}
	colors := NewColors(r)
	f := newFigure("Utilization per replica over time", "time (s)", "utilization")
	f.timeAxis(r)
	for _, e := range entities(r, metrics.MetricReplicaUtilization) {
		if err := f.line(timeXYs(ts, ts.Values(metrics.Column(metrics.MetricReplicaUtilization, e)), nil), e, colors.Of(e), vg.Points(2), false); err != nil {
			return nil, err
		}
	}
	if f.empty() {
		return nil, ErrNoData
	}
	f.headroom()
	return f.Plot, nil
}
