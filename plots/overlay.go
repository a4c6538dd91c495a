package plots

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/stormsim/stormsim/metrics"
)

// OverlayOption adjusts an overlay plot.
type OverlayOption func(*overlayConfig)

type overlayConfig struct {
	title, yLabel string
	logY          bool
	order         []string
}

// WithTitle sets the overlay's title (default: the column name).
func WithTitle(t string) OverlayOption { return func(c *overlayConfig) { c.title = t } }

// WithYLabel sets the y axis label, which should carry the unit.
func WithYLabel(l string) OverlayOption { return func(c *overlayConfig) { c.yLabel = l } }

// WithLogY puts the y axis on a log scale (points ≤ 0 are dropped).
func WithLogY() OverlayOption { return func(c *overlayConfig) { c.logY = true } }

// WithOrder fixes the variants' order and their colours, by position in
// names, so that a variant keeps its colour when another has no line;
// variants it does not name follow in name order.
func WithOrder(names ...string) OverlayOption { return func(c *overlayConfig) { c.order = names } }

// Overlay draws one line per variant of the same series column, to compare
// policy variants of a scenario (stormsim compare), and writes
// dir/name.png and dir/name.svg. column is a series column such as
// "queue/orders" or "goodput", or "amplification/S" for attempts/S divided
// by offered. Variants are drawn in name order unless WithOrder says
// otherwise; the fault windows of the first variant are shaded. A variant
// without the column is an error naming it.
func Overlay(dir, name string, results map[string]*metrics.Result, column string, opts ...OverlayOption) ([]string, error) {
	f, err := overlayFigure(name, results, column, opts...)
	if err != nil {
		return nil, err
	}
	return Write(dir, name, f.Plot)
}

// overlayFigure draws Overlay's figure.
func overlayFigure(name string, results map[string]*metrics.Result, column string, opts ...OverlayOption) (*figure, error) {
	cfg := overlayConfig{title: column, yLabel: column}
	for _, o := range opts {
		o(&cfg)
	}
	if len(results) == 0 {
		return nil, fmt.Errorf("plots: overlay %s: no results", name)
	}
	var names []string
	for _, n := range cfg.order {
		if _, ok := results[n]; ok && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	var rest []string
	for n := range results {
		if !slices.Contains(names, n) {
			rest = append(rest, n)
		}
	}
	slices.Sort(rest)
	names = append(names, rest...)

	f := newFigure(cfg.title, "time (s)", cfg.yLabel)
	var span *metrics.Result
	all := make([]plotter.XYs, len(names))
	for i, n := range names {
		r := results[n]
		ts, err := series(r)
		if err != nil {
			return nil, fmt.Errorf("plots: overlay %s: variant %q has no time series", name, n)
		}
		ys, err := columnValues(ts, column)
		if err != nil {
			return nil, fmt.Errorf("plots: overlay %s: variant %q: %w", name, n, err)
		}
		all[i] = timeXYs(ts, ys, func(_ int, y float64) bool { return !cfg.logY || y > 0 })
		if span == nil || len(ts.Rows) > len(span.Series.Rows) {
			span = r
		}
	}
	// Variants share their arrivals (common random numbers), so their
	// lines often coincide for a while: earlier lines are drawn wider, so
	// a later one over them leaves a halo of their colour. A variant
	// identical to an earlier one is also drawn dashed, and its legend
	// says whose line it repeats.
	same := identicalTo(all)
	width := func(i int) vg.Length {
		if len(names) < 2 {
			return vg.Points(2)
		}
		return vg.Points(2 + 1.75*float64(len(names)-1-i)/float64(len(names)-1))
	}
	for i, n := range names {
		ci := len(cfg.order) + i // the colour's index
		if k := slices.Index(cfg.order, n); k >= 0 {
			ci = k
		}
		label := n
		if same[i] >= 0 {
			label = n + " = " + names[same[i]]
		}
		if err := f.line(all[i], label, palette[ci%len(palette)], width(i), ci >= len(palette) || same[i] >= 0); err != nil {
			return nil, err
		}
	}
	f.timeAxis(&metrics.Result{Series: span.Series, Faults: results[names[0]].Faults})
	if f.empty() {
		return nil, fmt.Errorf("plots: overlay %s: %w", name, ErrNoData)
	}
	if cfg.logY {
		logY(f)
	} else {
		f.headroom()
	}
	return f, nil
}

// identicalTo returns, for each line, the index of the first earlier line
// with exactly the same points (NaN gaps included), or -1.
func identicalTo(lines []plotter.XYs) []int {
	out := make([]int, len(lines))
	for i := range lines {
		out[i] = -1
		for j := range i {
			if out[j] < 0 && sameXYs(lines[i], lines[j]) {
				out[i] = j
				break
			}
		}
	}
	return out
}

// sameXYs reports whether a and b are the same points, NaN equal to NaN.
func sameXYs(a, b plotter.XYs) bool {
	if len(a) != len(b) {
		return false
	}
	eq := func(x, y float64) bool { return x == y || (math.IsNaN(x) && math.IsNaN(y)) }
	for i := range a {
		if !eq(a[i].X, b[i].X) || !eq(a[i].Y, b[i].Y) {
			return false
		}
	}
	return true
}

// columnValues returns the values a plot draws for a series column, NaN
// where the interval has no such value: "amplification/S" is attempts/S
// divided by offered (undefined when nothing was offered); "goodput" is
// the interval's successes over the interval's nominal length, so the last,
// short interval of a run is not extrapolated into a spike; a latency
// column (latency_*) has no value in an interval where nothing succeeded.
func columnValues(ts *metrics.TimeSeries, column string) ([]float64, error) {
	if svc, ok := strings.CutPrefix(column, "amplification/"); ok && ts.Column(column) < 0 {
		att, off := ts.Values(metrics.Column(metrics.MetricAttempts, svc)), ts.Values(metrics.ColOffered)
		if att == nil || off == nil {
			return nil, fmt.Errorf("no attempts/%s or offered column", svc)
		}
		out := make([]float64, len(att))
		for i := range att {
			// Nothing offered: the ratio is undefined, not 0.
			out[i] = math.NaN()
			if off[i] > 0 {
				out[i] = att[i] / off[i]
			}
		}
		return out, nil
	}
	succeeded := ts.Values("succeeded")
	if column == "goodput" && succeeded != nil {
		perSec := 1 / ts.Interval.Seconds()
		for i := range succeeded {
			succeeded[i] *= perSec
		}
		return succeeded, nil
	}
	v := ts.Values(column)
	if v == nil {
		return nil, fmt.Errorf("no column %q", column)
	}
	if strings.HasPrefix(column, "latency_") {
		for i, y := range v {
			// Latency is recorded at ≥ 1 µs, so a 0 is an interval without
			// successes written by a series that has no succeeded column.
			if y <= 0 || (succeeded != nil && succeeded[i] == 0) {
				v[i] = math.NaN()
			}
		}
	}
	return v, nil
}
