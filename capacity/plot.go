package capacity

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/stormsim/stormsim/metrics"

	"github.com/stormsim/stormsim/analysis"
	"github.com/stormsim/stormsim/plots"
)

// Plot names, as written by WritePlots (with .png).
const (
	PlotSLO         = "capacity-slo"
	PlotUtilization = "capacity-utilization"
	PlotRecovery    = "capacity-recovery"
)

// ErrNoRecovery is returned by RecoveryPlot for a search without faults.
var ErrNoRecovery = errors.New("capacity: no recovery runs to plot (the scenario has no faults)")

var (
	thresholdColor = color.NRGBA{0xd6, 0x27, 0x28, 0xff}
	boundaryColor  = color.NRGBA{0x2c, 0xa0, 0x2c, 0xff}
	faultFill      = color.NRGBA{0xd6, 0x27, 0x28, 0x26}
	dataColor      = color.NRGBA{0x1f, 0x77, 0xb4, 0xff}
)

// zoom sets the y axis around the threshold, so that the crossing is
// visible even when the load beyond capacity sends the metric far off:
// up to three times an upper threshold, or three times the gap between a
// lower threshold and the best value. Points beyond are drawn at the edge
// they lie past, as hollow triangles labelled with their value (clipped),
// so that no measured point silently leaves the figure.
func zoom(p *plot.Plot, xys plotter.XYs, threshold float64, upper bool, format func(float64) string) error {
	setZoom(p, xys, threshold, upper)
	return markClipped(p, xys, format)
}

func setZoom(p *plot.Plot, xys plotter.XYs, threshold float64, upper bool) {
	if len(xys) == 0 {
		return
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, xy := range xys {
		lo, hi = math.Min(lo, xy.Y), math.Max(hi, xy.Y)
	}
	if upper {
		p.Y.Min = 0
		top := math.Max(threshold, math.Min(hi, 3*threshold))
		if top <= 0 {
			top = 1
		}
		p.Y.Max = top * 1.35 // room for the legend
		return
	}
	gap := math.Max(hi-threshold, math.Abs(threshold)*0.01)
	p.Y.Min = math.Max(math.Min(lo, threshold-gap), threshold-3*gap)
	p.Y.Min = math.Max(p.Y.Min, 0)
	p.Y.Max = hi + gap
}

// clipped returns the points outside the y axis range moved to the edge
// they lie past, with labels giving their values.
func clipped(p *plot.Plot, xys plotter.XYs, format func(float64) string) plotter.XYLabels {
	var out plotter.XYLabels
	for _, xy := range xys {
		y := xy.Y
		switch {
		case y > p.Y.Max:
			y = p.Y.Max
		case y < p.Y.Min:
			y = p.Y.Min
		default:
			continue
		}
		out.XYs = append(out.XYs, plotter.XY{X: xy.X, Y: y})
		out.Labels = append(out.Labels, format(xy.Y)+" (clipped)")
	}
	return out
}

// markClipped adds an edge marker and a value label for every point that
// lies outside the y axis range, and one legend entry for them.
func markClipped(p *plot.Plot, xys plotter.XYs, format func(float64) string) error {
	c := clipped(p, xys, format)
	if len(c.XYs) == 0 {
		return nil
	}
	sc, err := plotter.NewScatter(c.XYs)
	if err != nil {
		return fmt.Errorf("capacity: clipped points: %w", err)
	}
	sc.GlyphStyle = draw.GlyphStyle{Color: dataColor, Radius: vg.Points(4), Shape: draw.TriangleGlyph{}}
	lb, err := plotter.NewLabels(c)
	if err != nil {
		return fmt.Errorf("capacity: clipped points: %w", err)
	}
	for i := range lb.TextStyle {
		lb.TextStyle[i].Color = dataColor
		lb.TextStyle[i].Font = font.From(p.X.Tick.Label.Font, vg.Points(10))
		lb.TextStyle[i].Handler = p.X.Tick.Label.Handler
		// Left of the marker, so a point at the right end stays readable.
		lb.TextStyle[i].XAlign = draw.XRight
		lb.TextStyle[i].YAlign = draw.YBottom
		if c.XYs[i].Y == p.Y.Max {
			lb.TextStyle[i].YAlign = draw.YTop
		}
	}
	p.Add(sc, lb)
	p.Legend.Add(clippedLegend, sc)
	return nil
}

// clippedLegend is the legend entry of the points drawn at the axis edge.
const clippedLegend = "beyond the axis (drawn at its edge)"

// clippedLabelBox is where markClipped writes a clipped point's label: left
// of the marker, below the top edge or above the bottom one, in fractions
// of the data area.
func clippedLabelBox(p *plot.Plot, xy plotter.XY, label string) box {
	sty := draw.TextStyle{Font: font.From(p.X.Tick.Label.Font, vg.Points(10)), Handler: p.X.Tick.Label.Handler}
	w := float64(sty.Width(label)) / float64(dataArea.w)
	h := float64(sty.Height(label)) / float64(dataArea.h)
	x := (xy.X - p.X.Min) / (p.X.Max - p.X.Min)
	if xy.Y >= p.Y.Max {
		return box{x0: x - w, x1: x, y0: 1 - h, y1: 1}
	}
	return box{x0: x - w, x1: x, y0: 0, y1: h}
}

// vline draws a labelled vertical line across the plot area at X.
type vline struct {
	X     float64
	Label string
	Color color.Color
	Dash  bool
	// LabelAt is the label's height as a fraction of the plot area's
	// (0 means 0.8).
	LabelAt float64
}

// Plot implements plot.Plotter.
func (v vline) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	x := trX(v.X)
	if x < c.Min.X || x > c.Max.X {
		return
	}
	ls := draw.LineStyle{Color: v.Color, Width: vg.Points(1.5)}
	if v.Dash {
		ls.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
	}
	c.StrokeLine2(ls, x, c.Min.Y, x, c.Max.Y)
	at := v.LabelAt
	if at == 0 {
		at = 0.8
	}
	sty := v.textStyle(p)
	lx := x + vg.Points(3)
	if lx+sty.Width(v.Label) > c.Max.X {
		// Left of the line, not off the canvas, when the line is near the
		// right edge (a recovery bound at the end of the run).
		sty.XAlign, lx = draw.XRight, x-vg.Points(3)
	}
	c.FillText(sty, vg.Point{X: lx, Y: c.Min.Y + vg.Length(at)*(c.Max.Y-c.Min.Y)}, v.Label)
}

