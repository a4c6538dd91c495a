package tune

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/stormsim/stormsim/plots"
)

// PlotTail draws a hop's latency distribution as its tail, 1 − CDF, on
// log-log axes, where p99 and p99.9 are as visible as the median. It marks
// the recommended timeout and hedge delay and overlays the predicted tail
// with one hedge. It writes a PNG to w.
func PlotTail(w io.Writer, h *HopPlan, opt Options) error {
	s := h.samples
	if s.Len() == 0 {
		return fmt.Errorf("plot %s: no samples", h.Name)
	}
	p := plots.NewPlot(fmt.Sprintf("%s: latency CDF as its tail, 1 − CDF (n = %d)", h.Name, s.Len()), "latency (ms, log scale)", "P(latency > x), log scale")
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = false, true // bottom left: the tail curves leave it empty
	p.Legend.XOffs, p.Legend.YOffs = 0, 0

	measured, hedged := tailPoints(s, h.HedgeDelay)
	ymin := 1 / float64(s.Len())
	type series struct {
		label string
		xy    plotter.XYs
		color color.Color
		dash  []vg.Length
		width vg.Length
	}
	all := []series{
		{"measured", measured, color.RGBA{R: 31, G: 119, B: 180, A: 255}, nil, 2},
		{fmt.Sprintf("hedged after %v (predicted p99 %v)", round(h.HedgeDelay), round(h.HedgedP99)), hedged,
			color.RGBA{R: 44, G: 160, B: 44, A: 255}, []vg.Length{vg.Points(6), vg.Points(3)}, 1.5},
		{timeoutLabel(h, opt),
			vline(h.Timeout, ymin), color.RGBA{R: 214, G: 39, B: 40, A: 255}, nil, 1.5},
		{fmt.Sprintf("hedge delay %v (%s; +%.1f%% load)", round(h.HedgeDelay), PercentileName(opt.HedgePercentile), 100*h.HedgeLoad),
			vline(h.HedgeDelay, ymin), color.RGBA{R: 255, G: 127, B: 14, A: 255}, []vg.Length{vg.Points(2), vg.Points(2)}, 1.5},
	}
	if m := h.Modes; m != nil {
		for k, name := range []string{"fast", "slow"} {
			c := m.Components[k]
			all = append(all, series{
				fmt.Sprintf("%s mode (%.0f%%) %s %v", name, 100*c.Weight, PercentileName(opt.Percentile), round(c.Quantile(opt.Percentile))),
				vline(c.Quantile(opt.Percentile), ymin), color.Gray{Y: uint8(80 + 60*k)}, []vg.Length{vg.Points(4), vg.Points(2)}, 1,
			})
		}
	}
	for _, sr := range all {
		if len(sr.xy) < 2 {
			continue
		}
		l, err := plotter.NewLine(sr.xy)
		if err != nil {
			return fmt.Errorf("plot %s: %w", h.Name, err)
		}
		l.LineStyle = draw.LineStyle{Color: sr.color, Width: vg.Points(float64(sr.width)), Dashes: sr.dash}
		p.Add(l)
		p.Legend.Add(sr.label, l)
	}
	p.Y.Min, p.Y.Max = ymin, 1
	var drawn []plotter.XYs
	for _, sr := range all {
		drawn = append(drawn, sr.xy)
	}
	p.X.Min, p.X.Max = logPadded(drawn...)
	wt, err := p.WriterTo(8*vg.Inch, 5*vg.Inch, "png")
	if err != nil {
		return fmt.Errorf("plot %s: %w", h.Name, err)
	}
	_, err = wt.WriteTo(w)
	return err
}

// tailPoints returns (x ms, P(X > x)) for the measured and the hedged
// tail, thinned to geometrically spaced tail counts so a million samples
// draw as a few hundred points.
func tailPoints(s Samples, d time.Duration) (measured, hedged plotter.XYs) {
	n := s.Len()
	sorted := s.Sorted()
	last := -1
	for c := float64(n - 1); c >= 1; c *= 0.98 {
		ci := int(c)
		if ci == last {
			continue
		}
		last = ci
		x := sorted[n-1-ci]
		xm := math.Max(float64(x)/float64(time.Millisecond), 1e-3)
		if y := s.Above(x); y > 0 {
			measured = append(measured, plotter.XY{X: xm, Y: y})
		}
		y := s.Above(x)
		if x >= d {
			y *= s.Above(x - d)
		}
		if y > 0 {
			hedged = append(hedged, plotter.XY{X: xm, Y: y})
		}
	}
	return measured, hedged
}

// logPad is the room logPadded leaves on a log axis beyond the extreme
// values, as a factor: a recommended timeout is often the largest value
// drawn, and on the border it reads as the axis' edge, not as a mark.
const logPad = 1.5

// logPadded returns a log x axis range holding every point of xys, with a
// factor logPad of room on each side.
func logPadded(xys ...plotter.XYs) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, l := range xys {
		for _, xy := range l {
			lo, hi = math.Min(lo, xy.X), math.Max(hi, xy.X)
		}
	}
	if math.IsInf(lo, 0) {
		return 1e-3, 1
	}
	return lo / logPad, hi * logPad
}

func vline(t time.Duration, ymin float64) plotter.XYs {
	x := math.Max(float64(t)/float64(time.Millisecond), 1e-3)
	return plotter.XYs{{X: x, Y: ymin}, {X: x, Y: 1}}
}

func timeoutLabel(h *HopPlan, opt Options) string {
	if h.Timeout != h.Quantile {
		return fmt.Sprintf("timeout %v (%s %v, raised to wait for retries below; spurious %.2f%%)",
			round(h.Timeout), PercentileName(opt.Percentile), round(h.Quantile), 100*h.Spurious)
	}
	return fmt.Sprintf("timeout %v (%s; spurious %.2f%%)", round(h.Timeout), PercentileName(opt.Percentile), 100*h.Spurious)
}
