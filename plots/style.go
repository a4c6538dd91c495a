package plots

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/stormsim/stormsim/metrics"
)

// ErrNoData is returned by a plotter whose input the result does not have
// (no such columns, an empty histogram). WriteAll skips those plots.
var ErrNoData = errors.New("plots: no data for this plot")

// Size of every plot: wide enough for a minute of one-second intervals,
// 960×480 pixels in PNG.
const (
	Width  = 10 * vg.Inch
	Height = 5 * vg.Inch
)

// palette is the Tableau 10 palette: distinct, colour-blind-aware, and
// readable on white.
var palette = []color.NRGBA{
	{0x4e, 0x79, 0xa7, 0xff}, // blue
	{0xf2, 0x8e, 0x2b, 0xff}, // orange
	{0xe1, 0x57, 0x59, 0xff}, // red
	{0x76, 0xb7, 0xb2, 0xff}, // teal
	{0x59, 0xa1, 0x4f, 0xff}, // green
	{0xed, 0xc9, 0x48, 0xff}, // yellow
	{0xb0, 0x7a, 0xa1, 0xff}, // purple
	{0xff, 0x9d, 0xa7, 0xff}, // pink
	{0x9c, 0x75, 0x5f, 0xff}, // brown
	{0xba, 0xb0, 0xac, 0xff}, // grey
}

// Colors assigns each service a colour by its position in the summary (the
// scenario's order), so a service has the same colour in every plot of a
// run. Edges take their callee's colour.
type Colors struct {
	byName map[string]color.Color
	next   int
}

// NewColors returns the colour assignment for r's services.
func NewColors(r *metrics.Result) *Colors {
	c := &Colors{byName: map[string]color.Color{}}
	for _, s := range r.Summary.Services {
		c.Of(s.Name)
	}
	return c
}

// Of returns the colour of a service, an edge "A->B" (B's colour) or any
// other name (the next unused colour, then always that one).
func (c *Colors) Of(name string) color.Color {
	if _, callee, ok := strings.Cut(name, "->"); ok {
		name = callee
	}
	if col, ok := c.byName[name]; ok {
		return col
	}
	col := palette[c.next%len(palette)]
	c.next++
	c.byName[name] = col
	return col
}

// NewPlot returns a plot with the house style: title, axis labels with
// units, sans-serif text, a light grid, legend at the top right. Every
// stormsim figure starts from it, so sweep, capacity and tuning plots
// look like the run plots.
func NewPlot(title, xLabel, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	// Sans-serif throughout, to match the HTML report around the plots.
	for _, f := range []*font.Font{&p.Title.TextStyle.Font, &p.X.Label.TextStyle.Font, &p.Y.Label.TextStyle.Font,
		&p.X.Tick.Label.Font, &p.Y.Tick.Label.Font, &p.Legend.TextStyle.Font} {
		f.Variant = "Sans"
	}
	p.Title.TextStyle.Font.Size = vg.Points(15)
	p.Title.Padding = vg.Points(8)
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	p.X.Label.TextStyle.Font.Size = vg.Points(12)
	p.Y.Label.TextStyle.Font.Size = vg.Points(12)
	p.X.Tick.Label.Font.Size = vg.Points(10)
	p.Y.Tick.Label.Font.Size = vg.Points(10)
	p.X.Tick.Marker = niceTicks{}
	p.Y.Tick.Marker = niceTicks{}
	p.Legend.Top = true
	p.Legend.XOffs = -vg.Points(8)
	p.Legend.YOffs = -vg.Points(2)
	p.Legend.TextStyle.Font.Size = vg.Points(10)
	grid := plotter.NewGrid()
	grid.Vertical.Color = color.Gray{0xe4}
	grid.Horizontal.Color = color.Gray{0xe4}
	p.Add(grid)
	return p
}

// series returns r's series or ErrNoData.
func series(r *metrics.Result) (*metrics.TimeSeries, error) {
	if r == nil || r.Series == nil || len(r.Series.Rows) == 0 || r.Series.Interval <= 0 {
		return nil, ErrNoData
	}
	return r.Series, nil
}

// timeXYs returns the points (t, y) of one series column, t being each
// interval's midpoint in seconds. An interval keep rejects (no requests in
// it, non-positive on a log axis) or whose value is not a number is a gap:
// its y is NaN, and figure.line breaks the line there rather than joining
// its neighbours with a straight segment that would read as a trend.
func timeXYs(ts *metrics.TimeSeries, ys []float64, keep func(i int, y float64) bool) plotter.XYs {
	xys := make(plotter.XYs, 0, len(ys))
	for i, y := range ys {
		if math.IsInf(y, 0) || (keep != nil && !keep(i, y)) {
			y = math.NaN()
		}
		xys = append(xys, plotter.XY{X: midpoint(ts, i), Y: y})
	}
	return xys
}

func midpoint(ts *metrics.TimeSeries, i int) float64 {
	return (ts.Start.Seconds() + (float64(i)+0.5)*ts.Interval.Seconds())
}

// figure is a plot being built: it tracks the data's y range and legend
// entries so the axis can leave room for the legend, and keeps the points
// of every line it drew so tests can check what a plotter shows.
type figure struct {
	*plot.Plot
	ymin, ymax float64
	entries    int
	// lastLine holds the segments of the line added last.
	lastLine []*plotter.Line
	lines    []drawnLine
}

// drawnLine is one legend entry's points as drawn, NaN y marking a gap.
type drawnLine struct {
	name string
	xys  plotter.XYs
}

