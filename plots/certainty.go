package plots

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/stormsim/stormsim/metrics"
)

// Colours of the convergence plots: unknown intents in the ink of an
// open question, the manual queue in the red of work left to a person.
var (
	unknownColor = color.NRGBA{0x4e, 0x79, 0xa7, 0xff}
	manualColor  = color.NRGBA{0xe1, 0x57, 0x59, 0xff}
)

// UnknownIntents plots the writes whose outcome is still unknown at each
// interval's end and, when recorded, the manual queue's length (dashed),
// with the fault windows shaded: how long a storm leaves orders "being
// confirmed", and what it leaves to a person. Needs the unknown_intents
// column (written when the scenario configures convergence).
func UnknownIntents(r *metrics.Result) (*plot.Plot, error) { return drawn(unknownIntentsFigure(r)) }

func unknownIntentsFigure(r *metrics.Result) (*figure, error) {
	ts, err := series(r)
	if err != nil {
		return nil, err
	}
	unknown := ts.Values(metrics.ColUnknownIntents)
	if unknown == nil {
		return nil, ErrNoData
	}
	f := newFigure("Intents unknown over time", "time (s)", "intents")
	f.timeAxis(r)
	if err := f.line(timeXYs(ts, unknown, nil), "unknown intents", unknownColor, vg.Points(2), false); err != nil {
		return nil, err
	}
	if mq := ts.Values(metrics.ColManualQueue); mq != nil {
		if err := f.line(timeXYs(ts, mq, nil), "manual queue", manualColor, vg.Points(2), true); err != nil {
			return nil, err
		}
	}
	f.headroom()
	return f, nil
}

// CertaintyCDF plots the cumulative distribution of the time to certainty
// of the writes that became certain (Result.Certainty) on a log time axis,
// with its p50 and p99 marked as vertical lines: a point (x, y) reads "a
// fraction y of the certain intents were certain within x ms of their
// first attempt". The steps show the schedule: a query interval or a
// reconciliation scan is a jump. Needs a non-empty Certainty histogram.
func CertaintyCDF(r *metrics.Result) (*plot.Plot, error) { return drawn(certaintyCDFFigure(r)) }

func certaintyCDFFigure(r *metrics.Result) (*figure, error) {
	if r == nil || r.Certainty == nil || r.Certainty.TotalCount() == 0 {
		return nil, ErrNoData
	}
	h := r.Certainty
	f := newFigure("Time to certainty (CDF)", "time to certainty (ms, log scale)", "cumulative fraction (≤ time)")
	if err := f.line(stepCDFXYs(h), fmt.Sprintf("%d certain intents", h.TotalCount()), color.Black, vg.Points(2.5), false); err != nil {
		return nil, err
	}
	// The quantiles the summary reports; the histogram's when the summary
	// has none (a result from another producer).
	l := metrics.LatencyOf(h)
	p50, p99 := l.P50, l.P99
	if c := r.Summary.Certainty; c != nil && c.Certain() > 0 {
		p50, p99 = c.P50Ms, c.P99Ms
	}
	for _, q := range []struct {
		name string
		ms   float64
		col  color.Color
	}{{"p50", p50, unknownColor}, {"p99", p99, manualColor}} {
		if q.ms <= 0 {
			continue
		}
		mark := plotter.XYs{{X: q.ms, Y: 0}, {X: q.ms, Y: 1}}
		if err := f.line(mark, fmt.Sprintf("%s %s ms", q.name, num(q.ms)), q.col, vg.Points(1.5), true); err != nil {
			return nil, err
		}
	}
	lo := max(float64(h.Min())/1000, 1e-3)
	hi := float64(h.Max()) / 1000
	f.X.Scale = plot.LogScale{}
	f.X.Tick.Marker = plot.LogTicks{Prec: -1}
	f.X.Min, f.X.Max = lo/1.5, math.Max(hi, lo*10)*1.5
	f.Y.Min, f.Y.Max = 0, 1
	f.Y.Tick.Marker = plot.ConstantTicks(fractionTicks())
	// The curve rises from the bottom left: the legend goes above it.
	f.Legend.Top, f.Legend.Left = true, true
	f.Legend.XOffs = vg.Points(10)
	return f, nil
}
