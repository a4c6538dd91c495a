package main

import (
	"encoding/json"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/stormsim/stormsim/collapse"
)

// collapseData holds the estimates of `stormsim collapse` that the
// metastable-collapse page reports, one JSON file per load, named by it.
// They take tens of minutes to compute, so they are committed and this
// part only draws them; the page says how to recompute them.
const collapseData = "docs/experiments/data/metastable-collapse"

// collapsePoint is one load's estimate.
type collapsePoint struct {
	rate float64
	est  collapse.Estimate
}

// genCollapse writes the figure and the table of the metastable-collapse page.
func genCollapse(root string, o *output) error {
	files, err := filepath.Glob(filepath.Join(root, collapseData, "*.json"))
	if err != nil {
		return err
	}
	var pts []collapsePoint
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var p collapsePoint
		if p.rate, err = strconv.ParseFloat(strings.TrimSuffix(filepath.Base(f), ".json"), 64); err != nil {
			return fmt.Errorf("%s: the name must be the load, e.g. 640.json", f)
		}
		if err := json.Unmarshal(b, &p.est); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		pts = append(pts, p)
	}
	if len(pts) == 0 {
		return fmt.Errorf("no estimates in %s", collapseData)
	}
	sort.Slice(pts, func(i, j int) bool { return pts[i].rate < pts[j].rate })
	png, err := render(collapseFigure(pts))
	if err != nil {
		return err
	}
	o.file("docs/experiments/img/metastable-collapse.png", png)
	var b strings.Builder
	b.WriteString("| load (req/s) | P(within 10 s) | collapses per day [95 %] | P(within 24 h) [95 %] | mean time to collapse | levels | events |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	for _, p := range pts {
		e := &p.est
		perDay := func(r float64) string { return fmt.Sprintf("%.3g", r*86400) }
		rate := "—"
		if e.RateCI95 != nil {
			rate = fmt.Sprintf("%s [%s, %s]", perDay(e.RatePerS), perDay(e.RateCI95[0]), perDay(e.RateCI95[1]))
		}
		mean := "—"
		if e.MeanTimeS != nil {
			mean = humanSeconds(*e.MeanTimeS)
		}
		fmt.Fprintf(&b, "| %g | %.3g | %s | %.3g [%.3g, %.3g] | %s | %d | %.3g |\n",
			p.rate, e.HorizonProbability, rate, e.Probability, e.CI95[0], e.CI95[1], mean, len(e.Levels), float64(e.Events))
	}
	b.WriteString("\n![collapse against load](img/metastable-collapse.png)\n")
	o.block("docs/experiments/metastable-collapse.md", b.String(), "# metastable-collapse\n\n"+beginMarker+"\n"+endMarker+"\n")
	return nil
}

// humanSeconds writes a duration in seconds in the largest fitting unit.
func humanSeconds(s float64) string {
	switch {
	case s >= 86400:
		return fmt.Sprintf("%.3g days", s/86400)
	case s >= 3600:
		return fmt.Sprintf("%.3g h", s/3600)
	case s >= 60:
		return fmt.Sprintf("%.3g min", s/60)
	}
	return fmt.Sprintf("%.3g s", s)
}

// collapseFigure draws, against the load, the probability of collapse
// within the simulated 10 s and the expected collapses per day, on a log
// axis, with their 95 % intervals: the knee is where they rise by orders
// of magnitude over a few percent of load.
func collapseFigure(pts []collapsePoint) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "metastable-retry-storm without its fault: db queue reaching 500"
	p.X.Label.Text = "offered load (requests/s; the db serves 800/s)"
	p.Y.Label.Text = "log scale"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = decades{}
	p.Legend.Top = true
	p.Legend.Left = true
	var short, daily plotter.XYs
	var bars plotter.XYs
	var lo, hi []float64
	for _, pt := range pts {
		e := &pt.est
		if e.HorizonProbability > 0 {
			short = append(short, plotter.XY{X: pt.rate, Y: e.HorizonProbability})
		}
		if e.RatePerS > 0 && e.RateCI95 != nil {
			r := e.RatePerS * 86400
			daily = append(daily, plotter.XY{X: pt.rate, Y: r})
			bars = append(bars, plotter.XY{X: pt.rate, Y: r})
			lo = append(lo, r-math.Max(e.RateCI95[0]*86400, r*1e-3))
			hi = append(hi, e.RateCI95[1]*86400-r)
		}
	}
	for _, s := range []struct {
		name string
		xys  plotter.XYs
		c    color.RGBA
	}{
		{"P(collapse within 10 s from empty)", short, color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}},
		{"expected collapses per day (95% interval)", daily, color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}},
	} {
		if len(s.xys) == 0 {
			continue
		}
		l, sc, err := plotter.NewLinePoints(s.xys)
		if err != nil {
			return nil, err
		}
		l.Color, sc.Color = s.c, s.c
		l.Width = vg.Points(1.5)
		p.Add(l, sc)
		p.Legend.Add(s.name, l, sc)
	}
	if len(bars) > 0 {
		errs := make(plotter.YErrors, len(bars))
		for i := range errs {
			errs[i].Low, errs[i].High = lo[i], hi[i]
		}
		eb, err := plotter.NewYErrorBars(struct {
			plotter.XYer
			plotter.YErrorer
		}{bars, errs})
		if err != nil {
			return nil, err
		}
		eb.Color = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
		p.Add(eb)
	}
	one := plotter.NewFunction(func(float64) float64 { return 1 })
	one.Dashes = []vg.Length{vg.Points(4), vg.Points(4)}
	one.Color = color.Gray{Y: 0x80}
	p.Add(one)
	p.Legend.Add("once a day", one)
	return p, nil
}

// decades marks each power of ten of a log axis, written as 1e-05.
type decades struct{}

// Ticks returns a labelled tick at each power of ten in [lo, hi].
func (decades) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for k := int(math.Floor(math.Log10(lo))); k <= int(math.Ceil(math.Log10(hi))); k++ {
		v := math.Pow10(k)
		if v >= lo && v <= hi {
			ts = append(ts, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', -1, 64)})
		}
	}
	return ts
}