func newFigure(title, xLabel, yLabel string) *figure {
	return &figure{Plot: NewPlot(title, xLabel, yLabel), ymin: math.Inf(1), ymax: math.Inf(-1)}
}

// line adds a solid (or dashed) line in colour col with a legend entry.
// Points with a NaN y are gaps: the line is drawn as separate segments
// around them, and a point standing alone between gaps as a dot.
func (f *figure) line(xys plotter.XYs, name string, col color.Color, width vg.Length, dashed bool) error {
	segs := segments(xys)
	if len(segs) == 0 {
		return nil
	}
	f.lastLine = f.lastLine[:0:0]
	for _, seg := range segs {
		l, err := plotter.NewLine(seg)
		if err != nil {
			return fmt.Errorf("plots: %s: %w", name, err)
		}
		l.Color = col
		l.Width = width
		if dashed {
			l.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
		}
		f.Add(l)
		f.lastLine = append(f.lastLine, l)
		if len(seg) == 1 {
			dot, err := plotter.NewScatter(seg)
			if err != nil {
				return fmt.Errorf("plots: %s: %w", name, err)
			}
			dot.Color, dot.Shape, dot.Radius = col, draw.CircleGlyph{}, width
			f.Add(dot)
		}
		for _, xy := range seg {
			f.ymin, f.ymax = min(f.ymin, xy.Y), max(f.ymax, xy.Y)
		}
	}
	f.Legend.Add(name, f.lastLine[0])
	f.entries++
	f.lines = append(f.lines, drawnLine{name: name, xys: xys})
	return nil
}

// segments splits xys at its NaN points into the runs drawn as lines.
func segments(xys plotter.XYs) []plotter.XYs {
	var out []plotter.XYs
	start := -1
	for i := 0; i <= len(xys); i++ {
		if i < len(xys) && !math.IsNaN(xys[i].Y) && !math.IsNaN(xys[i].X) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			out = append(out, xys[start:i])
			start = -1
		}
	}
	return out
}

// empty reports whether no line was added.
func (f *figure) empty() bool { return f.entries == 0 }

// timeAxis fixes the x axis to the series' span and shades the faults.
func (f *figure) timeAxis(r *metrics.Result) {
	ts := r.Series
	f.X.Min = ts.Start.Seconds()
	f.X.Max = ts.Start.Seconds() + float64(len(ts.Rows))*ts.Interval.Seconds()
	if len(r.Faults) > 0 {
		f.Add(&faultBands{faults: r.Faults})
	}
}

// headroom raises a linear y axis so the top-right legend does not cover
// the curves: each legend row takes about 6.5% of the height.
func (f *figure) headroom() {
	if f.empty() {
		return
	}
	f.Y.Min = min(0, f.ymin)
	ymax := f.ymax
	if ymax <= f.Y.Min {
		ymax = f.Y.Min + 1
	}
	frac := min(0.6, 0.1+0.065*float64(f.entries))
	f.Y.Max = f.Y.Min + (ymax-f.Y.Min)/(1-frac)
}

// faultBands shades each fault window across the plot area and labels it
// at the top, so every time plot shows when the trouble was.
type faultBands struct {
	faults []metrics.FaultWindow
}

var faultFill = color.NRGBA{0xd6, 0x27, 0x28, 0x26}

// Plot implements plot.Plotter.
func (f *faultBands) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	sty := draw.TextStyle{Color: color.NRGBA{0x9b, 0x1c, 0x1c, 0xff}, Font: font.From(p.X.Tick.Label.Font, vg.Points(9)),
		Handler: p.X.Tick.Label.Handler, XAlign: draw.XLeft, YAlign: draw.YTop}
	for i, w := range f.faults {
		x0 := max(trX(w.At.Seconds()), c.Min.X)
		x1 := min(trX((w.At + w.For).Seconds()), c.Max.X)
		if x1 <= x0 {
			continue
		}
		c.FillPolygon(faultFill, []vg.Point{{X: x0, Y: c.Min.Y}, {X: x1, Y: c.Min.Y}, {X: x1, Y: c.Max.Y}, {X: x0, Y: c.Max.Y}})
		label := w.Label
		if label == "" {
			label = "fault: " + w.Service
		}
		// Stagger labels so adjacent windows stay legible.
		y := c.Max.Y - vg.Points(3) - vg.Points(11)*vg.Length(i%3)
		c.FillText(sty, vg.Point{X: x0 + vg.Points(3), Y: y}, label)
	}
}

// save writes p as dir/name.png and dir/name.svg, atomically, and returns
// the two paths. name may hold a service or variant name, so it is escaped
// (metrics.PathComponent) and never leaves dir.
func save(p *plot.Plot, dir, name string) ([]string, error) {
	var out []string
	for _, ext := range []string{"png", "svg"} {
		wt, err := p.WriterTo(Width, Height, ext)
		if err != nil {
			return out, fmt.Errorf("plots: %s: %w", name, err)
		}
		path := filepath.Join(dir, metrics.PathComponent(name)+"."+ext)
		if err := metrics.WriteFileAtomic(path, func(w io.Writer) error {
			_, err := wt.WriteTo(w)
			return err
		}); err != nil {
			return out, fmt.Errorf("plots: %w", err)
		}
		out = append(out, path)
	}
	return out, nil
}

// drawn returns a built figure's plot.
func drawn(f *figure, err error) (*plot.Plot, error) {
	if err != nil {
		return nil, err
	}
	return f.Plot, nil
}
