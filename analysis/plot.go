package analysis

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
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
	p := plot.New()
	if len(aggs) == 0 {
		return nil, fmt.Errorf("sweep plot: no data")
	}
	p.Title.Text = fmt.Sprintf("%s vs %s", measure, aggs[0].Param)
	p.X.Label.Text = aggs[0].Param
	if !numeric {
		p.X.Label.Text += " (point index)"
	}
	p.Y.Label.Text = measure
	p.Legend.Top = true
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
	p := plot.New()
	p.Title.Text = "hysteresis: goodput vs offered load, ramp up then down"
	p.X.Label.Text = "offered load (req/s)"
	p.Y.Label.Text = "goodput (req/s)"
	p.Legend.Top = true
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

// headroom raises the top of the y axis so the legend does not cover data.
// entries is the number of legend lines.
func headroom(p *plot.Plot, entries int) {
	p.Y.Max += 0.05 * float64(entries+1) * (p.Y.Max - p.Y.Min)
}
