package analysis

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/stormsim/stormsim/plots"
)

// NumericValues maps parameter values to x coordinates: the numbers
// themselves, durations in seconds, or — when any value is neither — the
// point indices 0, 1, 2, … (the second result is then false).
func NumericValues(values []string) ([]float64, bool) {
	xs := make([]float64, len(values))
	for i, v := range values {
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			xs[i] = f
		} else if d, err := time.ParseDuration(v); err == nil {
			xs[i] = d.Seconds()
		} else {
			for j := range xs {
				xs[j] = float64(j)
			}
			return xs, false
		}
	}
	return xs, true
}

// ciXY is a line with asymmetric Y error bars, for plotter.NewYErrorBars.
type ciXY struct {
	plotter.XYs
	lo, hi []float64
}

func (c ciXY) YError(i int) (float64, float64) { return c.lo[i], c.hi[i] }

// segments splits c at its NaN means into the runs drawn as lines.
func (c ciXY) segments() []ciXY {
	var out []ciXY
	start := -1
	for i := 0; i <= len(c.XYs); i++ {
		if i < len(c.XYs) && !math.IsNaN(c.XYs[i].Y) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			out = append(out, ciXY{c.XYs[start:i], c.lo[start:i], c.hi[start:i]})
			start = -1
		}
	}
	return out
}

// SweepPlot draws one measure of a sweep against the parameter: one line
// per variant through the means, with 95 % confidence bars when there
// were replicas. A point without data (no replica had the measure: the
// latency where nothing succeeded) is a gap in its line, never a 0.
func SweepPlot(aggs []Aggregate, measure string, values []string) (*plot.Plot, error) {
	xs, numeric := NumericValues(values)
	if len(aggs) == 0 {
		return nil, fmt.Errorf("sweep plot: no data")
	}
	xLabel := ParamLabel(aggs[0].Param, values)
	if !numeric {
		xLabel += " (point index)"
	}
	yLabel := MeasureLabel(measure)
	p := plots.NewPlot(yLabel+" against "+aggs[0].Param, xLabel, yLabel)
	var order []string
	lines := map[string]*ciXY{}
	for _, a := range aggs {
		st, ok := a.Stat(measure)
		if !ok {
			return nil, fmt.Errorf("sweep plot: no measure %q", measure)
		}
		l, ok := lines[a.VariantName]
		if !ok {
			l = &ciXY{}
			lines[a.VariantName] = l
			order = append(order, a.VariantName)
		}
		l.XYs = append(l.XYs, plotter.XY{X: xs[a.Point], Y: st.Mean})
		lo, hi := st.Mean-st.Lo, st.Hi-st.Mean
		if math.IsNaN(lo) {
			lo, hi = 0, 0
		}
		l.lo, l.hi = append(l.lo, lo), append(l.hi, hi)
	}
	for i, name := range order {
		first := true
		for _, seg := range lines[name].segments() {
			line, points, err := plotter.NewLinePoints(seg.XYs)
			if err != nil {
				return nil, fmt.Errorf("sweep plot: %s: %w", name, err)
			}
			line.Color, points.Color = plotutil.Color(i), plotutil.Color(i)
			line.Width = vg.Points(1 + float64(len(order)-1-i))
			points.Shape = plotutil.Shape(i)
			bars, err := plotter.NewYErrorBars(seg)
			if err != nil {
				return nil, fmt.Errorf("sweep plot: %s: %w", name, err)
			}
			bars.Color = plotutil.Color(i)
			p.Add(line, points, bars)
			if first {
				p.Legend.Add(name, line, points)
				first = false
			}
		}
	}
	headroom(p, len(order))
	return p, nil
}

// HysteresisPlot draws goodput against offered load for each variant's
// ramp: a solid line going up, a dashed line coming down.
func HysteresisPlot(hs []Hysteresis) (*plot.Plot, error) {
	p := plots.NewPlot("hysteresis: goodput against offered load, ramp up then down", "offered load (req/s)", "goodput (req/s)")
	p.Legend.Left = true
	for i, h := range hs {
		for k, path := range [][]HysteresisPoint{h.Up, h.Down} {
			xys := make(plotter.XYs, len(path))
			for j, pt := range path {
				xys[j] = plotter.XY{X: pt.Offered, Y: pt.Goodput}
			}
			line, points, err := plotter.NewLinePoints(xys)
			if err != nil {
				return nil, fmt.Errorf("hysteresis plot: %s: %w", h.VariantName, err)
			}
			line.Color, points.Color = plotutil.Color(i), plotutil.Color(i)
			// Earlier variants are drawn wider, so identical paths (common
			// random numbers make them common below the storm) stay visible.
			line.Width = vg.Points(1 + float64(len(hs)-1-i))
			points.Shape = plotutil.Shape(k)
			dir := "up"
			if k == 1 {
				dir = "down"
				line.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
			}
			p.Add(line, points)
			p.Legend.Add(h.VariantName+" "+dir, line, points)
		}
	}
	headroom(p, 2*len(hs))
	return p, nil
}

// headroom raises the top of the y axis so the legend does not cover data:
// each of its entries lines takes about 6.5 % of the height, as in the run
// plots.
func headroom(p *plot.Plot, entries int) {
	frac := min(0.6, 0.1+0.065*float64(entries))
	if p.Y.Max <= p.Y.Min {
		p.Y.Max = p.Y.Min + 1
	}
	p.Y.Max = p.Y.Min + (p.Y.Max-p.Y.Min)/(1-frac)
}

// measureLabels are the sweep measures as axis labels, with units.
var measureLabels = map[string]string{
	"offered":       "offered requests",
	"succeeded":     "succeeded requests",
	"failed":        "failed requests",
	"unknown":       "unknown requests",
	"goodput_rps":   "goodput (req/s)",
	"p50_ms":        "p50 latency of succeeded requests (ms)",
	"p99_ms":        "p99 latency of succeeded requests (ms)",
	"amplification": "amplification (attempts per request, busiest service)",
	"duplicates":    "duplicate executions",
	"peak_queue":    "peak queue length (requests)",
}

// MeasureLabel returns a sweep measure's axis label with its unit.
func MeasureLabel(measure string) string {
	if l, ok := measureLabels[measure]; ok {
		return l
	}
	return measure
}

// ParamLabel returns a swept parameter's axis label: its path and, when
// the values say it, the unit the x coordinates are in (durations are
// drawn in seconds; a rate in requests per second).
func ParamLabel(param string, values []string) string {
	if _, numeric := NumericValues(values); !numeric {
		return param
	}
	for _, v := range values {
		if _, err := strconv.ParseFloat(v, 64); err != nil {
			return param + " (s)" // durations, drawn in seconds
		}
	}
	switch {
	case strings.HasSuffix(param, "rate") && !strings.HasSuffix(param, "error_rate"):
		return param + " (req/s)"
	case strings.HasSuffix(param, "workers"):
		return param + " (workers)"
	}
	return param
}