func (v vline) textStyle(p *plot.Plot) draw.TextStyle {
	return draw.TextStyle{Color: v.Color, Font: font.From(p.X.Tick.Label.Font, vg.Points(10)),
		Handler: p.X.Tick.Label.Handler, XAlign: draw.XLeft, YAlign: draw.YCenter}
}

// labelBox is where Plot writes the line's label, in fractions of the data
// area (see dataArea), for placeLegend.
func (v vline) labelBox(p *plot.Plot) box {
	sty := v.textStyle(p)
	w := float64(sty.Width(v.Label)+vg.Points(3)) / float64(dataArea.w)
	h := float64(sty.Height(v.Label)) / float64(dataArea.h)
	at := v.LabelAt
	if at == 0 {
		at = 0.8
	}
	x := (v.X - p.X.Min) / (p.X.Max - p.X.Min)
	b := box{x0: x, x1: x + w, y0: at - h/2, y1: at + h/2}
	if b.x1 > 1 {
		b.x0, b.x1 = x-w, x
	}
	return b
}

// DataRange implements plot.DataRanger, so the line's X is inside the
// axis; the infinite y extent leaves the y axis to the data.
func (v vline) DataRange() (xmin, xmax, ymin, ymax float64) {
	return v.X, v.X, math.Inf(1), math.Inf(-1)
}

// band shades [From, To) across the plot area, labelled at its top.
type band struct {
	From, To float64
	Label    string
}

