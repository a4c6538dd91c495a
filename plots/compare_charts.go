package plots

import (
	"slices"

	"github.com/stormsim/stormsim/charts"
	"github.com/stormsim/stormsim/metrics"
)

// OverlayColumn is one series a comparison overlays, a line per variant:
// Name names its files and chart, Column is what Overlay reads
// ("goodput", "amplification/S", "queue/S", ...), Label is its axis and
// title.
type OverlayColumn struct{ Name, Column, Label string }

// OverlayColumns are the series a comparison of results overlays: goodput;
// each service's amplification and queue (the services of the first of
// order that ran); and the intents still unknown when every variant
// follows its writes after UNKNOWN. compare's static overlays and the
// interactive charts of its report.html are both drawn from this list.
func OverlayColumns(results map[string]*metrics.Result, order []string) []OverlayColumn {
	out := []OverlayColumn{{"goodput", metrics.ColGoodput, "goodput (req/s)"}}
	var first *metrics.Result
	for _, n := range order {
		if first = results[n]; first != nil {
			break
		}
	}
	if first == nil {
		return out
	}
	for _, svc := range first.Summary.Services {
		out = append(out,
			OverlayColumn{"amplification_" + svc.Name, "amplification/" + svc.Name, "attempts at " + svc.Name + " per offered request"},
			OverlayColumn{"queue_" + svc.Name, metrics.Column(metrics.MetricQueue, svc.Name), "queue length at " + svc.Name})
	}
	converging := len(results) > 0 // Overlay needs the column in every variant
	for _, r := range results {
		converging = converging && r.Series != nil && r.Series.Column(metrics.ColUnknownIntents) >= 0
	}
	if converging {
		out = append(out, OverlayColumn{"unknown_intents", metrics.ColUnknownIntents, "intents unknown"})
	}
	return out
}

// compareCharts is what StormCharts.compare draws (charts.js): a chart per
// overlaid column, a line per variant that ran, in its column's colour.
type compareCharts struct {
	Charts   []compareChart   `json:"charts"`
	Variants []compareVariant `json:"variants"`
}

type compareChart struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Unit  string `json:"unit"`
}

type compareVariant struct {
	Name      string  `json:"name"`
	Color     string  `json:"color"`
	StartS    float64 `json:"start_s"`
	IntervalS float64 `json:"interval_s"`
	// Values holds, by chart id, the values Overlay draws (columnValues):
	// null where an interval has none.
	Values map[string][]charts.FiniteNumber `json:"values"`
}

// compareChartsOf returns the interactive charts of c, nil when some
// variant that ran has no time series (its figures stay static) or none
// ran. A column some variant cannot give is left out, as Overlay refuses it.
func compareChartsOf(c *Comparison, colors []string) *compareCharts {
	results := map[string]*metrics.Result{}
	var order []string
	for _, v := range c.Variants {
		if v.NotRun || v.Result == nil {
			continue
		}
		if v.Result.Series == nil || len(v.Result.Series.Rows) == 0 {
			return nil
		}
		results[v.Name] = v.Result
		order = append(order, v.Name)
	}
	if len(order) == 0 {
		return nil
	}
	out := &compareCharts{}
	values := make([]map[string][]charts.FiniteNumber, len(c.Variants))
	for _, col := range OverlayColumns(results, order) {
		all := make([][]charts.FiniteNumber, len(c.Variants))
		ok := true
		for i, v := range c.Variants {
			if v.NotRun || v.Result == nil {
				continue
			}
			ys, err := columnValues(v.Result.Series, col.Column)
			if err != nil {
				ok = false
				break
			}
			all[i] = make([]charts.FiniteNumber, len(ys))
			for j, y := range ys {
				all[i][j] = charts.FiniteNumber(y)
			}
		}
		if !ok {
			continue
		}
		out.Charts = append(out.Charts, compareChart{ID: col.Name, Title: c.Scenario + ": " + col.Label, Unit: col.Label})
		for i, ys := range all {
			if ys == nil {
				continue
			}
			if values[i] == nil {
				values[i] = map[string][]charts.FiniteNumber{}
			}
			values[i][col.Name] = ys
		}
	}
	for i, v := range c.Variants {
		if values[i] == nil {
			continue
		}
		ts := v.Result.Series
		out.Variants = append(out.Variants, compareVariant{Name: v.Name, Color: colors[i],
			StartS: ts.Start.Seconds(), IntervalS: ts.Interval.Seconds(), Values: values[i]})
	}
	return out
}

// charted reports whether a figure named name is drawn by cc's charts.
func (cc *compareCharts) charted(name string) bool {
	return cc != nil && slices.ContainsFunc(cc.Charts, func(c compareChart) bool { return c.ID == name })
}
