package plots

import (
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"github.com/stormsim/stormsim/metrics"
)

// Amplification plots, per service, the attempts that arrived in each
// interval divided by the logical requests offered in it: 1 means every
// request reached the service once; a retry storm shows as the curves
// climbing during a fault window. Intervals with nothing offered are
// skipped. Needs the offered and attempts/S columns.
func Amplification(r *metrics.Result) (*plot.Plot, error) { return drawn(amplificationFigure(r)) }

func amplificationFigure(r *metrics.Result) (*figure, error) {
	ts, err := series(r)
	if err != nil {
		return nil, err
	}
	offered := ts.Values(metrics.ColOffered)
	if offered == nil {
		return nil, ErrNoData
	}
	colors := NewColors(r)
	f := newFigure("Amplification per service", "time (s)", "attempts per offered request")
	f.timeAxis(r)
	for _, svc := range entities(r, "attempts") {
		att := ts.Values(metrics.Column(metrics.MetricAttempts, svc))
		amp := make([]float64, len(att))
		for i := range att {
			if offered[i] > 0 {
				amp[i] = att[i] / offered[i]
			}
		}
		xys := timeXYs(ts, amp, func(i int, _ float64) bool { return offered[i] > 0 })
		if err := f.line(xys, svc, colors.Of(svc), vg.Points(2), false); err != nil {
			return nil, err
		}
	}
	if f.empty() {
		return nil, ErrNoData
	}
	f.headroom()
	return f, nil
}

// entities returns the entities ("S" or "A->B") that have a metric/entity
// column, services in summary order first, then others in column order.
func entities(r *metrics.Result, metric string) []string {
	prefix := metric + "/"
	have := map[string]bool{}
	var cols []string
	for _, c := range r.Series.Columns {
		if e, ok := strings.CutPrefix(c, prefix); ok {
			have[e] = true
			cols = append(cols, e)
		}
	}
	var out []string
	for _, s := range r.Summary.Services {
		if have[s.Name] {
			out = append(out, s.Name)
			delete(have, s.Name)
		}
	}
	for _, e := range cols {
		if have[e] {
			out = append(out, e)
			delete(have, e)
		}
	}
	return out
}