// Plot implements plot.Plotter.
func (b band) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	x0, x1 := max(trX(b.From), c.Min.X), min(trX(b.To), c.Max.X)
	if x1 <= x0 {
		return
	}
	c.FillPolygon(faultFill, []vg.Point{{X: x0, Y: c.Min.Y}, {X: x1, Y: c.Min.Y}, {X: x1, Y: c.Max.Y}, {X: x0, Y: c.Max.Y}})
	sty := draw.TextStyle{Color: thresholdColor, Font: font.From(p.X.Tick.Label.Font, vg.Points(9)),
		Handler: p.X.Tick.Label.Handler, XAlign: draw.XLeft, YAlign: draw.YBottom}
	c.FillText(sty, vg.Point{X: x0 + vg.Points(3), Y: c.Min.Y + vg.Points(3)}, b.Label)
}

// errXY is a line with asymmetric Y error bars.
type errXY struct {
	plotter.XYs
	lo, hi []float64
}

func (e errXY) YError(i int) (float64, float64) { return e.lo[i], e.hi[i] }

func (o *Outcome) boundaryLine() (vline, bool) {
	p := o.PassPoint()
	if p == nil {
		return vline{}, false
	}
	label := "capacity " + o.valueFormat()(p.Value)
	if b := o.Bound(); b != "" {
		label += " (bound by " + b + ")"
	}
	return vline{X: p.Value, Label: label, Color: boundaryColor}, true
}

// SLOPlots draws one panel per SLO term: the term's metric (mean over the
// replicas, with its one-sided confidence bound as an error bar) against
// the parameter, the threshold as a red dashed line and the capacity as a
// green vertical line.
func (o *Outcome) SLOPlots() ([]*plot.Plot, error) {
	s := o.Search
	var out []*plot.Plot
	for i, t := range s.SLO {
		p := plots.NewPlot(fmt.Sprintf("steady-state SLO term %s against %s", t.String(), s.Param),
			analysis.ParamLabel(s.Param, []string{"1"}), t.Name()+unitLabel(t.unit()))
		scale := 1.0
		if t.unit() == unitFraction {
			scale = 100
		}
		var xy errXY
		var labels []string
		for _, pt := range o.Points {
			if pt.Failed != "" {
				continue // not judged: its runs failed
			}
			ts := pt.Terms[i]
			if math.IsInf(ts.Mean, 0) || math.IsNaN(ts.Mean) {
				continue // nothing succeeded there: no latency to draw
			}
			xy.XYs = append(xy.XYs, plotter.XY{X: pt.Value, Y: ts.Mean * scale})
			xy.lo = append(xy.lo, (ts.Mean-ts.Lower)*scale)
			xy.hi = append(xy.hi, (ts.Upper-ts.Mean)*scale)
		}
		if len(xy.XYs) > 0 {
			line, pts, err := plotter.NewLinePoints(xy.XYs)
			if err != nil {
				return nil, fmt.Errorf("capacity: slo plot: %w", err)
			}
			line.Color, pts.Color = dataColor, dataColor
			bars, err := plotter.NewYErrorBars(xy)
			if err != nil {
				return nil, fmt.Errorf("capacity: slo plot: %w", err)
			}
			bars.Color = dataColor
			p.Add(line, pts, bars)
			labels = append(labels, t.Name()+" (mean, confidence bound)")
			p.Legend.Add(labels[len(labels)-1], line, pts)
		}
		lo, hi := o.Search.withDefaults().Lo, o.Search.withDefaults().Hi
		th, err := plotter.NewLine(plotter.XYs{{X: lo, Y: t.Threshold * scale}, {X: hi, Y: t.Threshold * scale}})
		if err != nil {
			return nil, fmt.Errorf("capacity: slo plot: %w", err)
		}
		th.Color = thresholdColor
		th.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
		p.Add(th)
		labels = append(labels, "threshold "+t.Op.String()+" "+t.Format(t.Threshold))
		p.Legend.Add(labels[len(labels)-1], th)
		setZoom(p, xy.XYs, t.Threshold*scale, t.Upper())
		ob := obstacles{lines: []plotter.XYs{xy.XYs, th.XYs}}
		if b, ok := o.boundaryLine(); ok {
			// Clear of the passing values (low for an upper limit, high
			// for a lower one).
			b.LabelAt = 0.8
			if !t.Upper() {
				b.LabelAt = 0.35
			}
			p.Add(b)
			ob.vx, ob.boxes = append(ob.vx, b.X), append(ob.boxes, b.labelBox(p))
		}
		format := func(v float64) string { return strconv.FormatFloat(v, 'g', 3, 64) + unitSuffix(t.unit()) }
		if c := clipped(p, xy.XYs, format); len(c.XYs) > 0 {
			labels = append(labels, clippedLegend)
			for i, xy := range c.XYs {
				ob.boxes = append(ob.boxes, clippedLabelBox(p, xy, c.Labels[i]))
			}
		}
		if err := markClipped(p, xy.XYs, format); err != nil {
			return nil, err
		}
		placeLegend(p, labels, ob)
		out = append(out, p)
	}
	return out, nil
}

// unitSuffix is the unit written after a plotted value.
func unitSuffix(u unit) string {
	switch u {
	case unitMs:
		return "ms"
	case unitFraction:
		return "%"
	case unitRate:
		return "/s"
	}
	return ""
}

func unitLabel(u unit) string {
	switch u {
	case unitMs:
		return " (ms)"
	case unitFraction:
		return " (%)"
	case unitRate:
		return " (req/s)"
	}
	return ""
}

// UtilizationPlot draws each service's mean utilization against the
// parameter, with the capacity marked.
func (o *Outcome) UtilizationPlot() (*plot.Plot, error) {
	p := plots.NewPlot(fmt.Sprintf("utilization per service against %s (steady state)", o.Search.Param),
		analysis.ParamLabel(o.Search.Param, []string{"1"}), "utilization (%)")
	var names []string
	lines := map[string]plotter.XYs{}
	for _, pt := range o.Points {
		for _, s := range pt.Services {
			if _, ok := lines[s.Name]; !ok {
				names = append(names, s.Name)
			}
			lines[s.Name] = append(lines[s.Name], plotter.XY{X: pt.Value, Y: 100 * s.Utilization})
		}
	}
	if len(names) == 0 {
		return nil, errors.New("capacity: utilization plot: no service figures")
	}
	var ob obstacles
	for i, n := range names {
		ob.lines = append(ob.lines, lines[n])
		line, pts, err := plotter.NewLinePoints(lines[n])
		if err != nil {
			return nil, fmt.Errorf("capacity: utilization plot: %w", err)
		}
		line.Color, pts.Color = plotutil.Color(i), plotutil.Color(i)
		pts.Shape = plotutil.Shape(i)
		p.Add(line, pts)
		p.Legend.Add(n, line, pts)
	}
	p.Y.Min, p.Y.Max = 0, 100/(1-min(0.6, 0.1+0.065*float64(len(names))))
	if b, ok := o.boundaryLine(); ok {
		p.Add(b)
		ob.vx, ob.boxes = append(ob.vx, b.X), append(ob.boxes, b.labelBox(p))
	}
	placeLegend(p, names, ob)
	return p, nil
}

// RecoveryPlot draws goodput over time in a recovery run at the capacity
// (replica 0) and at the point beyond it (the first replica that did not
// recover), with the fault window shaded and the end of the recovery bound
// marked.
func (o *Outcome) RecoveryPlot() (*plot.Plot, error) {
	if !o.HasFaults {
		return nil, ErrNoRecovery
	}
	f := o.valueFormat()
	p := plots.NewPlot("recovery at the boundary: goodput over time, with the faults", "time (s)", "goodput (req/s)")
	p.Add(band{From: o.Trigger.Start.Seconds(), To: o.Trigger.End.Seconds(), Label: "fault: " + o.Trigger.Label})
	bound := vline{X: (o.Trigger.End + o.Search.withDefaults().Detector.RecoveryBound).Seconds(), Label: "recovery bound", Color: thresholdColor, Dash: true}
	p.Add(bound)
	drawn := 0
	var labels []string
	var ob obstacles
	for i, pt := range []*Point{o.PassPoint(), o.FailPoint()} {
		if pt == nil || len(pt.Replicas) == 0 {
			continue
		}
		// Beyond the boundary, show a replica that did not recover, if
		// any: the one that made the verdict.
		rep := &pt.Replicas[0]
		for j := range pt.Replicas {
			if i == 1 && !pt.Replicas[j].Recovered {
				rep = &pt.Replicas[j]
				break
			}
		}
		ser := rep.series
		if ser == nil {
			continue
		}
		per := 1 / ser.Interval.Seconds()
		var xys plotter.XYs
		for j, g := range ser.Goodput {
			st := ser.Start + ser.Interval*time.Duration(j)
			if ser.End > 0 && st+ser.Interval > ser.End {
				break
			}
			xys = append(xys, plotter.XY{X: (st + ser.Interval/2).Seconds(), Y: g * per})
		}
		if len(xys) == 0 {
			continue
		}
		line, err := plotter.NewLine(xys)
		if err != nil {
			return nil, fmt.Errorf("capacity: recovery plot: %w", err)
		}
		line.Color = []color.Color{boundaryColor, thresholdColor}[i]
		line.Width = vg.Points(1.5)
		what := "holds"
		if i == 1 {
			what = "beyond"
		}
		rec := "does not recover"
		if rep.Recovered {
			rec = "recovers"
		}
		p.Add(line)
		labels = append(labels, fmt.Sprintf("%s=%s (%s; replica %d %s, %d of %d recover)", o.Search.Param, f(pt.Value), what, rep.Replica, rec, pt.Recovered, len(pt.Replicas)))
		p.Legend.Add(labels[len(labels)-1], line)
		ob.lines = append(ob.lines, xys)
		drawn++
	}
	if drawn == 0 {
		return nil, errors.New("capacity: recovery plot: no recovery series at the boundary")
	}
	// The axes are final (the lines and the bound set their range): the
	// legend can be placed.
	p.Y.Min = 0
	p.Y.Max *= 1.4
	ob.vx, ob.boxes = append(ob.vx, bound.X), append(ob.boxes, bound.labelBox(p))
	placeLegend(p, labels, ob)
	return p, nil
}

// WritePlots writes the capacity plots as PNG files in dir (created if
// needed), atomically, and returns their paths.
func (o *Outcome) WritePlots(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("capacity: %w", err)
	}
	var files []string
	slo, err := o.SLOPlots()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, PlotSLO+".png")
	if err := writeTiles(path, slo); err != nil {
		return files, err
	}
	files = append(files, path)
	u, err := o.UtilizationPlot()
	if err != nil {
		return files, err
	}
	path = filepath.Join(dir, PlotUtilization+".png")
	if err := writeTiles(path, []*plot.Plot{u}); err != nil {
		return files, err
	}
	files = append(files, path)
	if o.HasFaults {
		r, err := o.RecoveryPlot()
		if err != nil {
			return files, err
		}
		path = filepath.Join(dir, PlotRecovery+".png")
		if err := writeTiles(path, []*plot.Plot{r}); err != nil {
			return files, err
		}
		files = append(files, path)
	}
	return files, nil
}

// writeTiles draws plots stacked vertically into one PNG, 960 pixels wide
// and 400 high per panel, written atomically.
func writeTiles(path string, ps []*plot.Plot) error {
	const w, h = 10 * vg.Inch, 4.2 * vg.Inch
	img := vgimg.NewWith(vgimg.UseWH(w, h*vg.Length(len(ps))), vgimg.UseDPI(96))
	dc := draw.New(img)
	grid := make([][]*plot.Plot, len(ps))
	for i, p := range ps {
		grid[i] = []*plot.Plot{p}
	}
	canvases := plot.Align(grid, draw.Tiles{Rows: len(ps), Cols: 1, PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(8), PadY: vg.Points(10)}, dc)
	for i, p := range ps {
		p.Draw(canvases[i][0])
	}
	return metrics.WriteFileAtomic(path, func(wr io.Writer) error {
		_, err := vgimg.PngCanvas{Canvas: img}.WriteTo(wr)
		return err
	})
}
